"""Next-token prediction: logits → softmax with a temperature → top-k / top-p → a drawn
token; generation; the logit lens."""

import numpy as np
import pandas as pd
import streamlit as st

import ui
from figures.prediction import probability_bars
from lessons import sampling
from lessons.words import percent
from transformer.trace import MAX_CHARS, token_limit
from ui import presenter
from ui.caches import next_token as cached

state = ui.sidebar()
lm = ui.get_model(state.model)
vocab, cfg = lm.tokenizer.vocab_labels(), lm.cfg
V, n_ctx = cfg.vocab_size, token_limit(cfg)
read = sampling.reading(cfg, lm.name)  # the page's words for this model
TIMELINE = "next_timeline"  # session_state: (the trace's key, the Generation grown from its sentence)

st.title("🎲 Next-token prediction")
if not cfg.has_lm_head:
    st.info(read.no_head)
    st.stop()
ui.explain(read.intro)
st.latex(
    r"z = \mathrm{N}_{\mathrm{final}}(h_t)\, W_U \in \mathbb{R}^{V}, \qquad "
    r"p_i = \operatorname{softmax}(z / T)_i = \frac{e^{z_i / T}}{\sum_{j=1}^{V} e^{z_j / T}}"
)

key = state.key.untempered  # the trace's key (no weights shown: τ on them changes nothing here); the figures read it
tr = ui.trace_or_stop(key)
labels, T = tr.encoding.labels, len(tr.encoding)
ui.as_trained(state, "The predictions, the generated text and the logit lens")

last_T = st.session_state.get("next_position_T", T)
# a new sentence, and it was on the last token: keep it there
if last_T != T and st.session_state.get("next_position") == last_T - 1:
    st.session_state["next_position"] = T - 1
st.session_state["next_position_T"] = T
c1, c2, c3, c4, c5 = st.columns([2, 2, 2, 2, 1])
help_pos = (
    "Whose vector to read. The last position predicts the token after the sentence; "
    "an earlier one predicts what comes next there, to compare with the token that really follows."
)
pos = c1.selectbox(
    "Position",
    range(T),
    format_func=ui.token_names(labels, last=" (last)"),
    **ui.choice("next_position", range(T), T - 1),
    help=help_pos,
)
help_temperature = "Divides the logits: T < 1 sharpens, T > 1 flattens, 0 = greedy. Not the attention τ."
temperature = c2.slider(
    "Sampling temperature T", 0.0, 3.0, 1.0, 0.05, bind="query-params", key="next_temperature", help=help_temperature
)
help_top_k = "Keep only the k most probable tokens (0 = no limit)."
top_k = c3.slider("Top-k", 0, 100, 0, bind="query-params", key="next_top_k", help=help_top_k)
help_top_p = "Keep the smallest set of most probable tokens adding up to at least p (1 = no limit; at least one)."
top_p = c4.slider("Top-p", 0.0, 1.0, 0.9, 0.01, bind="query-params", key="next_top_p", help=help_top_p)
n_bars = c5.slider(
    "Bars", 5, 30, 12, bind="query-params", key="next_bars", help="How many of the most probable tokens to draw."
)


