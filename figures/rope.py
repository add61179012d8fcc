"""RoPE and shared key/value heads: the angle table, wavelengths, a query and a key before and after rotation,
"clock hands" of a few pairs, the shift chart; which query heads share which key/value head, K and V per head."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .attention import vectors_heatmap
from .colours import BINARY, BLACK, CYCLIC, DIVERGING, FAINT, HIGHLIGHT, KEY, LIGHT_BLUE, LIGHT_ORANGE, QUERY, WHITE
from .common import LEGEND_BELOW, bars, esc, figure, layout_dict, title_dict
from .multihead import PANELS_PER_ROW, panel_grid
from .reuse import reused

TAU = 2 * np.pi
Q_COLOR, K_COLOR = QUERY, KEY
Q_LIGHT, K_LIGHT = LIGHT_BLUE, LIGHT_ORANGE  # before the rotation
ANGLE_TICKS = {"tickvals": [0, np.pi / 2, np.pi, 3 * np.pi / 2, TAU], "ticktext": ["0", "π/2", "π", "3π/2", "2π"]}


@reused
def angle_heatmap(angles: np.ndarray, title: str) -> go.Figure:
    """angles (n_pos, pairs) in radians, coloured by where the hand points (angle mod 2π, a colour wheel);
    the hover gives the full angle m·ω_i too."""
    n_pos, n_pairs = angles.shape
    wrapped = np.mod(angles, TAU).astype(np.float32)  # (n_pos, pairs)
    hm = {
        "type": "heatmap",
        "z": wrapped,
        "x": np.arange(n_pairs),
        "y": np.arange(n_pos),
        "customdata": angles.astype(np.float32),
        "colorscale": CYCLIC,
        "zmin": 0,
        "zmax": TAU,
        "colorbar": {"thickness": 12, "title": title_dict("angle mod 2π"), **ANGLE_TICKS},
        "hovertemplate": (
            "position m = %{y}, pair i = %{x}<br>angle m·ω_i = %{customdata:.4g} rad<br>on the clock: "
            "%{z:.2f} rad<extra></extra>"
        ),
    }
    axes = {
        "xaxis": {"title": title_dict("pair i (dimensions i and i + d/2)")},
        "yaxis": {"title": title_dict("position m"), "autorange": "reversed"},
    }
    return figure([hm], layout_dict(title, 460, **axes))


@reused
def wavelength_chart(wavelengths: np.ndarray, n_tokens: int, title: str) -> go.Figure:
    """Positions per full turn of each pair (log scale), and the sentence's length for comparison."""
    P = len(wavelengths)
    pairs = {
        "type": "scatter",
        "x": np.arange(P),
        "y": np.asarray(wavelengths, dtype=np.float32),
        "mode": "lines+markers",
        "name": "one full turn takes … positions",
        "line": {"color": Q_COLOR},
        "hovertemplate": "pair %{x}: one turn every %{y:.4g} positions<extra></extra>",
    }
    sentence = {
        "type": "scatter",
        "x": np.array([0, P - 1]),
        "y": np.array([n_tokens, n_tokens], dtype=np.float32),
        "mode": "lines",
        "name": f"your text: {n_tokens} tokens",
        "line": {"color": HIGHLIGHT, "dash": "dash"},
        "hovertemplate": f"your text: {n_tokens} tokens<extra></extra>",
    }
    axes = {
        "xaxis": {"title": title_dict("pair i")},
        "yaxis": {"title": title_dict("positions per turn (2π / ω_i)"), "type": "log"},
    }
    return figure([pairs, sentence], layout_dict(title, 360, legend=LEGEND_BELOW, **axes))


@reused
def before_after_heatmap(rows: np.ndarray, names: Sequence[str], title: str) -> go.Figure:
    """q and k before and after rotation, (4, d), one row each; a line splits the two
    halves (pair i = i and i + d/2)."""
    d = rows.shape[1]
    split = {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": d / 2 - 0.5,
        "x1": d / 2 - 0.5,
        "y0": 0,
        "y1": 1,
        "line": {"color": BLACK, "width": 2, "dash": "dot"},
    }
    return vectors_heatmap(
        rows,
        names,
        title,
        dim_title=f"dimension (0…{d // 2 - 1}: first of each pair, {d // 2}…{d - 1}: second)",
        shapes=[split],
    )


