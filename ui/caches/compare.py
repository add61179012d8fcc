"""Encoder vs decoder: one sentence through an encoder and a decoder, word by word and sink by sink."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from figures import compare as fcmp
from lessons import encoder_decoder as ed

from ..models import TraceKey, get_model, get_trace, shared


@shared(max_entries=32)
def compare_grid(key: TraceKey, word: int, target: int) -> tuple[np.ndarray, go.Figure]:
    """The weight from word `word` (its last token) on word `target` (all its tokens) in every head, and its heatmap."""
    tr = get_trace(key)
    src, tgt = ed.pair_tokens(tr.encoding, key.text, word, target)  # words of the whole text (a cut trace holds fewer)
    grid = ed.weight_grid(tr, get_model(key.model).cfg.n_layer, src, tgt)  # (n_layer, n_head)
    layer, head, _ = ed.best_head(grid)
    ws = ed.words(key.text)
    title = f"{ed.short_name(key.model)}: weight from “{ws[word].text}” on “{ws[target].text}”"
    return grid, fcmp.head_grid(grid, (layer, head), title)


@shared(max_entries=16)
def compare_sinks(keys: tuple[TraceKey, ...]) -> tuple[go.Figure | None, list[ed.Sinks]]:
    """Per layer, an encoder's share of attention on [CLS] and [SEP] and a decoder's on its first token, in one chart
    (None when a text is too short to measure); and each model's numbers."""
    sinks, shares, evens = [], {}, {}
    for key in keys:
        cfg = get_model(key.model).cfg
        s = ed.sinks(get_trace(key), cfg.n_layer, cfg.causal)
        if s is None:
            return None, []
        label = ed.short_name(key.model)  # a short legend entry; the page's text names each model's sink tokens
        sinks.append(s)
        shares[label], evens[label] = s.share, s.even
    return fcmp.sink_lines(shares, evens, "Attention on the sink tokens, averaged over heads and tokens"), sinks
