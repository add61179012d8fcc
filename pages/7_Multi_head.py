"""Multi-head attention: every head of a layer side by side, the whole model at a glance, concat·W_O, and switching heads off."""

import numpy as np
import streamlit as st

import ui
from figures import multihead as fm
from lessons import heads

st.set_page_config(page_title="Multi-head attention", page_icon="🐙", layout="wide")
state = ui.sidebar()
L, H = state.layer, state.head
lm = ui.get_model(state.model)
n_layer, nh, hs, d = lm.cfg.n_layer, lm.cfg.n_head, lm.cfg.d_head, lm.cfg.d_model
THUMB = 32  # overview thumbnails are at most THUMB × THUMB cells

st.title("🐙 Multi-head attention")
st.markdown(
    f"One head can follow one kind of relation at a time. So every layer runs **{nh} heads** side by side, "
    f"each with its own W_Q, W_K, W_V (d_head = d_model / h = {d} / {nh} = {hs}). Each head looks at the sentence "
    "its own way; their outputs are put side by side (concatenated) and one matrix **W_O** mixes them back "
    f"into a {d}-dimensional vector per token. The tabs below show the heads of **layer {L}** (sidebar), the whole model "
    "at a glance, the W_O step with its real numbers, and what happens when heads are switched off."
)
st.latex(
    r"\mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_0,\dots,\mathrm{head}_{h-1})\,W_O + b_O,"
    r"\qquad \mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}\,\tau} + M\right) V_h"
)

tr = ui.trace_or_stop(state)
labels = tr.encoding.labels
T = len(labels)

hide = st.checkbox(
    "Hide the first-token column (attention sink)",
    key="multihead_sink",
    help="Leaves the first key's column blank in every map and line view on this page, and stretches the colour scale over the remaining weights. The weights are not renormalised.",
)
st.markdown(
    "**Attention sink.** Every row of weights must add up to 1, even when a head finds nothing useful to look at. "
    "Many trained heads then park most of their weight on the very first token, whatever it is: it acts like a "
    "“nothing here” slot whose value adds little. That column can hide everything else, so you can hide it. "
    "Hiding is only a display choice: the other weights keep their real values (a row then sums to 1 − α_i0; "
    "nothing is renormalised), and the colour scale is stretched to the largest weight still shown."
)

w = tr[f"blocks.{L}.attn.hook_pattern"]  # (nh, T, T)
if hide:
    st.caption(
        f"First-token column hidden, weights not renormalised: in layer {L}, head {H}, the last row's weights still shown add up to "
        f"{w[H, -1, 1:].sum():.3f}, not 1 (the hidden {w[H, -1, 0]:.3f} went to the first token)."
    )

vis = heads.visible_keys(tr, L)  # (nh, T, T)
every_head = heads.all_heads(n_layer, nh)  # "L.H"
side = heads.head_name(L, H)
# The parts' own controls keep their values while their tab is closed.
if st.session_state.get("multihead_side") != side or st.session_state.get("multihead_open") not in every_head:
    st.session_state["multihead_side"] = side  # the sidebar moved: open its head
    st.session_state["multihead_open"] = side
ui.keep("multihead_open", side)
ui.keep("multihead_threshold", 0.1)
ui.keep_choice("multihead_line_token", range(-1, T), -1)
ui.keep_choice("multihead_token", range(T), T - 1)
ui.keep("multihead_topk", 8)
st.session_state["multihead_ablate"] = [n for n in st.session_state.get("multihead_ablate", []) if n in every_head]  # another model may have fewer heads


def layer_heads() -> None:
    zmax = heads.shown_max(w, vis, hide)
    share = heads.first_token_share(w)  # (nh,)
    st.markdown(
        f"Each map is one head: row i = the token looking (query), column j = the token looked at (key). All {nh} maps use the same colour scale, "
        f"from 0 to {zmax:.3f} (the largest weight shown), so a darker cell means more weight in any of them."
    )
    titles = [f"Layer {L}, head {h}" for h in range(nh)]
    ui.show_figure(fm.weight_panels(w, labels, vis, titles, f"The heads of layer {L}, one colour scale 0 … {zmax:.3f}", zmax=zmax, hide_first=hide), key="multihead_heads")
    if T > 1:
        st.caption("Weight on the first token, averaged over rows 1…T−1: " + ", ".join(f"head {h} {share[h]:.1%}" for h in range(nh)) + ".")


