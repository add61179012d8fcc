"""Multi-head attention: every head of a layer side by side, the whole model at a glance,
concat·W_O, and switching heads off."""

import streamlit as st

import ui
from figures import multihead as fm
from lessons import head_roles, heads
from lessons.words import noun
from ui import pairs, presenter
from ui.caches import heads as cached

state = ui.sidebar()
L, H = state.layer, state.head
cfg = ui.get_model(state.model).cfg
causal, n_layer, nh = cfg.causal, cfg.n_layer, cfg.n_head
read = heads.reading(cfg, L, ui.controls_place())  # the page's words for this model

st.title("🐙 Multi-head attention")
ui.explain(read.intro)
st.latex(read.formula)

tr = ui.trace_or_stop(state.key)
labels, T = tr.encoding.labels, len(tr.encoding)
sinks = heads.sink_columns(tr.encoding, cfg)
hide = sinks if st.checkbox(read.sink_label, bind="query-params", key="multihead_sink", help=read.sink_help) else ()
ui.explain(read.sink_note)
w = tr[f"blocks.{L}.attn.hook_pattern"]  # (nh, T, T)
if hide:
    st.caption(heads.hidden_note(read, w[H, -1], hide, L, H))

every_head, side = heads.all_heads(n_layer, nh), heads.head_name(L, H)
if (
    st.session_state.get("multihead_side", side) != side
    or st.session_state.get("multihead_open", side) not in every_head
):
    st.session_state["multihead_open"] = side  # the sidebar moved (or the model changed): open the sidebar's head
st.session_state["multihead_side"] = side
# another model may have fewer heads
st.session_state["multihead_ablate"] = [n for n in st.session_state.get("multihead_ablate", []) if n in every_head]
key = state.key  # the trace's key: the cached figures read the trace by it


def layer_heads() -> None:
    fig, zmax = cached.heads_figure(key, L, hide, ui.panels_per_row("multihead_heads", nh))
    scale = (
        f"All {nh} maps use the same colour scale, from 0 to {zmax:.3f} (the largest weight shown), "
        "so a darker cell means more weight in any of them."
    )
    ui.explain(
        f"Each map is one head: row i = the token looking (query), column j = the token looked at (key). {scale}"
    )
    ui.show_figure(fig, key="multihead_heads")
    if T > 1:
        st.caption(heads.sink_share_note(read, w, sinks, causal))


def averages() -> None:
    ui.explain(
        "Averaging the maps gives a rough summary of where the model looks. "
        "**These are averages, not heads**: the model never uses them, and averaging blurs heads that look apart."
    )
    st.latex(
        r"\bar\alpha^{(\ell)} = \frac{1}{h}\sum_{h'} \alpha^{(\ell, h')}, "
        r"\qquad \bar\alpha = \frac{1}{L\,h}\sum_{\ell, h'} \alpha^{(\ell, h')}"
    )
    means = cached.averages_figure(key, L, hide, ui.panels_per_row("multihead_means", 2))
    ui.show_figure(means, key="multihead_means")


def every_head_part() -> None:
    help_open = "Which head to show large, with its line view (red box below)."
    OL, OH = heads.parse_head(
        st.selectbox(
            "Open layer L, head H",
            every_head,
            format_func=heads.head_title,
            **ui.choice("multihead_open", every_head, side),
            help=help_open,
        )
    )
    # a projector: a model deeper than wide, a column per layer (fitted to the first screen, a row per layer left
    # SmolLM2's thumbnails 10 px)
    across = presenter.on() and n_layer > nh
    short = across or ui.drawn_narrow("multihead_overview")  # there and on a phone two badges do not fit a thumbnail
    cached.head_scores(state.model)  # measured once per model, with a progress bar, before the figure reads them
    fig, block, n = cached.overview_figure(key, (OL, OH), hide, short, across)
    st.markdown(heads.overview_note(block, n, T, causal, across) + (head_roles.MORE_NOTE if short else ""))
    ui.show_figure(fig, key="multihead_overview")
    ui.head_role(state.model, OL, OH)
    c1, c2 = ui.stacking("multihead_open_row", ui.SIDE_BY_SIDE_PX).columns(2)
    threshold = c2.slider(
        "Hide lines below weight",
        0.01,
        1.0,
        step=0.01,
        **ui.kept("multihead_threshold", 0.1),
        help="Only (query, key) pairs with at least this much weight get a line.",
    )
    help_token = (
        "Keep only the lines of one token: the keys it looks at and the queries that look at it. "
        "Or click a token's dot in a line view."
    )
    token = c2.selectbox(
        "Lines of token",
        [-1, *range(T)],
        format_func=ui.token_names(labels, every="every token"),
        **ui.choice("multihead_line_token", range(-1, T), -1),
        help=help_token,
    )
    big, lines, n_lines = cached.opened_figures(key, (OL, OH), hide, read.sink, threshold, token)
    with c1:
        ui.show_figure(big, key="multihead_open_map")
    with c2:
        ui.show_figure(
            lines, key="multihead_lines", on_click=ui.token_clicks("multihead_lines", "multihead_line_token")
        )
        step = f"rounded to steps of {fm.OPACITY_STEP} (at least {fm.OPACITY_STEP}, so faint lines stay visible)"
        dot = "the dot in its middle has the exact weight as its opacity and in its hover"
        st.caption(
            f"{n_lines} {noun(n_lines, 'line')}. Left: the token looking (query); right: "
            f"the token looked at (key). A line's opacity is its weight, {step}; {dot}."
        )
    clicks = (
        "Point at a token's dot at either end to light up its lines; click it to keep only its lines, and empty "
        "space for every token. Click a head in the legend to see it alone; click it again to see every head."
    )
    ui.explain(f"**Every head of layer {OL} at once**, a colour each, with the same threshold and token. {clicks}")
    layer_lines = cached.layer_lines_figure(key, OL, hide, threshold, token)
    ui.show_figure(
        layer_lines,
        key="multihead_layer_lines",
        on_click=ui.token_clicks("multihead_layer_lines", "multihead_line_token"),
    )