def probabilities() -> None:
    logits = tr.logits_at(pos)  # (V,)
    dist = sampling.distribution(logits, temperature, top_k, top_p)
    table = sampling.distribution_rows(dist, logits, vocab, n_bars)
    with ui.stacking("next_bars_row", below_px=1100):  # the numbers beside the bars only where both fit
        left, right = st.columns([3, 2])
        with left:
            ui.show_figure(
                probability_bars(
                    table["p"],
                    table["p′"],
                    table["token"],
                    f"After position {pos}: the {n_bars} most probable next tokens of {V:,}",
                ),
                key="next_bars_chart",
            )
        with right:
            m1, m2, m3 = st.columns(3)
            m1.metric("Tokens kept", f"{dist.n_kept:,}", help=f"Of {V:,}: the tokens that survive top-k and top-p.")
            m2.metric(
                "Kept mass",
                percent(dist.kept_mass),
                help="Σ p_i over the kept tokens, before renormalising; each kept p_i is divided by it.",
            )
            m3.metric("Top token", percent(dist.probs[dist.order[0]]), help="The largest p_i at this temperature.")
            st.dataframe(pd.DataFrame(table), hide_index=True, key="next_table", height=240)
            if pos < T - 1:
                st.caption(sampling.actual_next_note(dist, tr.encoding.ids[pos + 1], pos + 1))
    k_tex = r"\text{top-}k:\ S_k = \text{the } k \text{ largest } p_i"
    p_tex = r"\text{top-}p:\ S_p = \text{the smallest set of the largest } p_i \text{ with} \sum_{i \in S_p} p_i \ge p"
    st.latex(rf"\begin{{gathered}}{k_tex}, \\ {p_tex}\end{{gathered}}")  # the filters behind p′ in the chart
    st.latex(
        r"S = S_k \cap S_p, \qquad p'_i = \frac{p_i}{\sum_{j \in S} p_j} \text{ for } i \in S, "
        r"\quad p'_i = 0 \text{ otherwise}"
    )
    if temperature < sampling.GREEDY_BELOW:
        st.info(
            "T = 0 is **greedy** decoding: softmax(z / T) "
            "tends to all probability on the largest logit, so the top token is always chosen."
        )


def generate() -> None:
    ui.explain(
        "Each new token is drawn from the filtered probabilities p′: "
        "a random number u between 0 and 1 walks down the kept tokens (most probable first) "
        "until their running total passes u. Then the token is appended and the model runs again on the longer text. "
        "The random numbers come from the **seed**: the same seed and settings always give the same tokens. "
        "Generation never changes the sidebar sentence unless you press *Use this text*."
    )
    saved = st.session_state.get(TIMELINE)
    gen: sampling.Generation | None = saved[1] if saved and saved[0] == key else None
    presenting = presenter.on()
    if presenting:  # one row: N, the step and the buttons that generate; the seed and the reset under the chart
        n_box, step_box, one_box, many_box = st.columns([3, 3, 2, 2], vertical_alignment="bottom")
        seed_box = reset_box = ui.after_figures("next_seed")
    else:
        seed_box, n_box = st.columns([1, 3])
        one_box = many_box = reset_box = st.container(horizontal=True)  # wraps onto a second row where needed
        step_box = st
    help_seed = "Picks the random numbers u. Same seed, settings and text → same tokens."
    seed = int(seed_box.number_input("Seed", 0, 1_000_000, 0, 1, bind="query-params", key="next_seed", help=help_seed))
    n_new = n_box.slider(
        "N tokens", 1, 50, 10, bind="query-params", key="next_n", help="How many tokens the second button generates."
    )
    if n_request := st.session_state.pop("next_request", 0):
        progress = st.progress(0.0, text="Generating…")
        shown = lambda done, total, _: progress.progress(done / total, text=f"Token {done} of {total}")  # noqa: E731
        gen = sampling.generate(
            lm.model,
            lm.tokenizer,
            state.sentence,
            n_request,
            temperature,
            top_k,
            top_p,
            seed,
            shown,
            previous=gen.steps if gen else (),
            interventions=tr.interventions,
        )
        st.session_state[TIMELINE], st.session_state["next_step"] = (key, gen), len(gen.steps)
    # a pressed button asks the next run to generate: the buttons below then see the result
    full, update = gen.at_context if gen else T >= n_ctx, st.session_state.update
    one_box.button(
        "Generate one token",
        key="next_one",
        on_click=update,
        args=({"next_request": 1},),
        disabled=full,
        help="Draw one token with the settings above and append it.",
    )
    many_box.button(
        f"Generate {n_new} tokens",
        key="next_many",
        on_click=update,
        args=({"next_request": n_new},),
        disabled=full,
        help="Draw N tokens, one after the other.",
    )
    reset_box.button(
        "Reset to the sidebar sentence",
        key="next_reset",
        on_click=st.session_state.pop,
        args=(TIMELINE, None),
        disabled=gen is None,
        help="Forget the generated tokens.",
    )
    if full:
        st.info(
            f"The text fills the model's context of {n_ctx} tokens: no further token fits. "
            "Step back and continue from an earlier step, or shorten the sentence."
        )

    if gen is not None and gen.steps:
        n = len(gen.steps)
        st.session_state["next_step"] = min(st.session_state.get("next_step", n), n)
        k = step_box.slider(
            "Step",
            0,
            n,
            bind="query-params",
            key="next_step",
            help="Step back through the generation: 0 = the sidebar sentence, k = after k generated tokens.",
        )
        with ui.after_figures("next_text"):
            st.caption(f"The text after {k} of {n} generated tokens:")
            st.code(gen.text_at(k), language=None, wrap_lines=True)
            cut, use = {TIMELINE: (key, gen.cut(k))}, {"atlas_sentence": gen.text_at(k)[:MAX_CHARS]}
            with st.container(horizontal=True):
                st.button(
                    f"Continue from step {k} (drop the later steps)",
                    key="next_cut",
                    on_click=update,
                    args=(cut,),
                    disabled=k == n,
                    help="Forget the later steps; the buttons above continue from here.",
                )
                st.button(
                    "Use this text as the sidebar sentence",
                    key="next_use",
                    on_click=update,
                    args=(use,),
                    help="Every page then reads this text; the timeline starts again from it.",
                )
        if presenting:
            step_bars(gen, k)
            with ui.after_figures("next_timeline"):
                timeline(gen)
            return
        with ui.stacking("next_step_row", below_px=1100):  # the step's bars beside the timeline only where they fit
            left, right = st.columns([3, 2])
            with left:
                timeline(gen)
            with right:
                step_bars(gen, k)


