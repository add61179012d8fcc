"""Masking: predictions with and without the causal mask, the padded batch; one head's weights (the home page's)."""

from __future__ import annotations

from dataclasses import replace

import plotly.graph_objects as go

from figures import attention as fa
from lessons import one_head, padding

from ..models import CLASS_SENTENCES, TraceKey, get_model, get_trace, shared, together


@shared(max_entries=CLASS_SENTENCES)
def future_comparison(key: TraceKey, n_rows: int) -> tuple[list[dict], one_head.Changes]:
    """The next-token table of the first n_rows positions of key's trace and of the same text without the causal mask,
    and how many predictions changed (softmax over the whole vocabulary at every position: ~0.1 s for SmolLM2 at 64
    tokens, so cached). The two forward passes run at the same time."""
    with_mask, without = get_trace(key), get_trace(key.but(causal=False))
    together(lambda: with_mask["logits"], lambda: without["logits"])
    names = get_model(key.model).tokenizer.vocab_labels()
    return one_head.future_table(with_mask, without, names, n_rows), one_head.changes(with_mask, without)


@shared(max_entries=CLASS_SENTENCES)
def padding_check(key: TraceKey, other: str, use_padding_mask: bool) -> padding.PaddingCheck:
    """key's text and `other` (same model and interventions) as one right-padded batch: its mask, and each text's final
    output in the batch against the text alone. Keeps no logits (SmolLM2's are 48 MiB per 256 tokens): only the mask
    and the differences: a few KiB, so the entries hold a class's sentences (each made anew costs up to three forward
    passes, 0.2–0.4 s of CPU on SmolLM2)."""
    lm, texts = get_model(key.model), (key.text, other)
    output, traces = padding.final_output(lm.cfg), [get_trace(replace(key, text=text)) for text in texts]
    names = [output, padding.MASK_NAME]
    batch, *alone = together(
        lambda: padding.padded_forward(lm.model, lm.tokenizer, texts, key.iv, use_padding_mask, names),
        *[lambda tr=tr: tr[output] for tr in traces],
    )  # the batch and each text alone at the same time
    return padding.check(batch, output, alone)


@shared(max_entries=32)
def pattern_figure(key: TraceKey, layer: int, head: int) -> go.Figure:
    """One head's weights in key's trace, its future blank (the home page's live map): built once per input, not on
    every run (~1.4 ms of a home-page rerun's ~28)."""
    return fa.pattern_heatmap(get_trace(key), layer, head)
