"""Next token: the logit lens."""

from __future__ import annotations

import threading

import numpy as np
import plotly.graph_objects as go

from figures.prediction import lens_heatmap
from lessons import logit_lens as ll

from ..models import CLASS_SENTENCES, TraceKey, get_model, get_trace, shared

LENS_TOP = 10  # the lens table lists up to this many tokens per stage


@shared(max_entries=CLASS_SENTENCES)
def lens_columns(key: TraceKey) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], threading.Lock]:
    """Position → the lens's top-1 token ids and probabilities at every stage, (L+1,) each: filled as windows need
    them, so moving the chosen position computes only the positions new to the window (in one batch: SmolLM2's
    unembedding is 113 MB, read once per batch). Shared by every session: written only under its lock."""
    return {}, threading.Lock()


@shared(max_entries=CLASS_SENTENCES)
def lens_figure(key: TraceKey, pos: int) -> tuple[go.Figure, range]:
    """The logit-lens heatmap on the window of positions around `pos` (pos outlined), and the window."""
    loaded, tr = get_model(key.model), get_trace(key)
    window = ll.window(pos, len(tr.encoding), ll.window_size(loaded.cfg.vocab_size))
    store, lock = lens_columns(key)
    with lock:
        if missing := [p for p in window if p not in store]:
            lz = ll.logit_lens(loaded.model, tr, missing, keep_logits=False)
            store.update({p: (lz.top_ids[:, j], lz.top_probs[:, j]) for j, p in enumerate(missing)})
        top_ids, top_probs = (np.stack([store[p][k] for p in window], axis=1) for k in (0, 1))  # (L+1, P) each
    names = loaded.tokenizer.vocab_labels()
    top_labels = [[names[i] for i in row] for row in top_ids]
    stages, shown = ll.stage_names(loaded.cfg.n_layer), tr.encoding.labels[window.start : window.stop]
    return lens_heatmap(top_probs, top_labels, stages, window, shown, chosen=pos), window


@shared(max_entries=CLASS_SENTENCES)
def lens_column(key: TraceKey, pos: int) -> ll.LensColumn:
    """The logit lens at one position, with the LENS_TOP most probable tokens of every stage."""
    loaded = get_model(key.model)
    return ll.column(loaded.model, get_trace(key), pos, loaded.tokenizer.vocab_labels(), LENS_TOP)


def lens_table(key: TraceKey, pos: int, n: int) -> dict[str, list[str]]:
    """The n (≤ LENS_TOP) most probable next tokens of every stage at `pos`."""
    return {stage: row[:n] for stage, row in lens_column(key, pos).table.items()}
