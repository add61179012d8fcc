"""Encoder–decoder figures: the cross-attention alignment (target × source) with the
gold alignment, agreement per head."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .colours import DIVERGING, GREEN, HIGHLIGHT, SEQUENTIAL
from .common import bars, esc, figure, heatmap
from .reuse import reused

SHOW_VALUES_MAX = 16 * 16  # write the weights into the cells up to this many cells
GOLD = HIGHLIGHT


@reused
def alignment_heatmap(
    weights: np.ndarray,
    written: Sequence[str],
    source: Sequence[str],
    gold: Sequence[tuple[int, int]] = (),
    title: str = "",
) -> go.Figure:
    """Cross-attention weights (T, S): row i = the decoder position that wrote written[i], column j = source word j.

    `gold` (source index, target index) pairs are drawn as open red squares on top.
    """
    T, S = np.shape(weights)
    values = T * S <= SHOW_VALUES_MAX
    fig = heatmap(
        weights,
        source,
        written,
        title=title,
        x_title="English word (key, value: encoder)",
        y_title="French word written (query: decoder)",
        zmin=0,
        zmax=1,
        value_name="weight",
        show_values=values,
        height=max(320, 120 + 28 * T),
        # the weights written in the cells need no colour bar (~110 px of a narrow column)
        extra={"showscale": not values},
    )
    if not len(gold):
        return fig
    s, t = np.array(gold).T
    hover = [f"gold: {esc(source[j])} ↔ {esc(written[i])}" for j, i in zip(s, t, strict=True)]
    marker = {"symbol": "square-open", "size": 22, "color": GOLD, "line": {"width": 3, "color": GOLD}}
    squares = {
        "type": "scatter",
        "x": s,
        "y": t,
        "mode": "markers",
        "marker": marker,
        "name": "gold alignment",
        "text": hover,
        "hovertemplate": "%{text}<extra></extra>",
        "cliponaxis": False,  # a square at the edge stands out of the plot…
    }
    legend = {"orientation": "h", "x": 1, "y": 1.01, "xanchor": "right", "yanchor": "bottom"}
    base = fig.to_dict()
    layout = base["layout"]
    cells = {  # …rather than pad the axes (autorange would): the cells keep the whole plot, and their numbers its size
        "xaxis": {**layout["xaxis"], "range": [-0.5, S - 0.5], "autorange": False},
        "yaxis": {**layout["yaxis"], "range": [T - 0.5, -0.5], "autorange": False},  # row 0 at the top
    }
    return figure([*base["data"], squares], {**layout, **cells, "showlegend": True, "legend": legend})


@reused
def scores_heatmap(scores: np.ndarray, written: Sequence[str], source: Sequence[str], title: str) -> go.Figure:
    """Cross-attention scores (T, S), before softmax: nothing is masked, every French
    position may look at every English word."""
    axes = {"x_title": "English source word (key)", "y_title": "French word written (query)"}
    return heatmap(
        scores,
        source,
        written,
        title=title,
        colorscale=DIVERGING,
        zmid=0,
        value_name="score",
        height=max(320, 120 + 28 * len(written)),
        **axes,
    )


@reused
def agreement_heatmap(scores: np.ndarray, title: str) -> go.Figure:
    """Alignment agreement of every cross-attention head, (n_layer, nh), in [0, 1]."""
    L, H = scores.shape
    return heatmap(
        scores,
        [f"head {h}" for h in range(H)],
        [f"layer {layer}" for layer in range(L)],
        title=title,
        colorscale=SEQUENTIAL,
        zmin=0,
        zmax=1,
        value_name="agreement",
        show_values=True,
        height=140 + 40 * L,
    )


@reused
def probability_bars(top: Sequence[tuple[str, float]], title: str) -> go.Figure:
    """The most likely next words at one decoding step, (word, probability) pairs."""
    probs = np.array([p for _, p in top], dtype=np.float32)  # (k,)
    return bars(
        probs, [w for w, _ in top], title=title, x_title="next word", y_title="probability", height=280, color=GREEN
    )


@reused
def source_bars(row: np.ndarray, source: Sequence[str], title: str) -> go.Figure:
    """One decoder position's cross-attention weights over the source words."""
    return bars(row, source, title=title, x_title="English source word", y_title="cross-attention weight", height=280)
