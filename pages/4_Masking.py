"""Masking: where a token may not look (the future, padding), and what happens when it can."""

import streamlit as st

import ui
from figures import attention as fa
from lessons import one_head, padding
from transformer import TraceInputError
from ui import cached_attention as cached

st.set_page_config(page_title="Masking", page_icon="🎭", layout="wide")
state = ui.sidebar()
L, H = state.layer, state.head
lm = ui.get_model(state.model)
decoder = lm.cfg.causal
WHY = "In training a decoder predicts the next token at **every** position of a text at once: if position i could see token i+1, it would copy the answer and learn nothing."

KINDS = (
    "A decoder like this model uses two masks: the **causal** mask (no peeking at the future) and, when sentences are batched, the **padding** mask.",
    f"**{state.model} is an encoder**: it reads the whole sentence in both directions, so it uses no causal mask, only the **padding** mask when sentences are batched.",
)

st.title("🎭 Masking")
st.markdown(
    "Attention lets each token look at other tokens. A **mask** says where it may *not* look: it adds −∞ to those scores before softmax; e^−∞ = 0, so a hidden token gets weight "
    f"exactly 0 and nothing of it can leak through. {KINDS[not decoder]}"
)
st.latex(r"\alpha = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}\,\tau} + M\right),\qquad M_{ij} = \begin{cases} 0 & \text{may look} \\ -\infty & \text{may not} \end{cases}")

tr = ui.trace_or_stop(state)
s, labels = one_head.head_steps(tr, L, H), tr.encoding.labels
T = len(labels)
st.session_state["masking_pos"] = min(st.session_state.get("masking_pos", 3), T - 1)  # the sentence may have become shorter
for key, default in (("masking_rows", 8), ("masking_other", "The cat sat."), ("masking_encoder", False), ("masking_padmask", True)):
    ui.keep(key, default)  # the parts' own controls keep their values while their tab is closed


def causal() -> None:
    st.latex(r"M^{\mathrm{causal}}_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}")
    if decoder:
        st.markdown(f"Token i may look at itself and every earlier token, never at a later one. Why? {WHY} Move the slider to see what each position may see.")
    else:
        st.info(f"**An encoder uses no causal mask**: every token sees every token. Left, for comparison only, the mask a decoder uses; {WHY[0].lower()}{WHY[1:]} Right: where position i looks.")
    pos = st.slider("Position i", 0, T - 1, key="masking_pos", help="A query position: its row of the mask is outlined in red.") if T > 1 else 0
    later, rest = s.weights[pos, pos + 1 :].sum(), s.weights[pos, : pos + 1].sum()
    col1, col2 = st.columns(2)
    with col1:
        title = "Causal mask (filled = may look, grey = −∞)" if decoder else "A decoder's causal mask: NOT used by this encoder"
        ui.show_figure(fa.mask_heatmap(s.visible if decoder else one_head.causal_mask(T), labels, title, row=pos), key="masking_mask")
    with col2:
        seen = f"may see **{pos + 1}** token(s), positions 0–{pos}; **{T - pos - 1}** later token(s) are hidden"
        st.markdown(f"**Position {pos}** {seen}. The text it may see:" if decoder else f"**Position {pos}** sees all **{T}** tokens. In a decoder it {seen}; it would see only:")
        st.text(tr.encoding.text[: tr.encoding.offsets[pos][1]])
        ui.show_figure(fa.weight_bars(s.weights[pos], labels, f"Where position {pos} looks: layer {L}, head {H}"), key="masking_row")
        st.caption(f"Weight on the hidden (later) tokens: {later:g}, exactly. The visible ones share {rest:.4f}." if decoder else f"Weight on later tokens: {later:.4f} (a decoder's: exactly 0).")


def before_after() -> None:
    if decoder:
        st.markdown("Left: the scaled scores, the future included (computed, then thrown away). Middle: after the mask the future is −∞ (grey). Right: softmax; the grey triangle is exactly 0.")
    else:
        st.info("**Nothing to mask here**: an encoder's scores go into softmax as they are (no −∞, no grey cells). Left the scaled scores, right the weights: the future is used too.")
    figs = {"scaled": fa.scores_heatmap(s.scaled, labels, "Scores before the mask" if decoder else "Scores (nothing masked)", values=False)}
    if decoder:
        figs["masked"] = fa.scores_heatmap(s.masked, labels, "After the mask = before softmax", values=False)
    figs["weights"] = fa.weights_heatmap(s.weights, labels, ~s.visible, "After softmax: weights", values=False)
    for col, (key, fig) in zip(st.columns(len(figs)), figs.items(), strict=True):
        with col:
            ui.show_figure(fig, key=f"masking_{key}")


