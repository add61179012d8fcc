"""Multi-head attention: every head of a layer side by side, the whole model at a glance, concat·W_O, and switching heads off."""

import streamlit as st

import ui
from figures import multihead as fm
from lessons import head_roles, heads
from ui import cached_model as cm

st.set_page_config(page_title="Multi-head attention", page_icon="🐙", layout="wide")
state = ui.sidebar()
L, H = state.layer, state.head
cfg = ui.get_model(state.model).cfg
causal, n_layer, nh, hs, d = cfg.causal, cfg.n_layer, cfg.n_head, cfg.d_head, cfg.d_model
b_O = " + b_O" if cfg.family != "llama" else ""  # Llama's attention has no biases

st.title("🐙 Multi-head attention")
shared = f"its own W_Q, W_K, W_V (d_head = d_model / h = {d} / {nh} = {hs})"
if cfg.n_kv_heads < nh:
    shared = f"its own W_Q, while groups of {nh // cfg.n_kv_heads} share one W_K and W_V ({cfg.n_kv_heads} key/value heads: grouped-query attention, see *RoPE and shared heads*)"
st.markdown(
    f"One head can follow one kind of relation at a time. So every layer runs **{nh} heads** side by side, each with {shared}. Each head looks at the sentence its own way; "
    f"their outputs are put side by side (concatenated) and one matrix **W_O** mixes them back into a {d}-dimensional vector per token. The tabs below show the heads of "
    f"**layer {L}** (sidebar), the whole model at a glance, the W_O step with its real numbers, and what happens when heads are switched off."
    + ("" if causal else " This model is an encoder: no causal mask (M = 0), every token sees the whole sentence.")
)
head = r"\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}\,\tau} + M\right) V_h"
st.latex(rf"\mathrm{{MultiHead}}(X) = \mathrm{{Concat}}(\mathrm{{head}}_0,\dots,\mathrm{{head}}_{{h-1}})\,W_O{b_O}, \qquad " + head)

tr = ui.trace_or_stop(state)
labels, T = tr.encoding.labels, len(tr.encoding)
names = ("first-token", "the first token", "first-token column") if causal else ("[CLS]/[SEP]", "[CLS] and [SEP]", "[CLS] and [SEP] columns")
sinks, (sink, sink_to, columns) = heads.sink_columns(tr.encoding, cfg), names
help_sink = f"Leaves the {columns} blank in every map and line view on this page, and stretches the colour scale over the remaining weights. The weights are not renormalised."
hide = sinks if st.checkbox(f"Hide the {columns} (attention sink{'' if causal else 's'})", key="multihead_sink", help=help_sink) else ()
where = "the very first token, whatever it is" if causal else "[CLS] and [SEP], the tokens the tokenizer adds at the start and the end"
st.markdown(
    "**Attention sink.** Every row of weights must add up to 1, even when a head finds nothing useful to look at. Many trained heads then park most of their weight on "
    f"{where}: it acts like a “nothing here” slot whose value adds little. That column can hide everything else, so you can hide it. Hiding is only a display choice: "
    "the other weights keep their real values (a row then adds up to less than 1; nothing is renormalised), and the colour scale is stretched to the largest weight still shown."
)
w = tr[f"blocks.{L}.attn.hook_pattern"]  # (nh, T, T)
if hide:
    kept, hidden = heads.hidden_weight(w[H, -1], hide)
    rows = f"in layer {L}, head {H}, the last row's weights still shown add up to {kept:.3f}, not 1 (the hidden {hidden:.3f} went to {sink_to})"
    st.caption(f"{columns.capitalize()} hidden, weights not renormalised: {rows}.")

every_head, side = heads.all_heads(n_layer, nh), heads.head_name(L, H)
if st.session_state.get("multihead_side") != side or st.session_state.get("multihead_open") not in every_head:  # the sidebar moved: open its head
    st.session_state["multihead_side"] = st.session_state["multihead_open"] = side
for name, default in (("multihead_open", side), ("multihead_threshold", 0.1), ("multihead_topk", 8)):  # the parts' own controls keep their values while their tab is closed
    ui.keep(name, default)
