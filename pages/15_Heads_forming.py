"""Heads forming: a tiny attention-only model learns induction heads; a replay of its training, step by step, and a
live training on the server; then the same model trained with and without the causal mask."""

import streamlit as st

import ui
from lessons import head_roles as roles
from lessons import heads_forming as hf
from ui import training

ui.sidebar()
rp = training.replay()
steps = rp.steps.tolist()
cfg = rp.config

st.title("🌱 Heads forming")
ui.explain(
    f"The other pages show finished models. Here a model **learns**: a tiny transformer ({cfg.n_layer} "
    f"layers × {cfg.n_head} heads, attention only, no MLP) trained on random strings drawn from {cfg.n_symbols} "
    f"meaningless symbols, in which a run of {cfg.min_run}–{cfg.max_run} symbols appears twice. Inside the second "
    "copy each next symbol can be predicted, but only by finding the earlier copy and reading what came after it. "
    "For a few hundred steps the model learns almost nothing; then, suddenly, the loss drops while "
    "two kinds of head appear together: a **previous-token head** in layer 0 and an **induction head** in layer 1 "
    "(Olsson et al., 2022, call this the *phase change*). The sidebar's model and sentence are not used here."
)
start, run, again = hf.probe_parts(rp)
st.markdown(
    f"Every snapshot is measured on one fixed **probe**: `{start}`, then a run `{run}`, then the run again `{again}`."
)


playing = st.session_state.get("heads_playing", False)
jump = hf.jump_index(rp)


@st.fragment(run_every=training.PLAY_SECONDS if playing else None)
def replay_view() -> None:
    if st.session_state.get("heads_playing") and not training.advance("heads_step", steps):
        st.session_state["heads_playing"] = False
    if st.session_state.get("heads_playing", False) != playing:
        st.rerun()  # start or stop the timer: it is set when the fragment is defined
    c1, c2, c3, c4 = st.columns([4, 1.4, 2.4, 2.4], vertical_alignment="bottom")
    step = c1.select_slider(
        "Training step",
        steps,
        bind="query-params",
        key="heads_step",
        help="Snapshots at log-spaced steps: dense early, sparse late.",
    )
    c2.button(
        "⏸ Pause" if playing else "▶ Play",
        key="heads_play",
        on_click=training.toggle_play,
        args=("heads_playing", "heads_step", steps),
    )
    c3.button(
        "⏭ Jump to the phase change",
        key="heads_jump",
        on_click=training.jump,
        args=("heads_playing", "heads_step", None if jump is None else steps[jump]),
        disabled=jump is None,
        help="Go to the step just before the loss's steep fall; ▶ Play shows the fall within a few seconds.",
    )
    score = c4.selectbox(
        "Score to follow", list(roles.SCORES), format_func=roles.score_title, bind="query-params", key="heads_score"
    )
    i = steps.index(step)
    s = rp.snapshots[i]
    m = st.columns(4)
    m[0].metric(
        "Loss", f"{s.loss:.3f}", help=f"Mean over {cfg.eval_size} fixed sequences; log {cfg.n_symbols} = guessing."
    )
    m[1].metric("Loss on the predictable symbols", f"{s.loss_repeated:.3f}")
    m[2].metric("Best induction score, layer 1", f"{s.scores.induction[1].max():.2f}")
    m[3].metric("Best previous-token score, layer 0", f"{s.scores.previous_token[0].max():.2f}")
    figs = training.replay_figures(i, score, ui.panels_per_row("heads_patterns", cfg.n_head))
    ui.show_figure(figs["loss"], key="heads_loss")
    st.caption(
        f"Grey: each step's own training batch. The random symbols' loss cannot fall below log {cfg.n_symbols} "
        f"= {hf.guess_loss(rp):.2f} (they are random); it rises a little once the model bets on copies."
    )
    st.markdown(hf.phase_sentence(rp))
    ui.show_figure(figs["scores"], key="heads_scores")
    st.caption(
        "Blues: layer 0's heads; oranges: layer 1's. "
        "The dotted line is the threshold at which the score names the head."
    )
    ui.show_figure(figs["patterns"], key="heads_patterns")
    st.caption(
        "Rows: the query (the symbol looking); columns: the key (looked at). Below "
        "the grey line are the queries of the repeated run. An induction head lights up the red dotted stripe, "
        f"{cfg.probe_run - 1} columns left of the main diagonal: each symbol of the second copy looks at the "
        "symbol that followed its earlier copy. A previous-token head draws the line just below the main diagonal."
    )
    st.dataframe(training.replay_table(i), hide_index=True)