def _hand(x: float, y: float, name: str, color: str, dash: str, xa: str, ya: str, legend: bool, hover: str) -> dict:
    """An arrow from the origin to (x, y)."""
    return {
        "type": "scatter",
        "x": np.array([0, x], dtype=np.float32),
        "y": np.array([0, y], dtype=np.float32),
        "mode": "lines+markers",
        "line": {"color": color, "width": 3, "dash": dash},
        "marker": {"symbol": ["circle", "arrow"], "size": [4, 14], "angleref": "previous", "color": color},
        "name": name,
        "legendgroup": name,
        "showlegend": legend,
        "xaxis": xa,
        "yaxis": ya,
        "hovertemplate": f"{esc(hover)}<extra></extra>",
    }


@reused
def clock_hands(
    q_pairs: np.ndarray,
    rot_q_pairs: np.ndarray,
    k_pairs: np.ndarray,
    rot_k_pairs: np.ndarray,
    chosen: Sequence[int],
    angle_m: np.ndarray,
    angle_n: np.ndarray,
    m: int,
    n: int,
    title: str,
) -> go.Figure:
    """One small plane per chosen pair i: q_m's pair before (dashed) and after turning by
    m·ω_i (solid), k_n's the same by n·ω_i.

    *_pairs: (d/2, 2) the vectors as pairs; angle_m, angle_n: (d/2,) the angles used.
    """
    n_panels = len(chosen)
    gap = 0.04
    width = (1 - gap * (n_panels - 1)) / n_panels
    traces, lay = (
        [],
        {"annotations": [], "showlegend": True, "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.12, "x": 0}},
    )
    hands = (
        ("q_m before", q_pairs, Q_LIGHT, "dash"),
        ("q_m after (turned by m·ω)", rot_q_pairs, Q_COLOR, "solid"),
        ("k_n before", k_pairs, K_LIGHT, "dash"),
        ("k_n after (turned by n·ω)", rot_k_pairs, K_COLOR, "solid"),
    )
    for p, i in enumerate(chosen):
        ax = "" if p == 0 else str(p + 1)
        r = 1.15 * max(float(np.hypot(*v[i])) for _, v, _, _ in hands) or 1.0
        for name, vec, color, dash in hands:
            x, y = (float(c) for c in vec[i])
            hover = (
                f"{name}, pair {i}: ({x:.3f}, {y:.3f}), length {np.hypot(x, y):.3f}, "
                f"pointing at {np.degrees(np.arctan2(y, x)):.1f}°"
            )
            traces.append(_hand(x, y, name, color, dash, "x" + ax, "y" + ax, p == 0, hover))
        grid = {"range": [-r, r], "zeroline": True, "showticklabels": False, "showgrid": False}
        lay["xaxis" + ax] = {
            **grid,
            "domain": [p * (width + gap), p * (width + gap) + width],
            "anchor": "y" + ax,
            "title": title_dict(f"pair {i}"),
        }
        lay["yaxis" + ax] = {**grid, "anchor": "x" + ax, "scaleanchor": "x" + ax, "scaleratio": 1}
        turn = f"q turned {np.degrees(angle_m[i]) % 360:.0f}°, k {np.degrees(angle_n[i]) % 360:.0f}°"
        lay["annotations"].append(
            {
                "text": esc(turn),
                "xref": f"x{ax} domain",
                "yref": f"y{ax} domain",
                "x": 0.5,
                "y": 1.0,
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 11},
            }
        )
    return figure(traces, layout_dict(title + f" (m = {m}, n = {n})", 380, plot_bgcolor=WHITE, **lay))


@reused
def pair_bars(pair_dots: np.ndarray, title: str) -> go.Figure:
    """Each pair's share of the score, rot_q pair · rot_k pair; the bars add up to the score."""
    return bars(
        pair_dots, [str(i) for i in range(len(pair_dots))], title=title, x_title="pair i", y_title="share of q·k"
    )


