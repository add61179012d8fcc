"""One head, step by step: X → Q, K, V → Q·Kᵀ → ÷√d_k → mask → softmax → weights·V, with the model's own numbers."""

import numpy as np
import streamlit as st

import ui
from figures import attention as fa
from lessons import one_head
from lessons.probability import entropy_bits

st.set_page_config(page_title="One head, step by step", page_icon="🔍", layout="wide")
state = ui.sidebar()
L, H = state.layer, state.head

st.title("🔍 One head, step by step")
st.markdown(
    "An attention head lets every token gather information from other tokens. It does it in a few "
    "simple steps, one per tab below, each with the real numbers of **layer "
    f"{L}, head {H}** (change them in the sidebar): X → Q, K, V → Q·Kᵀ → ÷√d_k → mask → softmax → weights·V. "
    "Each matrix has one row per token; a token that appears twice keeps both of its rows."
)

tr = ui.trace_or_stop(state)  # the model as trained: causal mask on
c1, c2 = st.columns(2)
scale_on = c1.toggle("Divide by √d_k", value=True, key="onehead_scale", help="Off: skip the division by √d_k and recompute softmax and weights·V from the raw scores Q·Kᵀ (τ still applies).")
mask_on = c2.toggle("Causal mask", value=True, key="onehead_mask", help="Off: run the whole model again without the causal mask, so every token may look at later tokens too.")
run = tr if mask_on else ui.get_trace(state.model, state.sentence, state.temperature, causal=False)

s = one_head.head_steps(run, L, H, scale=scale_on)  # what this page shows
labels = tr.encoding.labels
T, hs = len(labels), s.q.shape[1]
d_k = f"\\sqrt{{{hs}}}"

# Which query row the step-by-step section follows (the last token by default).
ui.keep_choice("onehead_query", range(T), T - 1)

if not scale_on:
    ref = one_head.head_steps(run, L, H)  # the same head with the scaling
    h0, h1 = entropy_bits(ref.weights).mean(), entropy_bits(s.weights).mean()
    st.info(
        f"**Scaling off.** The scores are now {np.sqrt(hs):.2f}× larger (no ÷√{hs}). Softmax of larger numbers is closer to one-hot: "
        f"the average largest weight of a row went from {ref.weights.max(axis=1).mean():.3f} to {s.weights.max(axis=1).mean():.3f}, "
        f"the average entropy from {h0:.3f} to {h1:.3f} bits (0 = all weight on one token). Only this head is recomputed; the rest of the model is unchanged."
    )
if not mask_on:
    future = np.triu(s.weights, k=1).sum(axis=1)  # weight each query puts on later tokens
    upstream = (
        "In layer 0, X, Q, K and V are the same as with the mask: nothing has attended yet."
        if L == 0
        else f"The mask is off in every layer, so the layers before {L} saw the future too: X, Q, K and V below changed as well."
    )
    st.info(
        f"**Mask off.** Every row now sees all {T} tokens: row 0 gave all its weight to itself, now it gives "
        f"{1 - s.weights[0, 0]:.1%} to later tokens. On average a row puts {future.mean():.1%} of its weight on the future. {upstream}"
    )


def step_input() -> None:
    st.latex(r"X = \mathrm{LN}_1(x) \in \mathbb{R}^{T \times d_{\mathrm{model}}}")
    st.markdown(
        f"Attention does not read the raw embeddings: the input of layer {L}'s attention is the residual stream "
        "after LayerNorm 1 (mean 0, spread 1 per token, then a learned gain and bias). "
        f"These are the actual numbers attention reads: {T} tokens × {s.x.shape[1]} dimensions."
    )
    ui.show_figure(fa.vectors_heatmap(s.x, labels, f"X = LN1 output, layer {L}"), key="onehead_x")


def step_qkv() -> None:
    st.latex(r"Q = X W_Q + b_Q,\quad K = X W_K + b_K,\quad V = X W_V + b_V \quad (T \times d_k,\ d_k = " + str(hs) + ")")
    st.markdown(
        "Three learned projections of every token: the **query** asks *what am I looking for?*, the **key** advertises "
        "*this is what I hold*, and the **value** is what gets passed on to whoever looks here."
    )
    for col, name, m in zip(st.columns(3), ("Q", "K", "V"), (s.q, s.k, s.v), strict=True):
        with col:
            ui.show_figure(fa.vectors_heatmap(m, labels, f"{name}, head {H}", dim_title=f"dimension of {name}"), key=f"onehead_{name.lower()}")