replay_view()

st.header("Train it live")
live, me = training.LIVE, training.session_id()
ui.explain(
    "Train the same model from scratch on this server, with the same seed: "
    f"the curves repeat the replay's (induction score ≥ 0.5 in layer 1 at {training.formed_step(rp)}). "
    "One training runs at a time per server, on half of one core, so the other pages stay quick."
)
c1, c2 = st.columns([2, 1], vertical_alignment="center")
training.train_button(c1, "heads", me)
watch = c2.toggle(
    "Watch the live training",
    bind="query-params",
    key="heads_watch",
    help="Follow the server's training as its snapshots arrive.",
)
running = live.running


@st.fragment(run_every=training.LIVE_SECONDS if watch and running else None)
def live_view() -> None:
    if live.running != running:
        st.rerun()  # started or finished: set the timer again
    st.progress(live.progress if live.kind == "heads" else 0.0, text=training.live_status(live, "heads"))
    figs = (
        training.live_figures(
            live.run, live.snapshots, ui.panels_per_row("heads_live_patterns", training.LIVE_CONFIG.n_head)
        )
        if watch
        else None
    )
    for name, fig in (figs or {}).items():
        ui.show_figure(fig, key=f"heads_live_{name}")


live_view()

st.header("Train with and without the mask")
mrp = training.mask_replay()
ui.explain(
    f"The same model trained twice from the same start on the same {mrp.config.steps} batches: once with the causal "
    "mask (the training above), once without it. Without the mask every symbol also sees the symbols after it — the "
    "next one, the one it must predict, among them. The **real task** is the model's use: predicting a symbol that "
    "is not there yet, so its loss is measured with the future hidden (the mask on)."
)
n = hf.mask_losses(mrp)
cells = [
    (f"{what}, {name}", values[run])
    for what, values in (("Training loss", n.train), ("Real task", n.real))
    for run, name in hf.RUN_TITLES.items()
]
for col, (label, value) in zip(st.columns(4), cells, strict=True):
    col.metric(label, f"{value:.3f}", help="Nats per symbol; training: the last batches, each model as it was trained.")
st.caption("Solid: each model's training loss, as it was trained; dotted: the real task; dashed grey: guessing.")
ui.show_figure(training.mask_figure(), key="mask_loss")
st.markdown(hf.mask_sentence(mrp))
st.markdown(hf.prompt_sentence(mrp))
st.dataframe(training.mask_table(), hide_index=True)

c1, c2 = st.columns([2, 1], vertical_alignment="center")
training.train_button(c1, "mask", me)
mask_watch = c2.toggle(
    "Watch the live training", bind="query-params", key="mask_watch", help="Follow both models as they train."
)


@st.fragment(run_every=training.LIVE_SECONDS if mask_watch and running else None)
def mask_live_view() -> None:
    if live.running != running:
        st.rerun()  # started or finished: set the timer again
    st.progress(live.progress if live.kind == "mask" else 0.0, text=training.live_status(live, "mask"))
    fig = training.live_mask_figure(live.run, live.snapshots) if mask_watch else None
    if fig is not None:
        ui.show_figure(fig, key="mask_live_loss")


mask_live_view()

st.header("What each score measures")
ui.explain(
    "Each score reads a head's attention weights α (row i = the query) and averages over the queries i ≥ 1. "
    "The app measures them the same way for every head of every model: the badges on *One head* and *Multi-head*."
)
for name, info in roles.SCORES.items():
    threshold = roles.threshold_of(name)
    rule = (
        f" A head with {info.title.lower()} ≥ {threshold} is labelled **{roles.label_of(name)}**."
        if threshold is not None
        else ""
    )
    st.markdown(f"**{info.title}.** {info.plain}{rule}")
    st.latex(info.latex)
