"""Masking: where a token may not look (the future, padding), and what happens when it can."""

import numpy as np
import streamlit as st

import ui
from figures import attention as fa
from lessons import one_head
from lessons.next_token import next_token_probs, top_tokens
from transformer import TraceInputError
from ui import cached

st.set_page_config(page_title="Masking", page_icon="🎭", layout="wide")
state = ui.sidebar()
L, H = state.layer, state.head
TOP_K = 3


st.title("🎭 Masking")
st.markdown(
    "Attention lets each token look at other tokens. A **mask** says where it may *not* look. "
    "It works by adding −∞ to those scores before softmax: e^−∞ = 0, so a hidden token gets weight exactly 0 "
    "and nothing of it can leak through. A decoder like this model uses two masks: the **causal** mask "
    "(no peeking at the future) and, when sentences are batched, the **padding** mask. The tabs below take them in turn."
)
st.latex(r"\alpha = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}\,\tau} + M\right),\qquad M_{ij} = \begin{cases} 0 & \text{may look} \\ -\infty & \text{may not} \end{cases}")

tr = ui.trace_or_stop(state)
s = one_head.head_steps(tr, L, H)
labels = tr.encoding.labels
T = len(labels)
# The parts' own controls keep their values while their tab is closed.
st.session_state["masking_pos"] = min(st.session_state.get("masking_pos", 3), T - 1)  # the sentence may have become shorter
for key, default in (("masking_rows", 8), ("masking_other", "The cat sat."), ("masking_encoder", False), ("masking_padmask", True)):
    ui.keep(key, default)


def causal() -> None:
    st.latex(r"M^{\mathrm{causal}}_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}")
    st.markdown(
        "Token i may look at itself and every earlier token, never at a later one. Why? In training the model "
        "predicts the next token at **every** position of a text at once. If position i could see token i+1, "
        "it would simply copy the answer and learn nothing. Move the slider to see what each position may see."
    )
    if T > 1:
        pos = st.slider("Position i", 0, T - 1, key="masking_pos", help="A query position: its row of the mask is outlined in red.")
    else:
        pos = 0
    col1, col2 = st.columns(2)
    with col1:
        ui.show_figure(fa.mask_heatmap(s.visible, labels, "Causal mask (filled = may look, grey = −∞)", row=pos), key="masking_mask")
    with col2:
        st.markdown(f"**Position {pos}** may see **{pos + 1}** token(s), positions 0–{pos}; **{T - pos - 1}** later token(s) are hidden. The text it may see:")
        st.text(tr.encoding.text[: tr.encoding.offsets[pos][1]])
        ui.show_figure(fa.weight_bars(s.weights[pos], labels, f"Where position {pos} looks: layer {L}, head {H}"), key="masking_row")
        st.caption(f"Weight on the hidden (later) tokens: {s.weights[pos, pos + 1 :].sum():g}, exactly. The visible ones share {s.weights[pos, : pos + 1].sum():.4f}.")


def before_after() -> None:
    st.markdown(
        "Left: the scaled scores for every pair, the future included (the model computes them, then throws them away). "
        "Middle: the same scores after the mask: the future is −∞ (grey; hover says −∞). "
        "Right: softmax turns each row into weights; the grey triangle is exactly 0."
    )
    for col, fig, key in zip(
        st.columns(3),
        (
            fa.scores_heatmap(s.scaled, labels, "Scores before the mask", values=False),
            fa.scores_heatmap(s.masked, labels, "After the mask = before softmax", values=False),
            fa.weights_heatmap(s.weights, labels, ~s.visible, "After softmax: weights", values=False),
        ),
        ("masking_scaled", "masking_masked", "masking_weights"),
        strict=True,
    ):
        with col:
            ui.show_figure(fig, key=key)