def averages() -> None:
    st.markdown(
        "Averaging the maps gives a rough summary of where the model looks. **These are averages, not heads**: the model never uses them, and averaging blurs heads that look at different things."
    )
    st.latex(r"\bar\alpha^{(\ell)} = \frac{1}{h}\sum_{h'} \alpha^{(\ell, h')}, \qquad \bar\alpha = \frac{1}{L\,h}\sum_{\ell, h'} \alpha^{(\ell, h')}")
    any_vis = vis.any(axis=0, keepdims=True)  # (1, T, T) the mask is the same for every head
    means = np.stack([heads.mean_pattern(tr, L), heads.mean_pattern(tr, None)])  # (2, T, T)
    avg_titles = [f"AVERAGE over the {nh} heads of layer {L}", f"AVERAGE over all {n_layer * nh} heads ({n_layer} layers × {nh} heads)"]
    top = heads.shown_max(means, np.broadcast_to(any_vis, means.shape), hide)
    ui.show_figure(
        fm.weight_panels(means, labels, any_vis, avg_titles, f"Averages (not heads), one colour scale 0 … {top:.3f}", zmax=top, hide_first=hide, value_name="mean weight"), key="multihead_means"
    )


def every_head_part() -> None:
    every_w = np.stack([tr[f"blocks.{layer}.attn.hook_pattern"] for layer in range(n_layer)])  # (n_layer, nh, T, T)
    every_vis = np.stack([heads.visible_keys(tr, layer) for layer in range(n_layer)])  # (n_layer, nh, T, T)
    if hide:
        every_vis[..., 0] = False
    thumbs, block = heads.pool(np.where(every_vis, every_w, np.nan), THUMB)  # (n_layer, nh, n, n)
    opened = st.selectbox(
        "Open layer L, head H",
        every_head,
        format_func=lambda n: "layer {}, head {}".format(*heads.parse_head(n)),
        key="multihead_open",
        help="Which head to show large, with its line view (red box in the overview).",
    )
    OL, OH = heads.parse_head(opened)
    pooled = f"each cell is the mean of a {block} × {block} block of weights (future cells left out), so {T} tokens fit in {thumbs.shape[-1]} cells" if block > 1 else "every weight is shown"
    st.markdown(f"Rows are layers, columns heads: one small map per head ({pooled}). The head chosen above (red box) is opened large below.")
    ui.show_figure(fm.head_overview(thumbs, (OL, OH), f"All {n_layer * nh} heads", zmax=float(np.nanmax(thumbs, initial=0.0)) or 1.0), key="multihead_overview")

    c1, c2 = st.columns(2)
    w_open, vis_open = tr[f"blocks.{OL}.attn.hook_pattern"][OH], heads.visible_keys(tr, OL)[OH]  # (T, T) each
    with c1:
        top = heads.shown_max(w_open, vis_open, hide)
        ui.show_figure(fm.weights_map(w_open, labels, vis_open, f"Opened: layer {OL}, head {OH}", zmax=top, hide_first=hide, height=520), key="multihead_open_map")
    with c2:
        threshold = st.slider("Hide lines below weight", 0.01, 1.0, step=0.01, key="multihead_threshold", help="Only (query, key) pairs with at least this much weight get a line.")
        token = st.selectbox(
            "Lines of token",
            [-1, *range(T)],
            format_func=lambda j: "every token" if j < 0 else f"{j}: {labels[j]}",
            key="multihead_line_token",
            help="Keep only the lines of one token: the keys it looks at and the queries that look at it.",
        )
        shown_vis = vis_open.copy()
        if hide:
            shown_vis[:, 0] = False
        i, j, lw = heads.line_pairs(w_open, shown_vis, threshold, None if token < 0 else token)
        ui.show_figure(fm.token_lines(i, j, lw, labels, f"Lines, layer {OL}, head {OH}"), key="multihead_lines")
        st.caption(
            f"{len(lw)} line(s). Left: the token looking (query); right: the token looked at (key). "
            f"A line's opacity is its weight, rounded to steps of {fm.OPACITY_STEP} (at least {fm.OPACITY_STEP}, so faint lines stay visible); "
            "the dot in its middle has the exact weight as its opacity and in its hover."
        )


