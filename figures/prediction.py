"""Next-token figures: the distribution before and after top-k / top-p, and the logit lens."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .colours import HIGHLIGHT, SEQUENTIAL
from .common import esc, figure, grouped_bars, layout_dict, tick_labels, title_dict, token_axis
from .reuse import reused

# short, so that the legend keeps to one row (p and p′ are written out in the page's formulas)
BEFORE = "p: all tokens"
AFTER = "p′: kept tokens"


@reused
def probability_bars(before: np.ndarray, after: np.ndarray, labels: Sequence[str], title: str) -> go.Figure:
    """The top tokens' probabilities before filtering and after (0 for a dropped token), side by side."""
    return grouped_bars({BEFORE: before, AFTER: after}, labels, title=title, y_title="probability")


@reused
def lens_heatmap(
    top_probs: np.ndarray,
    top_labels: Sequence[Sequence[str]],
    stages: Sequence[str],
    positions: Sequence[int],
    input_labels: Sequence[str],
    chosen: int | None = None,
) -> go.Figure:
    """Stage × position: each cell names the stage's most probable next token, coloured by its probability.

    top_probs (S, P); top_labels S rows of P labels;
    positions (P,) the token positions shown, input_labels their tokens;
    chosen: a position (one of `positions`) to outline.
    """
    z = np.asarray(top_probs, dtype=np.float32)  # (S, P)
    inputs = [esc(s) for s in input_labels]
    hover = [
        [
            (
                f"{esc(stage)}, position {pos} ({inputs[j]})<br>top-1 next token: "
                f"{esc(top_labels[i][j])}<br>p = {z[i, j]:.4f}"
            )
            for j, pos in enumerate(positions)
        ]
        for i, stage in enumerate(stages)
    ]
    hm = {
        "type": "heatmap",
        "z": z,
        "x": np.arange(len(positions)),
        "y": np.arange(len(stages)),
        "text": [tick_labels(row) for row in top_labels],
        "texttemplate": "%{text}",
        "textfont": {"size": 10},
        "hovertext": hover,
        "hovertemplate": "%{hovertext}<extra></extra>",
        "colorscale": SEQUENTIAL,
        "zmin": 0,
        "zmax": 1,
        "colorbar": {"thickness": 12, "title": {"text": "p(top-1)"}},
    }
    shapes = []
    if chosen is not None and chosen in positions:
        j = list(positions).index(chosen)
        shapes.append(
            {
                "type": "rect",
                "x0": j - 0.5,
                "x1": j + 0.5,
                "y0": -0.5,
                "y1": len(stages) - 0.5,
                "line": {"color": HIGHLIGHT, "width": 3},
            }
        )
    x_axis = token_axis(input_labels, f"position {positions[0]}–{positions[-1]} (the token read there)")
    y_axis = {
        "tickmode": "array",
        "tickvals": list(range(len(stages))),
        "ticktext": [esc(s) for s in stages],
        "title": title_dict("stream read"),
    }
    return figure(
        [hm],
        layout_dict(
            "Logit lens: the most probable next token at every stage",
            120 + 48 * len(stages),
            xaxis=x_axis,
            yaxis=y_axis,
            shapes=shapes or None,
        ),
    )