def future() -> None:
    st.markdown(
        "Here the whole model runs again with the causal mask switched off in every layer, and we compare its "
        "next-token predictions. The model was trained *with* the mask, so it never learned to use the future: "
        "without the mask it reads a context it has never seen, and its predictions change, even at the last "
        "position (the earlier tokens it reads have changed). Probabilities are the model's softmax over all "
        f"{ui.get_model(state.model).cfg.vocab_size:,} tokens."
    )
    open_tr = ui.get_trace(state.model, state.sentence, state.temperature, causal=False)
    vocab = ui.get_model(state.model).tokenizer.vocab_labels()
    n_rows = min(T, st.slider("Positions in the table", 1, 32, key="masking_rows", help="How many of the first positions to compare (at most the sentence's length)."))
    p_next = {m: next_token_probs(t["logits"][: n_rows + 1], tr.encoding.ids[: n_rows + 1]) for m, t in (("with", tr), ("without", open_tr))}
    rows = []
    for i in range(n_rows):
        row = {"position": i, "token": labels[i], "actual next token": labels[i + 1] if i + 1 < T else "(end)"}
        for m, t in (("with", tr), ("without", open_tr)):
            row[f"top-{TOP_K} {m} mask"] = " · ".join(f"{vocab[j]} {100 * p:.3g}%" for j, p in top_tokens(t["logits"][i], TOP_K))
        for m in ("with", "without"):
            row[f"p(actual) {m} mask"] = float(p_next[m][i]) if i + 1 < T else None
        rows.append(row)
    st.dataframe(rows, hide_index=True, key="masking_table")
    top1 = [np.argmax(t["logits"], axis=-1) for t in (tr, open_tr)]
    st.markdown(f"The most likely next token changed at **{int((top1[0] != top1[1]).sum())} of {T}** positions. Below, the same head without the mask: now row 0 sees all the tokens too.")
    ui.show_figure(fa.pattern_heatmap(open_tr, L, H, f"Weights without the mask, layer {L}, head {H}"), key="masking_open")


def padding() -> None:
    st.latex(r"M^{\mathrm{pad}}_{ij} = \begin{cases} 0 & \text{token } j \text{ is real} \\ -\infty & \text{token } j \text{ is padding} \end{cases},\qquad M = M^{\mathrm{causal}} + M^{\mathrm{pad}}")
    st.markdown(
        "To run several sentences at once they must have the same length, so the shorter ones are filled up with a "
        "padding token. The padding mask hides those filler tokens as keys, so no real token ever reads them. "
        "Below, your sentence and a second one run as one batch through the model."
    )
    other = st.text_input("Second sentence", key="masking_other", help="Any text; it is padded (or your sentence is) to the same length.")
    c1, c2 = st.columns(2)
    encoder = c1.toggle(
        "Encoder-style: no causal mask", key="masking_encoder", help="Let every token see the whole sentence, as in an encoder (BERT): only the padding mask then protects the real tokens."
    )
    use_pad = c2.toggle("Use the padding mask", key="masking_padmask", help="Off: the padding tokens are visible keys like any other.")
    try:
        batch = cached.padded_batch(state.model, (state.sentence, other), state.temperature, not encoder, use_pad)
    except TraceInputError as err:
        st.info(f"Second sentence: {err}")
        return
    names = ["A (yours)", "B (second)"]
    lengths = [len(e) for e in batch.encodings]
    Tb = batch.ids.shape[1]
    ui.show_figure(fa.padding_heatmap(batch.attention_mask, [e.labels for e in batch.encodings], names, f"The batch: {Tb} positions (grey = padding)"), key="masking_batch")
    short = int(np.argmin(lengths))
    pad_labels = [*batch.encodings[short].labels, *["[pad]"] * (Tb - lengths[short])]
    visible = ~np.isneginf(batch[f"blocks.{L}.attn.hook_scores_masked"][short, H])  # (Tb, Tb) as the model used it
    col1, col2 = st.columns(2)
    with col1:
        ui.show_figure(fa.mask_heatmap(visible, pad_labels, f"Mask of sentence {'AB'[short]} in the batch"), key="masking_padded_mask")
    with col2:
        st.markdown(
            f"Sentence {'AB'[short]} has {lengths[short]} tokens and {Tb - lengths[short]} padding position(s). "
            "Each real token's output should not depend on the padding. Check: run each sentence alone, then compare its logits "
            "(the model's output for every real token) with those from the padded batch."
        )
        for b, name in enumerate(names):
            alone = ui.get_trace(state.model, (state.sentence, other)[b], state.temperature, causal=not encoder)
            diff = np.abs(batch["logits"][b, : lengths[b]] - alone["logits"]).max()
            st.metric(f"Sentence {name}: largest logit difference, batch vs alone", f"{diff:.2e}")
        if not use_pad and encoder:
            st.warning("Without the padding mask an encoder lets real tokens read the padding: the padded sentence's outputs change.")
        elif not use_pad:
            st.info(
                "With right padding and the causal mask, the padding comes after every real token, so the causal mask already hides it from them: "
                "the differences stay 0. Switch on encoder-style to see the padding mask matter."
            )
        else:
            st.success("With the padding mask, the real tokens never see the padding: their outputs equal those of the sentence alone.")


PARTS = {
    "1 · The causal mask": causal,
    "2 · Before and after the mask": before_after,
    "3 · Seeing the future": future,
    "4 · The padding mask": padding,
}
# Only the open part runs: parts 3 and 4 run the model again (mask off; a padded batch and each sentence alone).
ui.lazy_tabs(PARTS, "masking_part")