def concat_wo() -> None:
    concat, result = tr[f"blocks.{L}.attn.hook_concat"], tr[f"blocks.{L}.attn.hook_result"]  # (T, nh·hs), (T, nh, d)
    out = tr[f"blocks.{L}.hook_attn_out"]  # (T, d)
    W_O, b_O = heads.out_projection(lm.model, L)  # (nh·hs, d), (d,)
    st.markdown(
        f"Layer {L}: `hook_z` **({T}, {nh}, {hs})**, one {hs}-vector per token and head → side by side, `hook_concat` **({T}, {nh * hs})** "
        f"→ times W_O **({nh * hs}, {d})** plus b_O **({d},)** → `hook_attn_out` **({T}, {d})**, which is added to the residual stream. "
        "Row by row, W_O's first block of rows reads head 0, the next head 1, and so on: so the output is also the sum of each head's share z_h·W_O[h]."
    )
    st.latex(r"\mathrm{out}_i = [z_{i,0}\,;\dots;\,z_{i,h-1}]\,W_O + b_O = \sum_{h'} z_{i,h'}\,W_O^{(h')} + b_O")
    t = st.selectbox("Token", range(T), format_func=lambda j: f"{j}: {labels[j]}", key="multihead_token", help="Whose vectors to follow through the concatenation and W_O.")
    head_names = [f"head {h}" for h in range(nh)]
    concat_title = f"z of each head for token {t}, ({nh} × {hs}), side by side = concat, (1, {nh * hs})"
    ui.show_figure(fm.vector_rows(concat[t][None], concat_title, row_blocks=[f"token {t}"], col_blocks=[f"z, {n}" for n in head_names], value_name="concat", height=170), key="multihead_concat")
    c1, c2 = st.columns(2)
    with c1:
        ui.show_figure(
            fm.vector_rows(W_O, f"W_O of layer {L}, ({nh * hs}, {d})", row_blocks=[f"rows of {n}" for n in head_names], x_title="output dimension", value_name="W_O", height=460), key="multihead_wo"
        )
    with c2:
        shares = np.vstack([result[t], b_O[None], out[t][None]])  # (nh + 2, d)
        parts = [*(f"{n}: z·W_O[{h}]" for h, n in enumerate(head_names)), "b_O", "sum = attn_out"]
        ui.show_figure(fm.vector_rows(shares, f"attn_out for token {t} = concat·W_O + b_O, (1, {d})", row_blocks=parts, x_title="output dimension", height=460), key="multihead_out")
    check = np.abs(concat[t].astype(np.float64) @ W_O + b_O - out[t]).max()
    st.caption(f"Recomputed here: concat·W_O + b_O differs from the model's attn_out for token {t} by at most {check:.1e} (float32 rounding).")


def switch_off() -> None:
    st.markdown(
        "Ablation: set a head's output z to zero and run the whole model again. Later layers now get a different input, and the "
        "prediction of the next token (after the last token) may change. If it hardly moves, the model did not need those heads for this text."
    )
    st.latex(r"z_{i,h} \leftarrow 0 \;\text{ for every switched-off head } h, \qquad p = \mathrm{softmax}(\mathrm{logits}_{T-1})")
    c1, c2 = st.columns([3, 1])
    chosen = c1.multiselect(
        "Heads to switch off (layer.head)",
        every_head,
        key="multihead_ablate",
        help="Any heads of any layers, written layer.head: 0.2 = layer 0, head 2. Their outputs are set to 0 in a new forward pass.",
    )
    k = c2.slider("Top tokens", 3, 20, key="multihead_topk", help="How many of the most likely next tokens to list (before, and after switching off).")
    ablate = tuple(sorted(heads.parse_head(n) for n in chosen))
    after = ui.trace_or_stop(state, ablate=ablate) if ablate else tr
    change = heads.next_token_change(tr["logits"][-1], after["logits"][-1], k)
    vocab = lm.tokenizer.vocab_labels()
    tokens = [vocab[i] for i in change.ids]
    ui.show_figure(fm.ablation_bars(tokens, change.before, change.after, f"Next-token probabilities, {len(ablate)} head(s) switched off"), key="multihead_ablation")
    if ablate:
        st.markdown(f"Switched off: {', '.join(chosen)}. **{change.moved:.1%}** of the probability moved (½ Σ |p − p′| over all {len(vocab):,} tokens).")
    else:
        st.info("No head is switched off: both bars are the model as trained. Choose heads above.")
    probability = st.column_config.NumberColumn(format="%.5f")
    st.dataframe(
        {"next token": tokens, "p, all heads on": change.before, "p, switched off": change.after, "change": change.after - change.before},
        hide_index=True,
        column_config={"p, all heads on": probability, "p, switched off": probability, "change": st.column_config.NumberColumn(format="%+.5f")},
    )
    st.caption("A caveat: attention weights show where information flows, not why the model predicts what it does. Switching a head off tests whether the prediction needs it, for this one text.")


PARTS = {
    "1 · The heads of a layer": layer_heads,
    "2 · Averages (not heads)": averages,
    "3 · Every head of the model": every_head_part,
    "4 · Concat and W_O": concat_wo,
    "5 · Switch heads off": switch_off,
}
# Only the open part runs and is drawn; part 5 runs the model again with heads switched off.
ui.lazy_tabs(PARTS, "multihead_part")