@reused
def shift_chart(
    shifts: np.ndarray, both: np.ndarray, query_only: np.ndarray, chosen: int, m: int, n: int, title: str
) -> go.Figure:
    """Score against shift s: both vectors moved (a flat line) and only the query moved (it wanders)."""
    s = np.asarray(shifts, dtype=np.int32)
    k = int(np.searchsorted(s, chosen))
    lines = [
        {
            "type": "scatter",
            "x": s,
            "y": np.asarray(y, dtype=np.float32),
            "mode": "lines",
            "name": name,
            "line": {"color": color, "width": width},
            "hovertemplate": f"shift s = %{{x}}<br>{esc(name)}: %{{y:.6g}}<extra></extra>",
        }
        for y, name, color, width in (
            (query_only, f"only the query moves: q at {m} + s, k at {n}", FAINT, 2),
            (both, f"both move: q at {m} + s, k at {n} + s", Q_COLOR, 4),
        )
    ]
    dots = {
        "type": "scatter",
        "x": np.array([chosen, chosen], dtype=np.int32),
        "y": np.array([both[k], query_only[k]], dtype=np.float32),
        "mode": "markers",
        "marker": {"color": HIGHLIGHT, "size": 10},
        "name": f"s = {chosen}",
        "hovertemplate": "s = %{x}: %{y:.6g}<extra></extra>",
    }
    axes = {
        "xaxis": {"title": title_dict("shift s (positions)")},
        "yaxis": {"title": title_dict("score q·k (before ÷√d)")},
    }
    legend = {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0}
    return figure([*lines, dots], layout_dict(title, 380, legend=legend, **axes))


# ---- shared key/value heads ---------------------------------------------------------------------------------


@reused
def sharing_heatmap(table: np.ndarray, title: str) -> go.Figure:
    """table (n_head, n_kv): 1 where query head h reads key/value head g."""
    nh, nkv = table.shape
    text = [["reads" if v else "" for v in row] for row in table.tolist()]
    hm = {
        "type": "heatmap",
        "z": table.astype(np.float32),
        "x": np.arange(nkv),
        "y": np.arange(nh),
        "text": text,
        "texttemplate": "%{text}",
        "colorscale": BINARY,
        "zmin": 0,
        "zmax": 1,
        "showscale": False,
        "xgap": 2,
        "ygap": 2,
        "hovertemplate": "query head %{y} → key/value head %{x}: %{z}<extra></extra>",
    }
    axes = {
        "xaxis": {
            "tickmode": "array",
            "tickvals": list(range(nkv)),
            "ticktext": [f"K/V head {g}" for g in range(nkv)],
            "side": "top",
        },
        "yaxis": {
            "tickmode": "array",
            "tickvals": list(range(nh)),
            "ticktext": [f"query head {h}" for h in range(nh)],
            "autorange": "reversed",
        },
    }
    return figure([hm], layout_dict(title, 80 + 28 * nh, **axes))


@reused
def head_panels(
    arrays: np.ndarray,
    labels: Sequence[str],
    titles: Sequence[str],
    title: str,
    *,
    value_name: str,
    per_row: int = PANELS_PER_ROW,
) -> go.Figure:
    """Several (T, d) arrays, (n, T, d), side by side (at most per_row in a row) on ONE diverging colour scale: K (or V)
    of each key/value head. The colour bar is titled with value_name's first word (the chart's title says the rest)."""
    n, T, d = arrays.shape
    top = float(np.abs(arrays).max()) or 1.0
    step = max(1, T // 40)
    ticks = {
        "tickmode": "array",
        "tickvals": list(range(0, T, step)),
        "ticktext": [esc(labels[i]) for i in range(0, T, step)],
    }
    panels = [
        {
            "type": "heatmap",
            "z": arrays[k].astype(np.float32),
            "x": np.arange(d),
            "y": np.arange(T),
            "coloraxis": "coloraxis",
            "hovertemplate": (
                f"{esc(titles[k])}<br>token %{{y}}, dimension %{{x}}<br>{esc(value_name)} = %{{z:.4g}}<extra></extra>"
            ),
        }
        for k in range(n)
    ]
    y_axis = {**ticks, "autorange": "reversed", "title": title_dict("token")}
    x_axis = {"title": title_dict("dimension"), "dtick": 16 if d >= 48 else None}
    height = min(640, max(260, 120 + 16 * T))
    traces, lay, rows = panel_grid(panels, titles, y_axis, x_axis, per_row, height)
    lay["coloraxis"] = {
        "colorscale": DIVERGING,
        "cmin": -top,
        "cmax": top,
        "colorbar": {"thickness": 12, "title": title_dict(value_name.split()[0])},
    }
    return figure(traces, layout_dict(title, height * rows, **lay))
