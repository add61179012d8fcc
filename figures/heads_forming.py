"""Heads-forming figures: curves over training steps (loss, head scores) with the current step and the phase change
marked, and every head's pattern on the probe at one step."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .colours import DARK, FAINT, GREY, HIGHLIGHT, HIGHLIGHT_TEXT, LAYER_FAMILIES, rgba
from .common import LEGEND_BELOW, Spec, esc, figure, layout_dict, title_dict
from .multihead import PANELS_PER_ROW, weight_panels
from .reuse import reused

LAYER_COLORS = LAYER_FAMILIES  # blues, oranges
BAND_COLOR = rgba(HIGHLIGHT, 0.12)
CURRENT_COLOR = DARK
STRIPE_COLOR = rgba(HIGHLIGHT, 0.8)  # where an induction head's stripe lies


def head_colors(n_layer: int, n_head: int) -> list[str]:
    """One colour per head, layer by layer: a family of colours per layer (blues for layer 0, oranges for layer 1)."""
    return [
        LAYER_COLORS[layer % len(LAYER_COLORS)][head % len(LAYER_COLORS[0])]
        for layer in range(n_layer)
        for head in range(n_head)
    ]


@reused
def step_lines(
    steps: np.ndarray,
    series: dict[str, np.ndarray],
    title: str,
    y_title: str,
    *,
    current: int,
    band: tuple[int, int] | None = None,
    band_text: str = "",
    threshold: float | None = None,
    colors: Sequence[str] | None = None,
    faint: tuple[str, np.ndarray, np.ndarray] | None = None,
    height: int = 340,
) -> go.Figure:
    """Lines over training steps, one per named series (y (S,) at `steps`); a dashed line at the step `current`, a
    shaded band from band[0] to band[1] (the phase change) labelled band_text, a dotted line at y = threshold, and
    `faint` = (name, x, y) drawn first in light grey (e.g. every step's own training loss)."""
    x = np.asarray(steps, dtype=np.float32)
    data = []
    if faint is not None:
        name, fx, fy = faint
        data.append(
            {
                "type": "scatter",
                "x": np.asarray(fx, dtype=np.float32),
                "y": np.asarray(fy, dtype=np.float32),
                "mode": "lines",
                "name": esc(name),
                "line": {"color": FAINT, "width": 1},
                "hovertemplate": f"{esc(name)}<br>step %{{x}}: %{{y:.3f}}<extra></extra>",
            }
        )
    for k, (name, y) in enumerate(series.items()):
        line = {"width": 2} | ({"color": colors[k]} if colors else {})
        data.append(
            {
                "type": "scatter",
                "x": x,
                "y": np.asarray(y, dtype=np.float32),
                "mode": "lines+markers",
                "marker": {"size": 4},
                "name": esc(name),
                "line": line,
                "hovertemplate": f"{esc(name)}<br>step %{{x}}: %{{y:.3f}}<extra></extra>",
            }
        )
    shapes = [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": current,
            "x1": current,
            "y0": 0,
            "y1": 1,
            "line": {"color": CURRENT_COLOR, "dash": "dash", "width": 1.5},
        }
    ]
    notes = [
        {
            "text": f"step {current}",
            "xref": "x",
            "yref": "paper",
            "x": current,
            "y": 1,
            "yanchor": "bottom",
            "showarrow": False,
            "font": {"size": 11},
        }
    ]
    if band is not None:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": band[0],
                "x1": band[1],
                "y0": 0,
                "y1": 1,
                "fillcolor": BAND_COLOR,
                "line": {"width": 0},
                "layer": "below",
            }
        )
        notes.append(
            {
                "text": esc(band_text),
                "xref": "x",
                "yref": "paper",
                "x": (band[0] + band[1]) / 2,
                "y": 0.02,
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 11, "color": HIGHLIGHT_TEXT},
            }
        )
    if threshold is not None:
        shapes.append(
            {
                "type": "line",
                "xref": "paper",
                "yref": "y",
                "x0": 0,
                "x1": 1,
                "y0": threshold,
                "y1": threshold,
                "line": {"color": GREY, "dash": "dot", "width": 1},
            }
        )
    axes = {"xaxis": {"title": title_dict("training step")}, "yaxis": {"title": title_dict(y_title)}}
    # below: on a phone it wraps into rows plotly makes room for
    lay = layout_dict(title, height, **axes, shapes=shapes, annotations=notes, legend=LEGEND_BELOW)
    return figure(data, lay)


@reused
def head_patterns(
    patterns: np.ndarray,
    labels: Sequence[str],
    titles: Sequence[str],
    title: str,
    *,
    repeat_from: int,
    run: int,
    height: int = 330,
    per_row: int = PANELS_PER_ROW,
) -> go.Figure:
    """Every head's pattern, patterns (n_layer, n_head, T, T), one row of maps per layer (or several, when fewer than
    n_head maps fit in a row: per_row), on one colour scale 0…1.

    On each map a grey line marks where the probe's second copy starts (rows below it: queries of the repeated run),
    and a red dotted line runs through the cells an induction head lights up: query i → key i − run + 1, the token
    after the earlier copy."""
    n_layer, n_head, T, _ = patterns.shape
    # a layer's heads fill whole rows
    per_row = max(d for d in range(1, n_head + 1) if n_head % d == 0 and d <= max(1, per_row))
    visible = np.tri(T, dtype=bool)  # a decoder: query i sees keys j ≤ i
    spec = weight_panels(
        patterns.reshape(n_layer * n_head, T, T), labels, visible, titles, title, height=height, per_row=per_row
    ).to_dict()
    shapes = []
    for trace in spec["data"]:  # each map's own axes, as the panels were laid out
        axes = {"xref": trace.get("xaxis", "x"), "yref": trace.get("yaxis", "y")}
        shapes.append(
            {
                "type": "line",
                **axes,
                "x0": -0.5,
                "x1": T - 0.5,
                "y0": repeat_from - 0.5,
                "y1": repeat_from - 0.5,
                "line": {"color": GREY, "width": 1},
            }
        )
        shapes.append(
            {
                "type": "line",
                **axes,
                "x0": repeat_from - run + 1,
                "x1": T - run,
                "y0": repeat_from,
                "y1": T - 1,
                "line": {"color": STRIPE_COLOR, "dash": "dot", "width": 1.5},
            }
        )
    return Spec({**spec, "layout": {**spec["layout"], "shapes": shapes}})
