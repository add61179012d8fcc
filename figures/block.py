"""Inside-a-block figures: residual-stream norms, LayerNorm statistics, MLP activations, what each sublayer adds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .colours import BLANK, DIVERGING, GREY, PALETTE, SEQUENTIAL
from .common import LEGEND_BELOW, esc, figure, grouped_bars, heatmap, layout_dict, title_dict, token_axis
from .embeddings import rows_height
from .reuse import reused

SYMBOLS = ("circle", "circle-open", "x")  # distinct shapes, so equal values (e.g. w = 1, b = 0) stay visible


@reused
def residual_norm_heatmap(
    norms: np.ndarray, stage_labels: Sequence[str], token_labels: Sequence[str], zmax: float | None = None
) -> go.Figure:
    """‖x‖ of the stream, stages (rows, top = the input) × tokens (columns); zmax caps the colour scale (the hover keeps
    the real lengths), so one huge token does not wash out the others. At least 16 px per stage."""
    n = len(stage_labels)
    height = int(min(max(160 + 34 * n, 320), max(640, 120 + 16 * n)))
    title = "Length ‖x‖ of each token's vector in the residual stream" + (
        "" if zmax is None else f" (colours stop at {zmax:,.0f})"
    )
    return heatmap(
        norms,
        token_labels,
        stage_labels,
        title=title,
        x_title="token",
        y_title="stage of the stream",
        value_name="‖x‖",
        zmin=0 if zmax else None,
        zmax=zmax,
        height=height,
    )


@reused
def token_values(steps: dict[str, np.ndarray], title: str) -> go.Figure:
    """One token's d_model numbers at up to three steps, one marker per dimension."""
    points = [
        {
            "type": "scatter",
            "x": np.arange(len(v)),
            "y": np.asarray(v, dtype=np.float32),
            "mode": "markers",
            "name": esc(name),
            "marker": {"size": 6, "color": PALETTE[k], "symbol": SYMBOLS[k]},
            "hovertemplate": f"dimension %{{x}}<br>{esc(name)}: %{{y:.4g}}<extra></extra>",
        }
        for k, (name, v) in enumerate(steps.items())
    ]
    return figure(
        points, layout_dict(title, 360, xaxis={"title": title_dict("dimension")}, yaxis={"title": title_dict("value")})
    )


@reused
def mlp_heatmap(
    post: np.ndarray,
    neurons: np.ndarray,
    token_labels: Sequence[str],
    title: str,
    value_name: str = "GELU output",
    signed: bool = False,
) -> go.Figure:
    """The MLP's outputs of the chosen neurons (columns, named by id) for every token (rows); signed values
    (SwiGLU's can be either sign) on a blue–red scale around 0.

    The hover names the neuron and the row's position (the axis names its token): per-cell hover text for
    T × n cells would cost more bytes and time than the whole figure.
    """
    hover = f"row %{{y}}, neuron %{{x}}<br>{esc(value_name)} = %{{z:.4g}}<extra></extra>"
    z = np.asarray(post, dtype=np.float32)
    scale = {"colorscale": DIVERGING, "zmid": 0} if signed else {"colorscale": SEQUENTIAL}
    hm = {
        "type": "heatmap",
        "z": z,
        "x": [f"n{i}" for i in neurons],
        "y": np.arange(len(token_labels)),
        **scale,
        "hovertemplate": hover,
        "colorbar": {"thickness": 12},
    }
    axes = {
        "xaxis": {"title": title_dict("neuron"), "type": "category"},
        "yaxis": {**token_axis(token_labels, "token"), "autorange": "reversed"},
    }
    return figure([hm], layout_dict(title, rows_height(len(token_labels)), plot_bgcolor=BLANK, **axes))


@reused
def activation_figure(
    curve_x: np.ndarray,
    curve_y: np.ndarray,
    pre: np.ndarray,
    out: np.ndarray,
    title: str,
    fn: str = "GELU",
    pre_name: str = "x·W_in + b_in",
) -> go.Figure:
    """The activation curve fn(x), and one token's neurons as points (pre-activation, fn(pre)) on it."""
    curve = {
        "type": "scatter",
        "x": curve_x,
        "y": curve_y,
        "mode": "lines",
        "name": f"{fn}(x)",
        "line": {"color": GREY},
        "hoverinfo": "skip",
    }
    points = {
        "type": "scatter",
        "x": np.asarray(pre, dtype=np.float32),
        "y": np.asarray(out, dtype=np.float32),
        "mode": "markers",
        "name": "this token's neurons",
        "marker": {"size": 5, "color": PALETTE[1]},
        "hovertemplate": f"neuron %{{pointNumber}}<br>{esc(pre_name)} = %{{x:.4g}}<br>{fn} = %{{y:.4g}}<extra></extra>",
    }
    axes = {"xaxis": {"title": title_dict(f"pre-activation {pre_name}")}, "yaxis": {"title": title_dict("output")}}
    # a legend on the right takes a phone's plot
    return figure([curve, points], layout_dict(title, 360, legend=LEGEND_BELOW, **axes))


@reused
def swiglu_bars(
    neurons: np.ndarray, silu_gate: np.ndarray, linear: np.ndarray, post: np.ndarray, title: str
) -> go.Figure:
    """A few SwiGLU neurons of one token: SiLU(gate), the linear branch, and their product (the neuron's output)."""
    series = {"SiLU(x·W_gate)": silu_gate, "x·W_in": linear, "product = output": post}
    return grouped_bars(series, [f"n{i}" for i in neurons], title=title, x_title="neuron", y_title="value", height=360)
