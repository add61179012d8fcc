"""Inside-a-block figures: residual-stream norms, LayerNorm statistics, MLP activations, what each sublayer adds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .common import BAR_COLORS, esc, figure, heatmap, layout_dict, named_scale, title_dict, token_axis
from .embeddings import rows_height

SYMBOLS = ("circle", "circle-open", "x")  # distinct shapes, so equal values (e.g. w = 1, b = 0) stay visible


def residual_norm_heatmap(norms: np.ndarray, stage_labels: Sequence[str], token_labels: Sequence[str]) -> go.Figure:
    """‖x‖ of the stream, stages (rows, top = the input) × tokens (columns)."""
    height = int(min(max(160 + 34 * len(stage_labels), 320), 640))
    return heatmap(norms, token_labels, stage_labels, title="Length ‖x‖ of each token's vector in the residual stream", x_title="token", y_title="stage of the stream", value_name="‖x‖", height=height)


def token_values(steps: dict[str, np.ndarray], title: str) -> go.Figure:
    """One token's d_model numbers at up to three steps, one marker per dimension."""
    points = [
        {
            "type": "scatter",
            "x": np.arange(len(v)),
            "y": np.asarray(v, dtype=np.float32),
            "mode": "markers",
            "name": esc(name),
            "marker": {"size": 6, "color": BAR_COLORS[k], "symbol": SYMBOLS[k]},
            "hovertemplate": f"dimension %{{x}}<br>{esc(name)}: %{{y:.4g}}<extra></extra>",
        }
        for k, (name, v) in enumerate(steps.items())
    ]
    return figure(points, layout_dict(title, 360, xaxis={"title": title_dict("dimension")}, yaxis={"title": title_dict("value")}))


def mlp_heatmap(post: np.ndarray, neurons: np.ndarray, token_labels: Sequence[str], title: str) -> go.Figure:
    """GELU outputs of the chosen neurons (columns, named by id) for every token (rows).

    The hover names the neuron and the row's position (the axis names its token): per-cell hover text for
    T × n cells would cost more bytes and time than the whole figure.
    """
    hover = "row %{y}, neuron %{x}<br>GELU output = %{z:.4g}<extra></extra>"
    z = np.asarray(post, dtype=np.float32)
    hm = {"type": "heatmap", "z": z, "x": [f"n{i}" for i in neurons], "y": np.arange(len(token_labels)), "colorscale": named_scale("Viridis"), "hovertemplate": hover, "colorbar": {"thickness": 12}}
    axes = {"xaxis": {"title": title_dict("neuron"), "type": "category"}, "yaxis": {**token_axis(token_labels, "token"), "autorange": "reversed"}}
    return figure([hm], layout_dict(title, rows_height(len(token_labels)), plot_bgcolor="#d9d9d9", **axes))


def gelu_figure(curve_x: np.ndarray, curve_y: np.ndarray, pre: np.ndarray, post: np.ndarray, title: str) -> go.Figure:
    """The activation curve, and one token's neurons as points (pre-activation, output) on it."""
    curve = {"type": "scatter", "x": curve_x, "y": curve_y, "mode": "lines", "name": "GELU(x)", "line": {"color": "#888"}, "hoverinfo": "skip"}
    points = {
        "type": "scatter",
        "x": np.asarray(pre, dtype=np.float32),
        "y": np.asarray(post, dtype=np.float32),
        "mode": "markers",
        "name": "this token's neurons",
        "marker": {"size": 5, "color": BAR_COLORS[1]},
        "hovertemplate": "neuron %{pointNumber}<br>x·W_in + b_in = %{x:.4g}<br>GELU = %{y:.4g}<extra></extra>",
    }
    return figure([curve, points], layout_dict(title, 360, xaxis={"title": title_dict("pre-activation x·W_in + b_in")}, yaxis={"title": title_dict("output")}))
