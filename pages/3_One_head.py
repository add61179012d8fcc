"""One head, step by step: X → Q, K, V → Q·Kᵀ → ÷√d_k → mask → softmax → weights·V, with the model's own numbers."""

import numpy as np
import streamlit as st

import ui
from figures import attention as fa
from lessons import one_head
from lessons.probability import entropy_bits
from ui import pairs

state = ui.sidebar()
L, H = state.layer, state.head

st.title("🔍 One head, step by step")
ui.explain(
    "An attention head lets every token gather information from other tokens, in a few simple steps, one per tab "
    f"below, each with the real numbers of **layer {L}, head {H}** ({ui.controls_place()}): "
    "X → Q, K, V → Q·Kᵀ → ÷√d_k → mask → softmax → weights·V. "
    "Each matrix has one row per token; a token that appears twice keeps both of its rows."
)

tr = ui.trace_or_stop(state.key)  # the model as trained (a decoder: causal mask on)
cfg, labels = tr.cfg, tr.encoding.labels
c1, c2 = st.columns(2)
help_scale = (
    "Off: skip the division by √d_k and recompute softmax and weights·V from the raw scores Q·Kᵀ (τ still applies)."
)
scale_on = c1.toggle("Divide by √d_k", value=True, bind="query-params", key="onehead_scale", help=help_scale)
mask_help = (
    "Off: run the whole model again without the causal mask, so every token may look at later tokens too."
    if cfg.causal
    else "An encoder has no causal mask: nothing to switch."
)
mask_on = c2.toggle(
    "Causal mask",
    value=cfg.causal,
    disabled=not cfg.causal,
    bind="query-params",
    key="onehead_mask" if cfg.causal else "onehead_no_mask",
    help=mask_help,
)
if not cfg.causal:
    c2.caption(
        f"{state.model} is an encoder: it has no causal mask, "
        "so this switch can do nothing. Every token always sees the whole sentence."
    )
run = tr if mask_on or not cfg.causal else ui.get_trace(state.key.but(causal=False))
s = one_head.head_steps(run, L, H, scale=scale_on)  # what this page shows
r = one_head.reading(cfg, L, H, mask_on)
T, hs = len(labels), s.q.shape[1]

if not scale_on:
    st.info(one_head.scaling_note(one_head.head_steps(run, L, H), s))
if not mask_on and cfg.causal:
    st.info(one_head.mask_off_note(s, L))
with ui.after_figures("onehead_role"), st.expander(f"What layer {L}, head {H} does in general (measured)"):
    ui.head_role(state.model, L, H)


def step_input() -> None:
    st.latex(r.x_latex)
    st.markdown(f"{r.x_text} These are the actual numbers attention reads: {T} tokens × {s.x.shape[1]} dimensions.")
    ui.show_figure(fa.vectors_heatmap(s.x, labels, r.x_title, cap_outliers=True), key="onehead_x")


def step_qkv() -> None:
    st.latex(r.qkv_latex)
    ui.explain(
        "Three learned projections of every token: the **query** asks *what am I looking for?*, the **key** "
        "advertises *this is what I hold*, and the **value** is what gets passed on to whoever looks here."
    )
    if r.qkv_note:
        st.info(r.qkv_note)
    for col, title, m, key in zip(
        ui.stacking("onehead_qkv_row", ui.SIDE_BY_SIDE_PX).columns(3), r.qkv_titles, (s.q, s.k, s.v), "qkv", strict=True
    ):
        with col:
            ui.show_figure(
                fa.vectors_heatmap(m, labels, title, dim_title=f"dimension of {key.upper()}"), key=f"onehead_{key}"
            )


def step_scores() -> None:
    col1, col2 = ui.stacking("onehead_scores_row", ui.SIDE_BY_SIDE_PX).columns(2)
    with col1:
        st.latex(r"e_{ij} = q_i \cdot k_j, \quad E = QK^\top")
        ui.explain("Every query is compared with every key by a dot product: large when they point the same way.")
        ui.show_figure(fa.scores_heatmap(s.raw, labels, "Raw scores Q·Kᵀ"), key="onehead_raw")
    with col2:
        if scale_on:
            st.latex(
                rf"S = \frac{{QK^\top}}{{\sqrt{{{hs}}}\,\tau}} = "
                rf"\frac{{QK^\top}}{{{np.sqrt(hs):.2f} \times {s.tau:.2f}}}"
            )
            st.markdown(
                f"Dot products of {hs}-dimensional vectors spread out like √{hs}; "
                f"dividing by √{hs} keeps softmax from saturating. "
                f"τ is the attention temperature ({ui.controls_place()})."
            )
        else:
            st.latex(
                rf"S = \frac{{QK^\top}}{{\tau}} = \frac{{QK^\top}}{{{s.tau:.2f}}} \quad "
                rf"(\text{{no }} \div \sqrt{{{hs}}})"
            )
            st.markdown("Scaling is off: the raw scores go straight on (divided only by the temperature τ).")
        ui.show_figure(
            fa.scores_heatmap(s.scaled, labels, "Scaled scores" if scale_on else "Unscaled scores"),
            key="onehead_scaled",
        )


