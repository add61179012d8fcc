"""Encoder–decoder: a real English → French translator, its greedy decoding step by step, and
cross-attention as an alignment."""

import streamlit as st

import ui
from figures import attention as fa
from figures import cross_attention as fx
from lessons import cross_attention as xa
from transformer import ModelLoadError
from transformer.data import phrases as td
from transformer.loading import get_translator
from ui import translator
from ui.caches import translator as cached

translator.phrase_from_link()  # before the sidebar: its first run reads the link
state = ui.sidebar()

st.title("🌉 Encoder–decoder: cross-attention")
try:
    lt = get_translator()
except ModelLoadError as err:
    st.error(
        f"The translator model could not be loaded ({err}). "
        "Train it with `python -m transformer train-translator --out assets/models/translator-en-fr`."
    )
    st.stop()
cfg = lt.cfg

ui.explain(xa.intro(lt.model))
src = translator.phrase_input(lt)

l1, l2, l3 = st.columns([1.2, 1.2, 1.6], vertical_alignment="bottom")
layer_help = (
    "Which decoder block's cross-attention (and which blocks below). "
    "The layer and head that the other pages share do not apply here."
)
layer_choice = l1.selectbox(
    "Layer",
    [*range(cfg.n_layer), xa.MEAN_LAYERS],
    index=cfg.n_layer - 1,
    bind="query-params",
    key="xattn_layer",
    help=layer_help,
)
head_choice = l2.selectbox(
    "Head",
    [xa.MEAN_HEADS, *range(cfg.n_head)],
    bind="query-params",
    key="xattn_head",
    help="One head, or the mean of the heads' weights.",
)
with l3.expander(f"Experiments: the mask, switched-off heads (τ: {ui.controls_place()})"):
    help_causal = "Off: in the pass shown here, each French position may also look at French words written after it."
    causal = st.toggle("Decoder causal mask", value=True, bind="query-params", key="xattn_causal", help=help_causal)
    ablate_help = "A switched-off head's output is set to 0 (part, layer L, head H); 'cross' = cross-attention."
    ablated = st.multiselect(
        "Switch off heads",
        xa.head_names(cfg.n_layer, cfg.n_head),
        bind="query-params",
        key="xattn_ablate",
        help=ablate_help,
    )
    st.caption(
        f"Try switching off the four “cross L{cfg.n_layer - 1}” heads: "
        "the last layer no longer reads the English words. Watch the translation."
    )
    st.caption(
        f"The shared τ ({ui.controls_place()}) runs this small translator at τ in every layer, so the translation may "
        "change, whether or not *τ in every layer* is on."
    )
L, H = xa.choice(layer_choice), xa.choice(head_choice)
# the one head of section 3 (a mean shows the last layer, head 0)
lq, h = (cfg.n_layer - 1 if L is None else L), (0 if H is None else H)
tr = cached.translation(src.words, state.temperature, causal, xa.parse_heads(ablated))
ref, gold = xa.reference(tr)
cross = xa.weights(tr, "cross", L, H)  # (T, S)
r = xa.reading(ref, gold, L, H, causal)

st.header("1 · Cross-attention as an alignment")
with ui.stacking("xattn_top", ui.SIDE_BY_SIDE_PX):  # the map beside its texts only where both fit
    left, right = st.columns([4, 3])
with left:
    ui.show_figure(
        fx.alignment_heatmap(cross, tr.written, src.words, gold, f"Cross-attention, {r.where}"), key="xattn_align"
    )
with right:
    for col, side, text in zip(
        st.columns(2),
        ("English (encoder reads)", "French (decoder writes)"),
        (" ".join(src.words), td.french_text(tr.output) or "(nothing)"),
        strict=True,
    ):
        col.markdown(f"**{side}**")
        col.code(text, language=None, wrap_lines=True)
    if not tr.finished:
        st.warning(f"The decoder did not write [EOS] within {cfg.n_ctx - 1} words.")
    # no reference, the same translation, or another
    (st.caption if ref is None else st.success if gold else st.warning)(r.reference)
    st.latex(r"\mathrm{CrossAttn}(Y, M) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}\,\tau}\right) V")
    st.latex(r"Q = \mathrm{LN}(Y)\,W_Q,\; K = M\,W_K,\; V = M\,W_V")
    ui.explain(r.alignment)
