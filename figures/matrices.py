"""Small matrices drawn with their numbers in every cell (the lecture's worked example)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .colours import DIVERGING, SEQUENTIAL
from .common import heatmap
from .reuse import reused

WEIGHTS_EXTRA_HEIGHT = 160
CELL_FORMAT = "%{z:.3~g}"  # d3-format: 2 → "2", 0.98522 → "0.985", 5.7735 → "5.77"


@reused
def matrix(
    m: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str,
    row_title: str = "",
    col_title: str = "",
    zmin: float | None = None,
    zmax: float | None = None,
    extra_height: int = 0,
) -> go.Figure:
    """A (rows, cols) matrix as a heatmap with each value written in its cell;
    diverging colours when it holds both signs."""
    m = np.asarray(m, dtype=np.float64)
    signed = m.size > 0 and m.min() < 0 < m.max()
    return heatmap(
        m,
        col_labels,
        row_labels,
        title=title,
        x_title=col_title,
        y_title=row_title,
        colorscale=DIVERGING if signed else SEQUENTIAL,
        zmid=0.0 if signed else None,
        zmin=zmin,
        zmax=zmax,
        height=110 + 45 * m.shape[0] + extra_height,
        # the number in every cell, formatted by plotly from z itself; so no colour bar, which
        # would take ~110 px of a narrow column
        extra={"texttemplate": CELL_FORMAT, "showscale": False},
    )


def lecture_figures(m: dict[str, np.ndarray], words: Sequence[str], dims: Sequence[str]) -> dict[str, go.Figure]:
    """Every matrix of the lecture's worked example (lessons.lecture.STEPS), with its title and axes."""
    words_dims = (words, dims, "", "")
    shapes = {  # name → (title, rows, cols, row title, col title)
        "X": (f"X ({len(words)} words × {len(dims)} dims)", *words_dims),
        **{w: (w, dims, dims, "input dim", "output dim") for w in ("W_Q", "W_K", "W_V")},
        **{v: (f"{v} = X·W_{v}", *words_dims) for v in ("Q", "K", "V")},
        "scores": ("scores = Q·Kᵀ", words, words, "query", "key"),
        "scaled": ("scores ÷ √3", words, words, "query", "key"),
        "weights": ("weights = softmax (rows)", words, words, "query", "key"),
        "attention": ("attention = weights·V", *words_dims),
    }
    # the weights are the example's point: on a 0…1 scale, and taller than the others (the page draws them full width)
    ranges = {"weights": {"zmin": 0.0, "zmax": 1.0, "extra_height": WEIGHTS_EXTRA_HEIGHT}}
    return {
        name: matrix(m[name], rows, cols, title=title, row_title=rt, col_title=ct, **ranges.get(name, {}))
        for name, (title, rows, cols, rt, ct) in shapes.items()
    }