ui.keep_choice("multihead_line_token", range(-1, T), -1)
ui.keep_choice("multihead_token", range(T), T - 1)
st.session_state["multihead_ablate"] = [n for n in st.session_state.get("multihead_ablate", []) if n in every_head]  # another model may have fewer heads
key = (state.model, state.sentence, state.temperature)  # fixes the trace


def layer_heads() -> None:
    fig, zmax = cm.heads_figure(*key, L, hide, tr)
    scale = f"All {nh} maps use the same colour scale, from 0 to {zmax:.3f} (the largest weight shown), so a darker cell means more weight in any of them."
    st.markdown(f"Each map is one head: row i = the token looking (query), column j = the token looked at (key). {scale}")
    ui.show_figure(fig, key="multihead_heads")
    share = heads.sink_share(w, sinks, causal)  # (nh,)
    if T > 1:
        st.caption(f"Weight on {sink_to}, averaged over {'rows 1…T−1' if causal else 'every row'}: " + ", ".join(f"head {h} {share[h]:.1%}" for h in range(nh)) + ".")


def averages() -> None:
    st.markdown("Averaging the maps gives a rough summary of where the model looks. **These are averages, not heads**: the model never uses them, and averaging blurs heads that look apart.")
    st.latex(r"\bar\alpha^{(\ell)} = \frac{1}{h}\sum_{h'} \alpha^{(\ell, h')}, \qquad \bar\alpha = \frac{1}{L\,h}\sum_{\ell, h'} \alpha^{(\ell, h')}")
    ui.show_figure(cm.averages_figure(*key, L, hide, tr), key="multihead_means")


def every_head_part() -> None:
    name = lambda n: "layer {}, head {}".format(*heads.parse_head(n))  # noqa: E731
    OL, OH = heads.parse_head(st.selectbox("Open layer L, head H", every_head, format_func=name, key="multihead_open", help="Which head to show large, with its line view (red box below)."))
    fig, block, n = cm.overview_figure(*key, (OL, OH), hide, tr, head_roles.badges(cm.head_scores(state.model)))
    pooled = f"each cell is the mean of a {block} × {block} block of weights{', future cells left out' * causal}, so {T} tokens fit in {n} cells" if block > 1 else "every weight is shown"
    st.markdown(f"Rows are layers, columns heads: one small map per head ({pooled}); a badge says what the head does. The head chosen above (red box) is opened large below.")
    ui.show_figure(fig, key="multihead_overview")
    ui.head_role(state.model, OL, OH)
    c1, c2 = st.columns(2)
    threshold = c2.slider("Hide lines below weight", 0.01, 1.0, step=0.01, key="multihead_threshold", help="Only (query, key) pairs with at least this much weight get a line.")
    help_token = "Keep only the lines of one token: the keys it looks at and the queries that look at it."
    token = c2.selectbox("Lines of token", [-1, *range(T)], format_func=lambda j: "every token" if j < 0 else f"{j}: {labels[j]}", key="multihead_line_token", help=help_token)
    big, lines, n_lines = cm.opened_figures(*key, (OL, OH), hide, sink, threshold, token, tr)
    with c1:
        ui.show_figure(big, key="multihead_open_map")
    with c2:
        ui.show_figure(lines, key="multihead_lines")
        step = f"rounded to steps of {fm.OPACITY_STEP} (at least {fm.OPACITY_STEP}, so faint lines stay visible)"
        dot = "the dot in its middle has the exact weight as its opacity and in its hover"
        st.caption(f"{n_lines} line(s). Left: the token looking (query); right: the token looked at (key). A line's opacity is its weight, {step}; {dot}.")