def timeline(gen: sampling.Generation) -> None:
    """Every generated token so far, a row per step."""
    rows = sampling.timeline_rows(gen)
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="next_timeline_table", height=260)


def step_bars(gen: sampling.Generation, k: int) -> None:
    """Step k's top candidates, p and p′, and the token drawn."""
    if k == 0:
        st.caption("Step 0 is the sidebar sentence itself: move the slider to see a step's candidates.")
        return
    s = gen.steps[k - 1]
    fig = probability_bars(
        np.array([c.prob for c in s.top]),
        np.array([c.filtered for c in s.top]),
        [c.label for c in s.top],
        f"Step {k}: the top candidates; drawn: {s.label}",
    )
    ui.show_figure(fig, key="next_step_bars")


def lens() -> None:
    ui.explain(read.lens)
    st.latex(
        r"z^{(\ell)} = \mathrm{N}_{\mathrm{final}}\big(x^{(\ell)}_t\big)\, W_U, \qquad "
        r"p^{(\ell)} = \operatorname{softmax}\big(z^{(\ell)}\big), \qquad \ell = \text{embedding}, 0, \dots, L-1"
    )
    lens_fig, window = cached.lens_figure(key, pos)
    ui.show_figure(lens_fig, key="next_lens")
    if len(window) < T:
        st.caption(
            f"The text has {T} tokens; to stay fast the lens shows {len(window)}, "
            f"positions {window.start}–{window.stop - 1}, ending at the chosen position (pick another to move it)."
        )
    st.markdown(f"**Position {pos}, every stage:** the most probable next tokens and their probabilities.")
    help_n_lens = "How many of the most probable tokens to list for each stage."
    n_lens = st.slider("Tokens per stage", 1, 10, 5, bind="query-params", key="next_lens_k", help=help_n_lens)
    ranks = [f"#{r + 1}" for r in range(n_lens)]
    table = pd.DataFrame.from_dict(cached.lens_table(key, pos, n_lens), orient="index", columns=ranks)
    st.dataframe(table, key="next_lens_table")


PARTS = {"1 · From logits to probabilities": probabilities, "2 · Generate text": generate, "3 · The logit lens": lens}
ui.lazy_tabs(PARTS, "next_part")  # only the open part runs: the lens unembeds every layer's stream (~0.3 s for SmolLM2)