def future() -> None:
    if not decoder:
        st.info(
            f"**An encoder always sees the future**: {state.model} reads the whole sentence at once, so there is no causal mask to switch off (and no next-token prediction to compare: "
            f"it has no language-model head). Layer {L}, head {H} puts on average **{one_head.future_weight(s.weights)[:-1].mean() if T > 1 else 0:.1%}** of a row's weight on "
            "later tokens. The page *Encoder vs decoder* runs one sentence through an encoder and a decoder side by side."
        )
        ui.show_figure(fa.pattern_heatmap(tr, L, H, f"Weights of layer {L}, head {H}: the upper triangle is the future"), key="masking_open")
        return
    st.markdown(
        "Here the whole model runs again with the causal mask switched off in every layer, and we compare its next-token predictions. It was trained *with* the mask, so it never "
        "learned to use the future: without it, it reads a context it has never seen, and its predictions change, even at the last position (the earlier tokens it reads have "
        f"changed). Probabilities are the model's softmax over all {lm.cfg.vocab_size:,} tokens."
    )
    open_tr = ui.get_trace(state.model, state.sentence, state.temperature, causal=False)
    n_rows = min(T, st.slider("Positions in the table", 1, 32, key="masking_rows", help="How many of the first positions to compare (at most the sentence's length)."))
    table, (top1, rose, n) = cached.future_comparison(state.model, state.sentence, state.temperature, n_rows)
    st.dataframe(table, hide_index=True, key="masking_table")
    st.markdown(
        f"The most likely next token changed at **{top1} of {T}** positions, and the actual next token, now in view, became more likely at **{rose} of {n}**. "
        "Below, the same head without the mask: now row 0 sees all the tokens too."
    )
    ui.show_figure(fa.pattern_heatmap(open_tr, L, H, f"Weights without the mask, layer {L}, head {H}"), key="masking_open")


def padded() -> None:
    both = r"M = M^{\mathrm{causal}} + M^{\mathrm{pad}}" if decoder else r"M = M^{\mathrm{pad}}"
    st.latex(r"M^{\mathrm{pad}}_{ij} = \begin{cases} 0 & \text{token } j \text{ is real} \\ -\infty & \text{token } j \text{ is padding} \end{cases},\qquad " + both)
    st.markdown(
        "To run several sentences at once they must have the same length, so the shorter ones are filled up with a padding token. "
        "The padding mask hides those filler tokens as keys, so no real token ever reads them. Below, your sentence and a second one run as one batch."
    )
    other = st.text_input("Second sentence", key="masking_other", help="Any text; it is padded (or your sentence is) to the same length.")
    c1, c2 = st.columns(2)
    enc_help = "Let every token see the whole sentence, as in an encoder (BERT): only the padding mask then guards." if decoder else f"{state.model} is an encoder: it has no causal mask at all."
    no_causal = c1.toggle("Encoder-style: no causal mask", value=not decoder, disabled=not decoder, key="masking_encoder" if decoder else "masking_is_encoder", help=enc_help)
    causal_on = decoder and not no_causal
    use_pad = c2.toggle("Use the padding mask", key="masking_padmask", help="Off: the padding tokens are visible keys like any other.")
    try:  # an encoder ignores the causal flag: its sentence alone is the page's own trace
        chk = cached.padding_check(state.model, (state.sentence, other), state.temperature, causal_on or not decoder, use_pad)
    except TraceInputError as err:
        st.info(f"Second sentence: {err}")
        return
    lengths, Tb, names = chk.lengths, chk.real.shape[1], ("A (yours)", "B (second)")
    ui.show_figure(fa.padding_heatmap(chk.real, [e.labels for e in chk.encodings], names, f"The batch: {Tb} positions (grey = padding)"), key="masking_batch")
    b = int(lengths[1] < lengths[0])  # the shorter sentence
    col1, col2 = st.columns(2)
    with col1:
        ui.show_figure(fa.mask_heatmap(chk.visible[b], chk.padded_labels(b), f"Mask of sentence {'AB'[b]} in the batch (every layer and head)"), key="masking_padded_mask")
    with col2:
        st.markdown(
            f"Sentence {'AB'[b]} has {lengths[b]} tokens and {Tb - lengths[b]} padding position(s). Each real token's output should not depend on the padding. "
            f"Check: run each sentence alone, then compare its {chk.output_words} with those from the padded batch."
        )
        for name, diff in zip(names, chk.differences, strict=True):
            st.metric(f"Sentence {name}: largest {'logit' if chk.output == 'logits' else 'output'} difference, batch vs alone", f"{diff:.2e}")
        kind, message = padding.verdict(use_pad, causal_on)
        getattr(st, kind)(message)


PARTS = {"1 · The causal mask": causal, "2 · Before and after the mask": before_after, "3 · Seeing the future": future, "4 · The padding mask": padded}
ui.lazy_tabs(PARTS, "masking_part")  # only the open part runs: parts 3 and 4 run the model again (mask off; a padded batch and each sentence alone)