def step_scores() -> None:
    col1, col2 = st.columns(2)
    with col1:
        st.latex(r"e_{ij} = q_i \cdot k_j, \quad E = QK^\top")
        st.markdown("Every query is compared with every key by a dot product: large when they point the same way.")
        ui.show_figure(fa.scores_heatmap(s.raw, labels, "Raw scores Q·Kᵀ"), key="onehead_raw")
    with col2:
        if scale_on:
            st.latex(rf"S = \frac{{QK^\top}}{{{d_k}\,\tau}} = \frac{{QK^\top}}{{{np.sqrt(hs):.2f} \times {s.tau:.2f}}}")
            st.markdown(f"Dot products of {hs}-dimensional vectors spread out like √{hs}; dividing by √{hs} keeps softmax from saturating. τ is the attention temperature from the sidebar.")
        else:
            st.latex(rf"S = \frac{{QK^\top}}{{\tau}} = \frac{{QK^\top}}{{{s.tau:.2f}}} \quad (\text{{no }} \div {d_k})")
            st.markdown("Scaling is off: the raw scores go straight on (divided only by the temperature τ).")
        ui.show_figure(fa.scores_heatmap(s.scaled, labels, "Scaled scores" if scale_on else "Unscaled scores"), key="onehead_scaled")


def step_softmax() -> None:
    col1, col2 = st.columns(2)
    with col1:
        st.latex(r"\tilde S_{ij} = \begin{cases} S_{ij} & j \le i \\ -\infty & j > i \end{cases}" if mask_on else r"\tilde S = S \quad (\text{no mask})")
        st.markdown("A token may not look at later tokens: their scores become −∞ (grey cells; hover says −∞)." if mask_on else "Mask off: no score is replaced, every token sees the whole sentence.")
        ui.show_figure(fa.scores_heatmap(s.masked, labels, "Masked scores"), key="onehead_masked")
    with col2:
        st.latex(r"\alpha_{ij} = \frac{e^{\tilde S_{ij}}}{\sum_{j'} e^{\tilde S_{ij'}}}")
        st.markdown("Softmax turns each row into weights: positive, summing to 1; e^−∞ = 0, so hidden tokens get exactly 0.")
        ui.show_figure(fa.weights_heatmap(s.weights, labels, ~s.visible, "Attention weights α"), key="onehead_weights")


def step_query() -> None:
    st.latex(r"z_i = \sum_j \alpha_{ij}\, v_j")
    i = st.selectbox("Query token i", range(T), format_func=lambda j: f"{j}: {labels[j]}", key="onehead_query", help="Which token's row to follow: its weights, and the value vectors they mix.")
    st.markdown("The output for token i is a mix of the value vectors, each multiplied by how much i attends to it.")
    terms = one_head.weighted_values(s.weights[i], s.v)  # (T, hs) rows α_ij·v_j
    total = terms.sum(axis=0)  # (hs,)
    col1, col2 = st.columns(2)
    with col1:
        ui.show_figure(fa.weight_bars(s.weights[i], labels, f"Weights of query {i}"), key="onehead_bars")
        st.caption(f"Largest weight {s.weights[i].max():.3f} on position {int(s.weights[i].argmax())}; entropy {entropy_bits(s.weights[i]):.3f} bits; the row sums to {s.weights[i].sum():.4f}.")
    with col2:
        ui.show_figure(fa.weighted_sum_heatmap(terms, total, labels, s.visible[i], f"α_ij·v_j for query {i}, and their sum"), key="onehead_terms")
        st.caption(f"The sum row equals the head's output z_{i} (step 6): largest difference {np.abs(total - s.z[i]).max():.1e}.")


def step_output() -> None:
    st.latex(r"Z = \alpha V \quad (T \times d_k)")
    st.markdown("Every row of the weights mixes the values at once. The heads of a layer are then concatenated and projected back to the residual stream (see *Many heads*).")
    ui.show_figure(fa.vectors_heatmap(s.z, labels, f"Z = αV, head {H}"), key="onehead_z")


STEPS = {
    "1 · The input X": step_input,
    "2 · Queries, keys, values": step_qkv,
    "3 · Scores and scaling": step_scores,
    "4 · Mask, then softmax": step_softmax,
    "5 · One query's weighted sum": step_query,
    "6 · The head's output": step_output,
}
# Only the open step runs and is drawn: moving a slider redraws its two or three charts, not all eleven.
ui.lazy_tabs(STEPS, "onehead_step")
st.caption(
    "A caveat: attention weights show where information flows, not why the model predicts what it does. "
    "Many heads put most of their weight on the first token (an “attention sink”) when nothing else is useful."
)