def concat_wo() -> None:
    steps = f"`hook_concat` **({T}, {nh * hs})** → times W_O **({nh * hs}, {d})**" + (f" plus b_O **({d},)**" if b_O else " (this model has no bias b_O)")
    st.markdown(
        f"Layer {L}: `hook_z` **({T}, {nh}, {hs})**, one {hs}-vector per token and head → side by side, {steps} → `hook_attn_out` **({T}, {d})**, which is added to the residual "
        "stream. Row by row, W_O's first block of rows reads head 0, the next head 1, and so on: so the output is also the sum of each head's share z_h·W_O[h]."
    )
    st.latex(rf"\mathrm{{out}}_i = [z_{{i,0}}\,;\dots;\,z_{{i,h-1}}]\,W_O{b_O} = \sum_{{h'}} z_{{i,h'}}\,W_O^{{(h')}}{b_O}")
    t = st.selectbox("Token", range(T), format_func=lambda j: f"{j}: {labels[j]}", key="multihead_token", help="Whose vectors to follow through the concatenation and W_O.")
    concat_fig, wo_fig, out_fig, error = cm.concat_figures(*key, L, t, tr)
    ui.show_figure(concat_fig, key="multihead_concat")
    for col, fig, name in zip(st.columns(2), (wo_fig, out_fig), ("multihead_wo", "multihead_out"), strict=True):
        with col:
            ui.show_figure(fig, key=name)
    st.caption(f"Recomputed here: concat·W_O{b_O} differs from the model's attn_out for token {t} by at most {error:.1e} (float32 rounding).")


def switch_off() -> None:
    what = "the prediction of the next token (after the last token) may change" if cfg.has_lm_head else "the final vector of every token may change"
    st.markdown(
        f"Ablation: set a head's output z to zero and run the whole model again. Later layers now get a different input, and {what}. If it hardly moves, the model did not need those heads here."
    )
    if cfg.has_lm_head:
        st.latex(r"z_{i,h} \leftarrow 0 \;\text{ for every switched-off head } h, \qquad p = \mathrm{softmax}(\mathrm{logits}_{T-1})")
    else:
        st.markdown("An encoder has no next-token prediction to compare: it turns every token into a vector that depends on the whole sentence. So we compare those final vectors, token by token.")
        st.latex(r"z_{i,h} \leftarrow 0 \text{ for every switched-off head } h, \qquad \cos(x_t, x'_t), \quad \lVert x'_t - x_t \rVert / \lVert x_t \rVert \quad (x = \text{last block's output})")
    c1, c2 = st.columns([3, 1])
    help_heads = "Any heads of any layers, written layer.head: 0.2 = layer 0, head 2. Their outputs are set to 0 in a new forward pass."
    chosen = c1.multiselect("Heads to switch off (layer.head)", every_head, key="multihead_ablate", help=help_heads)
    k = c2.slider("Top tokens", 3, 20, key="multihead_topk", help="How many of the most likely next tokens to list (before, and after switching off).") if cfg.has_lm_head else 0
    ablate = tuple(sorted(heads.parse_head(n) for n in chosen))
    fig, table, moved = cm.ablation(*key, ablate, k, tr, ui.trace_or_stop(state, ablate=ablate) if ablate else tr)
    ui.show_figure(fig, key="multihead_ablation")
    if not ablate:
        st.info(f"No head is switched off: {'both bars are' if cfg.has_lm_head else 'every vector is'} the model as trained. Choose heads above.")
    elif cfg.has_lm_head:
        st.markdown(f"Switched off: {', '.join(chosen)}. **{moved:.1%}** of the probability moved (½ Σ |p − p′| over all {cfg.vocab_size:,} tokens).")
    else:
        st.markdown(f"Switched off: {', '.join(chosen)}. The final vectors turned by **{moved:.4f}** on average (1 − cos over the {T} tokens; 0 = unchanged).")
    if table:
        prob = st.column_config.NumberColumn(format="%.5f")
        st.dataframe(table, hide_index=True, column_config={"p, all heads on": prob, "p, switched off": prob, "change": st.column_config.NumberColumn(format="%+.5f")})
    output = "prediction" if cfg.has_lm_head else "output"
    st.caption(f"A caveat: attention weights show where information flows, not why the model does what it does. Switching a head off tests whether the {output} needs it, for this one text.")


PARTS = {"1 · The heads of a layer": layer_heads, "2 · Averages (not heads)": averages, "3 · Every head of the model": every_head_part, "4 · Concat and W_O": concat_wo}
ui.lazy_tabs({**PARTS, "5 · Switch heads off": switch_off}, "multihead_part")  # only the open part runs and is drawn; part 5 runs the model again with heads off