if gold:
    shown, per_head = xa.agreement(tr, gold, cross)
    with ui.stacking("xattn_agree_row", ui.SIDE_BY_SIDE_PX):
        a1, a2 = st.columns([2, 3])
    a1.latex(
        r"\text{agreement} = \frac{\#\{\, i : \arg\max_j \alpha_{ij} \in \mathrm{gold}(i) \,\}}"
        r"{\#\{\, i : \mathrm{gold}(i) \neq \varnothing \,\}}"
    )
    a1.metric(f"Agreement of the map above ({r.where})", f"{shown:.0%}")
    ui.explain(r.agreement, a1)
    with a2:
        ui.show_figure(fx.agreement_heatmap(per_head, "Agreement of every cross-attention head"), key="xattn_agree")
else:
    st.info("No gold alignment for this phrase (see above): the heatmap shows the weights alone.")

st.header("2 · The translation, word by word")
ui.explain(r.decoding)
st.dataframe(
    xa.step_rows(tr),
    hide_index=True,
    key="xattn_steps",
    column_config={
        "probability": st.column_config.NumberColumn(format="percent", help="Probability of the word written")
    },
)
step, n_steps = 1, len(tr.steps)
if n_steps > 1:
    st.session_state["xattn_step"] = min(st.session_state.get("xattn_step", 1), n_steps)
    help_step = (
        "Follow one step of the decoding: what the decoder had written, "
        "what it chose, and where its cross-attention looked."
    )
    step = st.slider("Step", 1, n_steps, bind="query-params", key="xattn_step", help=help_step)
st.markdown(xa.step_text(tr, step))
step_figures = {
    "xattn_probs": fx.probability_bars(tr.steps[step - 1].top, f"Step {step}: the most likely next words"),
    "xattn_row": fx.source_bars(cross[step - 1], src.words, f"Step {step}: cross-attention, {r.where}"),
}
ui.side_by_side(step_figures)
st.caption(r.weights_note)

st.header("3 · Where Q, K and V come from")
st.markdown(xa.qkv_text(tr, lq, h))
if st.toggle(
    "Show Q, K, V and the scores",
    value=False,
    bind="query-params",
    key="xattn_qkv",
    help="Draw the three matrices and the T × S scores of this layer and head.",
):
    x = xa.cross_head(tr, lq, h)
    sides = zip(
        "QKV", (x.q, x.k, x.v), ("decoder", "encoder", "encoder"), (tr.written, src.words, src.words), strict=True
    )
    ui.side_by_side(
        {
            f"xattn_{name.lower()}": fa.vectors_heatmap(
                m, rows, f"{name} from the {side}, head {h}", dim_title=f"dimension of {name}"
            )
            for name, m, side, rows in sides
        }
    )
    ui.show_figure(
        fx.scores_heatmap(x.scores, tr.written, src.words, f"Scores Q·Kᵀ / √d_k / τ, layer {lq}, head {h}"),
        key="xattn_scores",
    )

st.header("4 · The other two attentions")
ui.explain(r.others)
others = {
    "xattn_enc": fa.weights_heatmap(
        xa.weights(tr, "encoder", L, H), src.words, None, f"Encoder self-attention, {r.where}"
    ),
    "xattn_dec": fa.weights_heatmap(
        xa.weights(tr, "decoder", L, H),
        tr.decoder_input,
        xa.future(tr, lq),
        f"Decoder masked self-attention, {r.where}",
    ),
}
ui.side_by_side(others)
st.caption(r.caveat)
