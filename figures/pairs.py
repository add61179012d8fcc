"""Minimal pairs: the heads ranked by how much one token's row changes between two sentences, and the two rows side
by side (lessons/pairs.py computes them). Labels are escaped by grouped_bars (figures.common.esc)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .common import grouped_bars
from .reuse import reused

TOP_HEADS = 12  # heads in the ranking


@reused
def ranking(
    names: Sequence[str], tv: np.ndarray, delta: np.ndarray | None, title: str, top: int = TOP_HEADS
) -> go.Figure:
    """The `top` heads with the largest total variation, most changed first; beside each, |Δ weight| on the target
    when there is one. names, tv, delta: one per head, in any order (flattened (n_layer, n_head))."""
    tv = np.asarray(tv, dtype=np.float64).ravel()
    order = np.argsort(-tv, kind="stable")[:top]
    series = {"total variation of the row": tv[order]}
    if delta is not None:
        series["|Δ weight| on the target"] = np.asarray(delta, dtype=np.float64).ravel()[order]
    return grouped_bars(
        series, [names[k] for k in order], title=title, x_title="head", y_title="change", y_range=(0, 1)
    )


@reused
def rows_side_by_side(row_a: np.ndarray, row_b: np.ndarray, slots: Sequence[str], title: str) -> go.Figure:
    """One token's weights in sentence 1 and in sentence 2, side by side on the slots of the alignment (a token both
    sentences share is one slot; a token only one has shows that sentence's bar alone)."""
    return grouped_bars(
        {"sentence 1": row_a, "sentence 2": row_b},
        slots,
        title=title,
        x_title="token looked at",
        y_title="weight α",
        y_range=(0, 1),
        height=400,  # the tokens' names, turned, and the legend take ~200 px below the plot
    )
