"""Masking: where a token may not look (the future, padding), and what happens when it can."""

import streamlit as st

import ui
from figures import attention as fa
from figures.narrow import readable_from
from lessons import one_head, padding
from transformer import TraceInputError, visible_mask
from ui.caches import masking as cached

state = ui.sidebar()
L, H = state.layer, state.head
cfg = ui.get_model(state.model).cfg
decoder = cfg.causal
read = one_head.mask_reading(state.model, decoder, cfg.vocab_size)  # the page's words for a decoder or an encoder

st.title("🎭 Masking")
ui.explain(read.intro)
st.latex(
    r"\alpha = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}\,\tau} + M\right),\qquad "
    r"M_{ij} = \begin{cases} 0 & \text{may look} \\ -\infty & \text{may not} \end{cases}"
)

tr = ui.trace_or_stop(state.key)
s, labels = one_head.head_steps(tr, L, H), tr.encoding.labels
T = len(labels)


def causal() -> None:
    st.latex(r"M^{\mathrm{causal}}_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}")
    ui.note(*read.causal)
    help_pos = "A query position: its row of the mask is outlined in red."
    pos = st.slider("Position i", 0, T - 1, **ui.kept_within("masking_pos", 3, 0, T - 1), help=help_pos) if T > 1 else 0
    seen, weight_note = one_head.position_words(s.weights, pos, decoder)
    col1, col2 = st.columns(2)
    with col1:
        title = (
            "Causal mask (filled = may look, grey = −∞)"
            if decoder
            else "A decoder's causal mask: NOT used by this encoder"
        )
        shown = s.visible if decoder else visible_mask(T, causal=True)[0, 0].numpy()  # (T, T)
        ui.show_figure(fa.mask_heatmap(shown, labels, title, row=pos), key="masking_mask")
    with col2:
        st.markdown(seen)
        st.text(tr.encoding.text[: tr.encoding.offsets[pos][1]])
        ui.show_figure(
            fa.weight_bars(s.weights[pos], labels, f"Where position {pos} looks: layer {L}, head {H}"),
            key="masking_row",
        )
        st.caption(weight_note)


def before_after() -> None:
    ui.note(*read.before_after)
    figs = {
        "masking_scaled": fa.scores_heatmap(
            s.scaled, labels, "Scores before the mask" if decoder else "Scores (nothing masked)", values=False
        )
    }
    if decoder:
        figs["masking_masked"] = fa.scores_heatmap(s.masked, labels, "After the mask = before softmax", values=False)
    figs["masking_weights"] = fa.weights_heatmap(s.weights, labels, ~s.visible, "After softmax: weights", values=False)
    ui.side_by_side(figs)


def future() -> None:
    if not decoder:
        st.info(one_head.encoder_future_note(state.model, s.weights, L, H))
        ui.show_figure(
            fa.pattern_heatmap(tr, L, H, f"Weights of layer {L}, head {H}: the upper triangle is the future"),
            key="masking_open",
        )
        return
    ui.explain(read.unmasked)
    open_tr = ui.get_trace(state.key.but(causal=False))
    help_rows = "How many of the first positions to compare (at most the sentence's length)."
    n_rows = min(T, st.slider("Positions in the table", 1, 32, **ui.kept("masking_rows", 8), help=help_rows))
    table, changed = cached.future_comparison(state.key.untempered, n_rows)  # logits: τ on weights changes none
    with ui.after_figures("masking_future_tables"):  # presenter view: under the weights
        st.dataframe(
            table,
            hide_index=True,
            key="masking_table",
            column_order=one_head.FUTURE_ORDER,
            column_config=one_head.FUTURE_COLUMNS,
        )
        st.markdown("**The three most likely next tokens** at each position, with and without the mask:")
        st.dataframe(
            one_head.top_rows(table), hide_index=True, key="masking_top", column_config=one_head.FUTURE_COLUMNS
        )
        st.markdown(one_head.changes_note(changed, n_rows))
        ui.as_trained(state, "The predictions, with and without the mask")
    ui.show_figure(
        fa.pattern_heatmap(open_tr, L, H, f"Weights without the mask, layer {L}, head {H}"), key="masking_open"
    )


def padded() -> None:
    st.latex(padding.mask_latex(decoder))
    ui.explain(
        "To run several sentences at once they must have the same length, "
        "so the shorter ones are filled up with a padding token. The padding mask hides those filler tokens as keys, "
        "so no real token ever reads them. Below, your sentence and a second one run as one batch."
    )
    other = st.text_input(
        "Second sentence",
        **ui.kept("masking_other", "The cat sat."),
        help="Any text; it is padded (or your sentence is) to the same length.",
    )
    c1, c2 = st.columns(2)
    enc_key, enc_help = "masking_encoder" if decoder else "masking_is_encoder", read.encoder_style_help
    no_causal = c1.toggle(
        "Encoder-style: no causal mask", disabled=not decoder, **ui.kept(enc_key, not decoder), help=enc_help
    )
    causal_on = decoder and not no_causal
    use_pad = c2.toggle(
        "Use the padding mask",
        **ui.kept("masking_padmask", True),
        help="Off: the padding tokens are visible keys like any other.",
    )
    try:  # an encoder ignores the causal flag: its sentence alone is the page's own trace
        chk = cached.padding_check(state.key.untempered.but(causal=causal_on or not decoder), other, use_pad)
    except TraceInputError as err:
        st.info(f"Second sentence: {err}")
        return
    lengths, Tb, names = chk.lengths, chk.real.shape[1], ("A (yours)", "B (second)")
    batch = (chk.real, [e.labels for e in chk.encodings], names, f"The batch: {Tb} positions (grey = padding)")
    by_row = fa.padding_heatmap(*batch)
    # one column per text where one row per text would write its tokens too small to read (a phone, many positions)
    by_column = ui.drawn_narrow("masking_batch") or not ui.drawn_at_least(
        "masking_batch", readable_from(by_row.to_dict(), False, words=True), "tokens in rows"
    )
    ui.show_figure(fa.padding_heatmap(*batch, by_column=True) if by_column else by_row, key="masking_batch")
    b = int(lengths[1] < lengths[0])  # the shorter sentence
    col1, col2 = st.columns(2)
    with col1:
        ui.show_figure(
            fa.mask_heatmap(
                chk.visible[b], chk.padded_labels(b), f"Mask of sentence {'AB'[b]} in the batch (every layer and head)"
            ),
            key="masking_padded_mask",
        )
    with col2:
        st.markdown(padding.shorter_note(chk, b))
        for name, diff in zip(names, chk.differences, strict=True):
            st.metric(
                (
                    f"Sentence {name}: "
                    f"largest {'logit' if chk.output == 'logits' else 'output'} difference, batch vs alone"
                ),
                f"{diff:.2e}",
            )
        ui.note(*padding.verdict(use_pad, causal_on))


PARTS = {
    "1 · The causal mask": causal, "2 · Before and after the mask": before_after, "3 · Seeing the future": future,
    "4 · The padding mask": padded,
}
# only the open part runs: parts 3 and 4 run the model again (mask off; a padded batch and each sentence alone)
ui.lazy_tabs(PARTS, "masking_part")