def step_softmax() -> None:
    col1, col2 = ui.stacking("onehead_softmax_row", ui.SIDE_BY_SIDE_PX).columns(2)
    with col1:
        st.latex(r.mask_latex)
        st.markdown(r.mask_text)
        ui.show_figure(
            fa.scores_heatmap(s.masked, labels, "Masked scores" if cfg.causal else "Scores (nothing masked)"),
            key="onehead_masked",
        )
    with col2:
        st.latex(r"\alpha_{ij} = \frac{e^{\tilde S_{ij}}}{\sum_{j'} e^{\tilde S_{ij'}}}")
        ui.explain(
            "Softmax turns each row into weights: positive, summing to 1"
            + ("; e^−∞ = 0, so hidden tokens get exactly 0." if cfg.causal else ".")
        )
        ui.show_figure(fa.weights_heatmap(s.weights, labels, ~s.visible, "Attention weights α"), key="onehead_weights")


def step_query() -> None:
    st.latex(r"z_i = \sum_j \alpha_{ij}\, v_j")
    help_query = "Which token's row to follow: its weights, and the value vectors they mix."
    i = st.selectbox(
        "Query token i",
        range(T),
        format_func=ui.token_names(labels),
        **ui.choice("onehead_query", range(T), T - 1),
        help=help_query,
    )  # the last token by default
    ui.explain("The output for token i is a mix of the value vectors, each multiplied by how much i attends to it.")
    terms = one_head.weighted_values(s.weights[i], s.v)  # (T, hs) rows α_ij·v_j
    col1, col2 = ui.stacking("onehead_query_row", ui.SIDE_BY_SIDE_PX).columns(2)
    with col1:
        ui.show_figure(fa.weight_bars(s.weights[i], labels, f"Weights of query {i}"), key="onehead_bars")
        st.caption(
            f"Largest weight {s.weights[i].max():.3f} on position {int(s.weights[i].argmax())}; "
            f"entropy {entropy_bits(s.weights[i]):.3f} bits; the row sums to {s.weights[i].sum():.4f}."
        )
    with col2:
        ui.show_figure(
            fa.weighted_sum_heatmap(
                terms, terms.sum(axis=0), labels, s.visible[i], f"α_ij·v_j for query {i}, and their sum"
            ),
            key="onehead_terms",
        )
        st.caption(
            f"The sum row equals the head's output z_{i} (step 6): "
            f"largest difference {np.abs(terms.sum(axis=0) - s.z[i]).max():.1e}."
        )


def step_output() -> None:
    st.latex(r"Z = \alpha V \quad (T \times d_k)")
    ui.explain(
        "Every row of the weights mixes the values at once. "
        "The heads of a layer are then concatenated and projected back to the residual stream (see *Multi-head*)."
    )
    ui.show_figure(fa.vectors_heatmap(s.z, labels, f"Z = αV, head {H}"), key="onehead_z")
    if state.tau_on_weights_only:
        st.caption(
            f"Z mixes the values with the weights shown, at τ = {s.tau:g}. The model itself ran as trained (τ = 1), "
            "so its later layers receive its own Z; switch on *τ in every layer* to run them at τ."
        )


STEPS = {
    "1 · The input X": step_input,
    "2 · Queries, keys, values": step_qkv,
    "3 · Scores and scaling": step_scores,
    "4 · Mask, then softmax": step_softmax,
    "5 · One query's weighted sum": step_query,
    "6 · The head's output": step_output,
}
# only the open step runs and is drawn: a slider redraws two or three charts, not eleven
ui.lazy_tabs(STEPS, "onehead_step")
pairs.compare(state.key, st.session_state.get("onehead_query", T - 1), L, H)  # a second sentence, a word changed
st.caption(
    "A caveat: attention weights show where information flows, not why the model predicts what it does. "
    "Many heads put most of their weight on the first token (an “attention sink”; "
    "in an encoder often [CLS] or [SEP]) when nothing else is useful."
)