def concat_wo() -> None:
    st.markdown(heads.concat_note(cfg, L, T))
    st.latex(
        rf"\mathrm{{out}}_i = [z_{{i,0}}\,;\dots;\,z_{{i,h-1}}]\,W_O{read.b_O} "
        rf"= \sum_{{h'}} z_{{i,h'}}\,W_O^{{(h')}}{read.b_O}"
    )
    t = st.selectbox(
        "Token",
        range(T),
        format_func=ui.token_names(labels),
        **ui.choice("multihead_token", range(T), T - 1),
        help="Whose vectors to follow through the concatenation and W_O.",
    )
    concat_fig, wo_fig, out_fig, error = cached.concat_figures(key.untempered, L, t)  # τ on the weights: no change
    ui.show_figure(concat_fig, key="multihead_concat")
    ui.show_figure(out_fig, key="multihead_out")
    st.caption(
        f"Recomputed here: concat·W_O{read.b_O} differs from the model's "
        f"attention output for token {t} by at most {error:.1e} (float32 rounding)."
    )
    rows, cols = cfg.n_head * cfg.d_head, cfg.d_model
    help_wo = (
        "W_O's rows in blocks, one block per head. Every one of its numbers goes to your browser again at each move "
        "(1.8 MB for SmolLM2: heavy on a class's Wi-Fi), so it is drawn on request."
    )
    if st.toggle(f"Show W_O itself ({rows:,} × {cols:,} weights)", **ui.kept("multihead_show_wo", False), help=help_wo):
        ui.show_figure(wo_fig, key="multihead_wo")
    ui.as_trained(state, "The heads' outputs z and the attention output")


def switch_off() -> None:
    ui.explain(read.ablation)
    with ui.after_figures("multihead_formula"):  # presenter view: under the chart, which then fits on the screen
        if read.encoder_note:
            st.markdown(read.encoder_note)
        st.latex(read.ablation_latex)
    scores = cached.head_scores(state.model)
    demos = st.container(horizontal=True)  # the one-click demos and their random control, in a row where they fit
    for label, short in head_roles.DEMOS.items():
        names = head_roles.labelled(scores, label)
        demos.button(
            f"{short.capitalize()} heads off ({len(names)})",
            key=f"multihead_demo_{short}",
            disabled=not names,
            on_click=st.session_state.update,
            args=({"multihead_ablate": names},),
            help=f"Every head labelled {label} (part 3's badges), and no other.",
        )
    # presenter view: the box and the slider under the chart (the buttons above choose the heads in one click)
    c1, c2 = ui.after_figures("multihead_heads").columns([3, 1])
    help_heads = (
        "Any heads of any layers, written layer.head: 0.2 = layer 0, head 2. "
        "Their outputs are set to 0 in a new forward pass."
    )
    chosen = c1.multiselect(
        "Heads to switch off (layer.head)", every_head, bind="query-params", key="multihead_ablate", help=help_heads
    )
    help_k = "How many of the most likely next tokens to list (before, and after switching off)."
    k = c2.slider("Top tokens", 3, 20, **ui.kept("multihead_topk", 8), help=help_k) if cfg.has_lm_head else 0
    ablate = tuple(sorted(heads.parse_head(n) for n in chosen))
    control = heads.random_heads(n_layer, nh, len(ablate), key.text, ablate)  # seeded by the text
    demos.button(
        f"As many random heads off ({len(control)})",
        key="multihead_demo_random",
        disabled=not control,
        on_click=st.session_state.update,
        args=({"multihead_ablate": [heads.head_name(*h) for h in control]},),
        help="The control: as many heads as are switched off now, others drawn at random (the same for the same text).",
    )
    fig, table, effect = cached.ablation(key.untempered, ablate, k)
    ui.show_figure(fig, key="multihead_ablation")
    kind, message = heads.ablation_verdict(cfg, chosen, effect, T)  # a result: shown in presenter view too
    getattr(st, kind)(message)
    if chosen and control:  # the same number of other heads, the control every result needs
        control_effect = cached.ablation(key.untempered, control, k)[2]
        names = heads.head_list([heads.head_name(*h) for h in control])
        st.markdown(f"{heads.control_verdict(cfg, effect, control_effect, len(control))} Random heads: {names}.")
    ui.as_trained(state, "Both runs, with all heads and with heads switched off")
    if table:
        st.dataframe(table, hide_index=True)
    st.caption(read.caveat)


PARTS = {
    "1 · The heads of a layer": layer_heads, "2 · Averages (not heads)": averages,
    "3 · Every head of the model": every_head_part, "4 · Concat and W_O": concat_wo,
}
# only the open part runs and is drawn; part 5 runs the model again with heads off
ui.lazy_tabs({**PARTS, "5 · Switch heads off": switch_off}, "multihead_part")
pairs.compare(key, st.session_state.get("multihead_token", T - 1), L, H)  # a second sentence, a word changed
