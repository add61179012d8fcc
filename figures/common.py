"""Building blocks shared by every figure: escaping, token axes, heatmaps, bars."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

MAX_TICK_CHARS = 14
HOVER_CELLS = 32 * 32  # per-cell hover text only up to this many cells (a 16×128 map with it is ~150 KiB)
DIVERGING = "RdBu_r"
SEQUENTIAL = "Blues"


def esc(text: str) -> str:
    """Text made safe for a plotly label: plotly reads <br>, <a href> … as markup."""
    return html.escape(str(text), quote=False)


def tick_labels(labels: Sequence[str]) -> list[str]:
    """Escaped, shortened labels for a token axis."""
    return [esc(s if len(s) <= MAX_TICK_CHARS else s[: MAX_TICK_CHARS - 1] + "…") for s in labels]


def token_axis(labels: Sequence[str], title: str = "") -> dict:
    """An axis at integer positions 0…n−1 labelled by tokens: a repeated token keeps its own row."""
    n = len(labels)
    step = max(1, n // 40)  # at most ~40 tick labels
    idx = list(range(0, n, step))
    return {"tickmode": "array", "tickvals": idx, "ticktext": tick_labels([labels[i] for i in idx]), "title": title}


def layout_dict(title: str = "", height: int = 420, **kwargs) -> dict:
    """The layout every figure shares, as one dict: pass it to go.Figure(data, layout=…) to validate once (each update_* call costs ms)."""
    return {"title": esc(title) if title else None, "height": height, "margin": {"l": 10, "r": 10, "t": 40 if title else 10, "b": 10}, **kwargs}


def layout(fig: go.Figure, title: str = "", height: int = 420, **kwargs) -> go.Figure:
    fig.update_layout(layout_dict(title, height, **kwargs))
    return fig


def heatmap(
    z: np.ndarray,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    *,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    colorscale: str = SEQUENTIAL,
    zmid: float | None = None,
    zmin: float | None = None,
    zmax: float | None = None,
    show_values: bool = False,
    value_name: str = "value",
    masked: np.ndarray | None = None,
    height: int = 420,
) -> go.Figure:
    """A heatmap with row 0 at the top. Masked cells (default: those equal to −∞) are left blank (grey) and say so on hover."""
    z = np.asarray(z, dtype=np.float32)
    neg_inf = np.isneginf(z) if masked is None else np.asarray(masked, dtype=bool)
    shown = np.where(neg_inf, np.nan, z).astype(np.float32)
    rows, cols = z.shape
    trace = {"z": shown, "x": np.arange(cols), "y": np.arange(rows), "colorscale": colorscale, "zmid": zmid, "zmin": zmin, "zmax": zmax, "hoverongaps": True, "colorbar": {"thickness": 12}}
    if rows * cols <= HOVER_CELLS:
        xl = [esc(s) for s in (x_labels if x_labels is not None else map(str, range(cols)))]
        yl = [esc(s) for s in (y_labels if y_labels is not None else map(str, range(rows)))]
        name = esc(value_name)
        values = [["−∞" if v == -np.inf else f"{v:.4g}" for v in row] for row in z.tolist()]  # Python floats: far faster than numpy scalars
        notes = [[" (masked: score −∞)" if m else "" for m in row] for row in neg_inf.tolist()]
        hover = [[f"{yl[i]} (row {i}) → {xl[j]} (col {j})<br>{name} = {values[i][j]}{notes[i][j]}" for j in range(cols)] for i in range(rows)]
        trace.update(text=np.array(hover, dtype=object), hovertemplate="%{text}<extra></extra>")  # an object array validates far faster than nested lists
        if show_values:
            trace.update(texttemplate="%{z:.2f}")  # plotly writes each cell's own z (customdata does not render in heatmap text); masked (NaN) cells stay blank
    else:
        trace.update(hovertemplate=f"row %{{y}} → col %{{x}}<br>{esc(value_name)} = %{{z:.4g}}<extra></extra>")
    xaxis = token_axis(x_labels, esc(x_title)) if x_labels is not None else {"title": esc(x_title)}
    yaxis = token_axis(y_labels, esc(y_title)) if y_labels is not None else {"title": esc(y_title)}
    return go.Figure(go.Heatmap(**trace), layout=layout_dict(title, height, plot_bgcolor="#d9d9d9", xaxis=xaxis, yaxis={**yaxis, "autorange": "reversed"}))


def bars(values: np.ndarray, labels: Sequence[str], *, title: str = "", x_title: str = "", y_title: str = "", height: int = 320, color: str = "#4c78a8") -> go.Figure:
    """Vertical bars at integer positions labelled by (escaped) tokens."""
    values = np.asarray(values, dtype=np.float32)
    bar = go.Bar(x=np.arange(len(values)), y=values, marker_color=color, text=[esc(s) for s in labels], hovertemplate="%{text}: %{y:.4g}<extra></extra>", textposition="none")
    return go.Figure(bar, layout=layout_dict(title, height, xaxis=token_axis(labels, esc(x_title)), yaxis={"title": esc(y_title)}))
