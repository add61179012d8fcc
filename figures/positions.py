"""Positional-encoding figures: the sinusoid table, a few of its waves, the binary counter, position similarity."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .colours import BINARY, DIVERGING, PALETTE, SEQUENTIAL
from .common import figure, heatmap, layout_dict, title_dict
from .reuse import reused


@reused
def encoding_heatmap(pe: np.ndarray, title: str) -> go.Figure:
    """PE as a (position × dimension) heatmap on a fixed −1…1 scale."""
    return heatmap(
        pe, title=title, x_title="dimension i", y_title="position", colorscale=DIVERGING, zmin=-1, zmax=1, zmid=0,
        value_name="PE", height=460,
    )


@reused
def waves(pe: np.ndarray, dims: Sequence[int]) -> go.Figure:
    """Chosen columns of PE drawn as curves over the positions."""
    pos = np.arange(len(pe))
    traces = [
        {
            "type": "scatter",
            "x": pos,
            "y": pe[:, d],
            "mode": "lines+markers",
            "marker": {"size": 4},
            "line": {"color": PALETTE[n % len(PALETTE)]},
            "name": f"dim {d} ({'cos' if d % 2 else 'sin'})",
        }
        for n, d in enumerate(dims)
    ]
    axes = {
        "xaxis": {"title": title_dict("position")},
        "yaxis": {"title": title_dict("PE(position, dim)"), "range": [-1.1, 1.1]},
    }
    return figure(
        traces, layout_dict("A few dimensions as waves: low dimensions wiggle fast, high ones slowly", 360, **axes)
    )


@reused
def bits_heatmap(bits: np.ndarray) -> go.Figure:
    """bits[pos, b] of a binary counter as a 0/1 heatmap, bit 0 (the fastest) on the left."""
    names = [str(b) for b in range(bits.shape[1])]  # "bit 0", "bit 1", … turn vertical in a narrow column and overprint
    cells = {"texttemplate": "%{z:.0f}", "showscale": False}  # each cell writes its 0 or 1: no colour bar needed
    return heatmap(
        bits,
        names,
        None,
        title="A binary counter",
        x_title="bit (0 flips every step)",
        y_title="position",
        colorscale=BINARY,
        zmin=0,
        zmax=1,
        value_name="bit",
        height=460,
        extra=cells,
    )


@reused
def similarity_heatmap(sim: np.ndarray, title: str) -> go.Figure:
    """PE_i · PE_j for every pair of positions."""
    return heatmap(
        sim, title=title, x_title="position j", y_title="position i", colorscale=SEQUENTIAL, value_name="PE_i · PE_j",
        height=460,
    )
