"""Figures of the softmax lab: weights as bars, entropy versus temperature, the √d_k experiment.

Each figure is built in one go.Figure(data, layout) call plus one `layout()`: every extra
update_* call on a plotly figure costs milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .common import esc, layout, token_axis

COLORS = ("#4c78a8", "#f58518", "#54a24b", "#999999")
MAX_BAR_VALUES = 16  # write each bar's value on it up to this many bars in all
TAU_TICKS = [0.05, 0.1, 0.2, 0.5, 1, 2, 5]
LEGEND = {"orientation": "h", "y": -0.25}


def grouped_bars(
    series: dict[str, np.ndarray], labels: Sequence[str], *, title: str = "", x_title: str = "", y_title: str = "weight", y_range: tuple[float, float] | None = (0, 1), height: int = 320
) -> go.Figure:
    """One bar per label for each named series, side by side; values written on the bars when there are few."""
    x = np.arange(len(labels))
    hover = [esc(s) for s in labels]
    values = {"texttemplate": "%{y:.3f}", "textposition": "outside"} if len(labels) * len(series) <= MAX_BAR_VALUES else {"textposition": "none"}
    data = [
        go.Bar(x=x, y=np.asarray(y, dtype=np.float32), name=esc(name), marker_color=color, text=hover, hovertemplate="%{text}: %{y:.4g}<extra></extra>", **values)
        for (name, y), color in zip(series.items(), COLORS, strict=False)
    ]
    y_axis = {"title": esc(y_title)}
    if y_range is not None:
        y_axis["range"] = [y_range[0], y_range[1] * 1.12]  # room for the values above the bars
    fig = go.Figure(data, layout={"barmode": "group", "showlegend": len(series) > 1, "legend": LEGEND, "xaxis": token_axis(labels, esc(x_title)), "yaxis": y_axis})
    return layout(fig, title, height)


def temperature_curves(taus: np.ndarray, entropy: np.ndarray, top: np.ndarray, tau: float, entropy_now: float, top_now: float, max_entropy: float, height: int = 360) -> go.Figure:
    """Entropy (bits, left axis) and top probability (right axis) of softmax(s / τ) over τ; markers at the current τ."""
    f32 = np.float32
    now = {"size": 12, "line": {"width": 2, "color": "black"}}
    data = [
        go.Scatter(x=f32(taus), y=f32(entropy), name="entropy (bits)", line={"color": COLORS[0]}, hovertemplate="τ = %{x:.3g}<br>entropy = %{y:.3f} bits<extra></extra>"),
        go.Scatter(x=f32(taus), y=f32(top), name="top probability", yaxis="y2", line={"color": COLORS[1]}, hovertemplate="τ = %{x:.3g}<br>top probability = %{y:.3f}<extra></extra>"),
        go.Scatter(x=f32([tau]), y=f32([entropy_now]), name="entropy now", mode="markers", marker={**now, "color": COLORS[0]}, hovertemplate="τ = %{x:.3g}: %{y:.3f} bits<extra></extra>"),
        go.Scatter(x=f32([tau]), y=f32([top_now]), name="top probability now", mode="markers", yaxis="y2", marker={**now, "color": COLORS[1]}, hovertemplate="τ = %{x:.3g}: %{y:.3f}<extra></extra>"),
    ]
    fig = go.Figure(
        data,
        layout={
            "xaxis": {"type": "log", "title": "temperature τ (log scale)", "tickvals": TAU_TICKS, "ticktext": [f"{t:g}" for t in TAU_TICKS]},
            "yaxis": {"title": "entropy (bits)", "range": [0, max(max_entropy, 1e-3) * 1.05]},
            "yaxis2": {"title": "top probability", "overlaying": "y", "side": "right", "range": [0, 1.05], "tickvals": [0, 0.2, 0.4, 0.6, 0.8, 1], "showgrid": False},
            "legend": LEGEND,
        },
    )
    return layout(fig, "Entropy and top probability versus temperature", height)


def dk_lines(d_ks: np.ndarray, series: dict[str, np.ndarray], *, title: str, y_title: str, chosen: int | None = None, log_y: bool = False, height: int = 340) -> go.Figure:
    """Lines over d_k (log axis), one per named series; big markers at index `chosen` of d_ks."""
    colors = COLORS[: len(series)]
    data = [
        go.Scatter(x=np.float32(d_ks), y=np.float32(y), name=esc(name), mode="lines+markers", line={"color": color}, hovertemplate=f"{esc(name)}<br>d_k = %{{x}}: %{{y:.3g}}<extra></extra>")
        for (name, y), color in zip(series.items(), colors, strict=False)
    ]
    if chosen is not None:
        y_now = [y[chosen] for y in series.values()]
        marker = {"size": 12, "color": list(colors), "line": {"width": 2, "color": "black"}}
        data.append(go.Scatter(x=np.float32([d_ks[chosen]] * len(y_now)), y=np.float32(y_now), name=f"d_k = {d_ks[chosen]}", mode="markers", marker=marker, hoverinfo="skip"))
    fig = go.Figure(
        data,
        layout={
            "xaxis": {"type": "log", "title": "d_k (dimensions of q and k)", "tickvals": [int(d) for d in d_ks], "ticktext": [str(d) for d in d_ks]},
            "yaxis": {"type": "log" if log_y else "linear", "title": esc(y_title)},
            "legend": {**LEGEND, "y": -0.3},
        },
    )
    return layout(fig, title, height)
