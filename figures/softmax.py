"""Figures of the softmax lab: weights as bars, entropy versus temperature, the √d_k experiment.

Each figure is built from plain dicts in one figures.common.figure call.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .colours import BLACK, PALETTE
from .common import LEGEND_BELOW, esc, figure, layout_dict, title_dict
from .reuse import reused

TAU_TICKS = [0.05, 0.1, 0.2, 0.5, 1, 2, 5]
LEGEND = LEGEND_BELOW  # under the x-axis title: plotly.js reserves the rows it wraps to


def log_ticks(values: np.ndarray) -> list[float]:
    """1-2-5 ticks of a log axis over the positive values, each written in full: plotly's own log ticks write the
    minor ones as bare leading digits ("1, 2, 5, 10, 2, 5, 100"), which reads as a cut-off label."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return [1.0]
    lo, hi = np.floor(np.log10(v.min())), np.ceil(np.log10(v.max()))
    ticks = [m * 10.0**e for e in range(int(lo), int(hi) + 1) for m in (1, 2, 5)]
    inside = [t for t in ticks if v.min() / 1.5 <= t <= v.max() * 1.5]
    return inside if len(inside) >= 2 else ticks


def tick_text(t: float) -> str:
    """A tick value written in full: 0.05, 2, 20, 500, 1000."""
    return f"{t:g}" if t < 1e5 else f"{t:.0e}"


@reused
def temperature_curves(
    taus: np.ndarray,
    entropy: np.ndarray,
    top: np.ndarray,
    tau: float,
    entropy_now: float,
    top_now: float,
    max_entropy: float,
    height: int = 360,
) -> go.Figure:
    """Entropy (bits, left axis) and top probability (right axis) of softmax(s / τ) over τ; markers at the current τ."""
    f32 = np.float32
    now = {"size": 12, "line": {"width": 2, "color": BLACK}}
    # name, curve, now, unit, axis
    series = (("entropy", entropy, entropy_now, " bits", "y"), ("top probability", top, top_now, "", "y2"))
    curves = [
        {
            "type": "scatter",
            "x": f32(taus),
            "y": f32(ys),
            "name": name + (f" ({unit.strip()})" if unit else ""),
            "yaxis": axis,
            "line": {"color": PALETTE[k]},
            "hovertemplate": f"τ = %{{x:.3g}}<br>{name} = %{{y:.3f}}{unit}<extra></extra>",
        }
        for k, (name, ys, _, unit, axis) in enumerate(series)
    ]
    markers = [
        {
            "type": "scatter",
            "x": f32([tau]),
            "y": f32([y_now]),
            "name": f"{name} now",
            "mode": "markers",
            "yaxis": axis,
            "marker": {**now, "color": PALETTE[k]},
            "hovertemplate": f"τ = %{{x:.3g}}: %{{y:.3f}}{unit}<extra></extra>",
        }
        for k, (name, _, y_now, unit, axis) in enumerate(series)
    ]
    axes = {
        "xaxis": {
            "type": "log",
            "title": title_dict("temperature τ (log scale)"),
            "tickvals": TAU_TICKS,
            "ticktext": [f"{t:g}" for t in TAU_TICKS],
        },
        "yaxis": {"title": title_dict("entropy (bits)"), "range": [0, max(max_entropy, 1e-3) * 1.05]},
        "yaxis2": {
            "title": title_dict("top probability"),
            "overlaying": "y",
            "side": "right",
            "range": [0, 1.05],
            "tickvals": [0, 0.2, 0.4, 0.6, 0.8, 1],
            "showgrid": False,
        },
    }
    return figure(
        curves + markers, layout_dict("Entropy and top probability versus temperature", height, legend=LEGEND, **axes)
    )


@reused
def dk_lines(
    d_ks: np.ndarray,
    series: dict[str, np.ndarray],
    *,
    title: str,
    y_title: str,
    chosen: int | None = None,
    log_y: bool = False,
    height: int = 340,
) -> go.Figure:
    """Lines over d_k (log axis), one per named series; big markers at index `chosen` of d_ks."""
    colors = PALETTE[: len(series)]
    data = [
        {
            "type": "scatter",
            "x": np.float32(d_ks),
            "y": np.float32(y),
            "name": esc(name),
            "mode": "lines+markers",
            "line": {"color": color},
            "hovertemplate": f"{esc(name)}<br>d_k = %{{x}}: %{{y:.3g}}<extra></extra>",
        }
        for (name, y), color in zip(series.items(), colors, strict=False)
    ]
    if chosen is not None:
        y_now = [y[chosen] for y in series.values()]
        marker = {"size": 12, "color": list(colors), "line": {"width": 2, "color": BLACK}}
        data.append(
            {
                "type": "scatter",
                "x": np.float32([d_ks[chosen]] * len(y_now)),
                "y": np.float32(y_now),
                "name": f"d_k = {d_ks[chosen]}",
                "mode": "markers",
                "marker": marker,
                "hoverinfo": "skip",
            }
        )
    axes = {
        "xaxis": {
            "type": "log",
            "title": title_dict("d_k (dimensions of q and k)"),
            "tickvals": [int(d) for d in d_ks],
            "ticktext": [str(d) for d in d_ks],
        },
        "yaxis": {"type": "linear", "title": title_dict(y_title)},
    }
    if log_y:
        ticks = log_ticks(np.concatenate([np.asarray(y, dtype=np.float64).ravel() for y in series.values()]))
        axes["yaxis"] = {
            **axes["yaxis"],
            "type": "log",
            "tickmode": "array",
            "tickvals": ticks,
            "ticktext": [tick_text(t) for t in ticks],
        }
    return figure(data, layout_dict(title, height, legend=LEGEND, **axes))
