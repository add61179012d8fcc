"""Encoder vs decoder figures: each model's tokens, one word's attention row, the word → target weight of every
head, and the share of attention on the sink tokens per layer."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .colours import (
    BLUE,
    GREEN,
    GREY,
    HIGHLIGHT,
    LIGHT_GREEN,
    LIGHT_GREY,
    LIGHT_RED,
    ORANGE,
    SEQUENTIAL,
    TEXT_MUTED,
    VERMILLION,
    WHITE,
)
from .common import esc, figure, heatmap, layout_dict, title_dict, token_axis
from .embeddings import chip_figure
from .reuse import reused

WORD_COLOR, TARGET_COLOR, OTHER_COLOR, LATER_COLOR = HIGHLIGHT, GREEN, BLUE, ORANGE
CHIP_WORD, CHIP_TARGET, CHIP_OTHER = LIGHT_RED, LIGHT_GREEN, LIGHT_GREY
MODEL_COLORS = (BLUE, VERMILLION)
# the word's and the target's bars are also hatched, so that colour is not all that tells them apart
WORD_PATTERN, TARGET_PATTERN = "/", "x"


@reused
def token_strip(labels: Sequence[str], word: Sequence[int], target: Sequence[int], title: str) -> go.Figure:
    """One chip per token, numbered by position: the chosen word's tokens red, the target's green."""
    role = ["the word" if i in word else "the target" if i in target else "" for i in range(len(labels))]
    color = [CHIP_WORD if r == "the word" else CHIP_TARGET if r else CHIP_OTHER for r in role]
    hover = [
        f"position {i}: {esc(s)}" + (f" ({r})" if r else "") for i, (s, r) in enumerate(zip(labels, role, strict=True))
    ]
    return chip_figure(labels, range(len(labels)), color, hover, title, row_units=70)


@reused
def row_bars(
    weights: np.ndarray, labels: Sequence[str], position: int, target: Sequence[int], causal: bool, title: str
) -> go.Figure:
    """The weights of the word's token (at `position`) over every token: the word red (hatched /), the target green
    (hatched ×), the others blue before it and orange after it. In a decoder the later tokens are shaded: the word
    cannot see them."""
    T = len(labels)
    color = [
        WORD_COLOR if j == position else TARGET_COLOR if j in target else OTHER_COLOR if j < position else LATER_COLOR
        for j in range(T)
    ]
    pattern = [WORD_PATTERN if j == position else TARGET_PATTERN if j in target else "" for j in range(T)]
    bar = {
        "type": "bar",
        "x": np.arange(T),
        "y": np.asarray(weights, dtype=np.float32),
        "marker": {"color": color, "pattern": {"shape": pattern, "fillmode": "overlay", "fgcolor": WHITE}},
        "text": [esc(s) for s in labels],
        "hovertemplate": "%{text}: %{y:.4f}<extra></extra>",
        "textposition": "none",
    }
    shapes, notes = [], []
    if causal and position < T - 1:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": position + 0.5,
                "x1": T - 0.5,
                "y0": 0,
                "y1": 1,
                "fillcolor": GREY,
                "opacity": 0.18,
                "line": {"width": 0},
            }
        )
        notes.append(
            {
                "text": "later tokens: hidden (weight 0)",
                "xref": "x",
                "yref": "paper",
                "x": (position + T) / 2,
                "y": 0.95,
                "showarrow": False,
                "font": {"size": 11, "color": TEXT_MUTED},
            }
        )
    axes = {"xaxis": token_axis(labels, "token j"), "yaxis": {"title": title_dict("weight α"), "range": [0, 1.05]}}
    return figure([bar], layout_dict(title, 320, shapes=shapes or None, annotations=notes or None, **axes))


@reused
def head_grid(grid: np.ndarray, best: tuple[int, int], title: str) -> go.Figure:
    """grid (n_layer, n_head): the weight from the word to the target in every head; the best head outlined."""
    L, H = grid.shape
    layer, head = best
    box = {
        "type": "rect",
        "x0": head - 0.5,
        "x1": head + 0.5,
        "y0": layer - 0.5,
        "y1": layer + 0.5,
        "line": {"color": WORD_COLOR, "width": 3},
    }
    return heatmap(
        grid,
        [f"head {h}" for h in range(H)],
        [f"layer {lay}" for lay in range(L)],
        title=title,
        colorscale=SEQUENTIAL,
        zmin=0,
        zmax=1,
        show_values=L * H <= 300,
        value_name="weight on the target",
        height=110 + 22 * L,
        shapes=[box],
    )


@reused
def sink_lines(shares: dict[str, np.ndarray], evens: dict[str, float], title: str) -> go.Figure:
    """For each model, the share of attention on its sink tokens per layer (solid), and what evenly
    spread weights would give (dotted). The legend, beside the plot, names the models and the dotted lines once."""
    traces = []
    for k, (name, share) in enumerate(shares.items()):
        color = MODEL_COLORS[k % len(MODEL_COLORS)]
        layers = np.arange(len(share))
        hover = f"{esc(name)}<br>layer %{{x}}: %{{y:.3f}}<extra></extra>"
        traces.append(
            {
                "type": "scatter",
                "x": layers,
                "y": np.asarray(share, dtype=np.float32),
                "mode": "lines+markers",
                "name": esc(name),
                "legendgroup": esc(name),
                "line": {"color": color},
                "hovertemplate": hover,
            }
        )
        even = {
            "x": np.array([0, len(share) - 1]),
            "y": np.full(2, evens[name], dtype=np.float32),
            "hovertemplate": f"spread evenly: {evens[name]:.3f}<extra></extra>",
        }
        traces.append(
            {
                "type": "scatter",
                **even,
                "mode": "lines",
                "name": esc(f"{name}: weights spread evenly"),
                "legendgroup": esc(name),  # the model's legend entry shows and hides both its lines
                "showlegend": False,
                "line": {"color": color, "dash": "dot"},
            }
        )
    # one legend entry for every dotted line, last (no data)
    dotted = {"mode": "lines", "name": "spread evenly", "line": {"color": GREY, "dash": "dot"}}
    traces.append({"type": "scatter", "x": [None], "y": [None], **dotted})
    axes = {
        "xaxis": {"title": title_dict("layer")},
        "yaxis": {"title": title_dict("share of attention"), "range": [0, 1.02]},  # (on the sinks: the title)
    }
    return figure(traces, layout_dict(title, 420, **axes))  # the legend beside the plot (under it when narrow)
