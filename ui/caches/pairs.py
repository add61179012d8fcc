"""Minimal pairs (ui/pairs.py, on One head, Multi-head, Context and Encoder vs decoder): one token's row in every head
of two sentences' traces, compared; and the section's figures."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from figures import pairs as fp
from lessons import encoder_decoder as ed
from lessons import heads, pairs

from ..models import TraceKey, get_trace, shared


@shared(max_entries=32)
def comparison(key: TraceKey, key_b: TraceKey, position: int, target: int | None) -> pairs.Comparison | None:
    """Token `position` of key's trace against its token in key_b's, in every head (every layer runs); target: a
    token of key's trace whose weight is compared too. None when the token has no counterpart in key_b's text."""
    return pairs.compare(get_trace(key), get_trace(key_b), position, target)


@shared(max_entries=32)
def ranking_figure(key: TraceKey, key_b: TraceKey, position: int, target: int | None) -> go.Figure:
    """The heads most changed between the two sentences, for the token."""
    c = comparison(key, key_b, position, target)
    names = [heads.head_name(layer, head) for layer in range(c.tv.shape[0]) for head in range(c.tv.shape[1])]
    label = get_trace(key).encoding.labels[position]
    return fp.ranking(
        names, c.tv, c.delta, f"{ed.short_name(key.model)}: the heads whose row for “{label}” changes most"
    )


@shared(max_entries=64)
def rows_figure(
    key: TraceKey, key_b: TraceKey, position: int, target: int | None, layer: int, head: int
) -> go.Figure:
    """The token's row in one head, in both sentences side by side on the alignment's slots."""
    tr_a, tr_b = get_trace(key), get_trace(key_b)
    c = comparison(key, key_b, position, target)
    pattern = f"blocks.{layer}.attn.hook_pattern"
    row_a = pairs.on_slots(tr_a[pattern][head, c.a], c.slots[0])  # (slots,)
    row_b = pairs.on_slots(tr_b[pattern][head, c.b], c.slots[1])
    names = pairs.slot_labels(c.slots, tr_a.encoding.labels, tr_b.encoding.labels)
    title = f"Weights of “{tr_a.encoding.labels[c.a]}”, layer {layer}, head {head}: TV {c.tv[layer, head]:.2f}"
    return fp.rows_side_by_side(np.asarray(row_a), np.asarray(row_b), names, title)
