"""Many-heads figures: weight maps on a shared scale, a layer × head overview,
token-to-token lines, W_O, ablation bars."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .colours import BLACK, BLANK, DIVERGING, HIGHLIGHT, INK, KEY, PALETTE, QUERY, SEQUENTIAL, WHITE, rgba
from .common import (
    LEGEND_BELOW,
    MASKED_NOTE,
    PANEL_GRID,
    esc,
    figure,
    grouped_bars,
    hatch,
    heatmap,
    layout_dict,
    title_dict,
    token_axis,
)
from .reuse import reused

SHOW_VALUES_MAX = 12  # write the weights into the cells only for sentences this short
SINK_NAME = "first-token"  # what a decoder's sink column is called; an encoder's: "[CLS]/[SEP]"
OPACITY_STEP = 0.1  # line opacities are drawn in steps of this size (one plotly trace per step keeps the figure fast)


def hidden_note(sink_name: str = SINK_NAME) -> str:
    return f" (hidden on this page: {sink_name} column; not renormalised)"


@reused
def weights_map(
    weights: np.ndarray,
    labels: Sequence[str],
    visible: np.ndarray,
    title: str,
    *,
    zmax: float = 1.0,
    hide: Sequence[int] = (),
    sink_name: str = SINK_NAME,
    height: int = 320,
) -> go.Figure:
    """Attention weights (T, T) on the colour scale 0…zmax. Masked cells are blank; so are the columns `hide` (the
    attention sinks; their hover still gives the real weight; the other weights are not rescaled)."""
    visible = np.asarray(visible, dtype=bool)
    hidden = ~visible  # (T, T) a new array
    hidden[:, list(hide)] = True
    show_values = len(labels) <= SHOW_VALUES_MAX and height >= 400
    # (T, T) the end of each cell's hover
    notes = np.where(~visible, MASKED_NOTE, np.where(hidden, hidden_note(sink_name), ""))
    return heatmap(
        weights, labels, labels, title=title, x_title="key j (looked at)", y_title="query i (looking)", zmin=0,
        zmax=zmax, value_name="weight", masked=hidden, notes=notes, height=height, show_values=show_values,
    )


PANELS_PER_ROW = 6  # more maps than this wrap into rows of equal length (SmolLM2 has 9 heads, MiniLM 12)
PANEL_GAP = 0.03  # between two maps of a row, a fraction of the plot's width


@reused
def weight_panels(
    maps: np.ndarray,
    labels: Sequence[str],
    visible: np.ndarray,
    titles: Sequence[str],
    title: str,
    *,
    zmax: float = 1.0,
    hide: Sequence[int] = (),
    value_name: str = "weight",
    height: int = 360,
    per_row: int = PANELS_PER_ROW,
) -> go.Figure:
    """Several (T, T) weight maps, maps (n, T, T), side by side in one figure on ONE colour scale 0…zmax
    (a shared colour axis); more than per_row maps wrap into rows of equal length, each `height` high.

    Masked cells, and the columns `hide` (attention sinks), are blank; the weights shown are not rescaled.
    The hover gives positions (the axes name the tokens): per-cell text for n maps would cost more than the maps.
    """
    n, T = len(maps), len(labels)
    shown = np.where(visible, maps, np.nan).astype(np.float32)  # (n, T, T)
    shown[..., list(hide)] = np.nan
    ticks = token_axis(labels)
    heatmaps = [
        {
            "type": "heatmap",
            "z": shown[k],
            "x": np.arange(T),
            "y": np.arange(T),
            "coloraxis": "coloraxis",
            "hoverongaps": False,
            "hovertemplate": (
                f"{esc(titles[k])}<br>query %{{y}} → key %{{x}}<br>{esc(value_name)} = %{{z:.4f}}<extra></extra>"
            ),
        }
        for k in range(n)
    ]
    y_axis, x_axis = (
        {**ticks, "autorange": "reversed", "title": title_dict("query i (looking)")},
        {**ticks, "title": title_dict("key j")},
    )
    traces, lay, rows = panel_grid(heatmaps, titles, y_axis, x_axis, per_row, height)
    lay["coloraxis"] = {
        "colorscale": SEQUENTIAL,
        "cmin": 0,
        "cmax": zmax,
        "colorbar": {"thickness": 12, "title": title_dict(value_name)},
    }
    if np.isnan(shown).any():  # blank cells hatched, in every map
        lay["images"] = [hatch(t.get("xaxis", "x"), t.get("yaxis", "y")) for t in traces]
    return figure(traces, layout_dict(title, height * rows, plot_bgcolor=BLANK, **lay))


def panel_grid(
    panels: list[dict], titles: Sequence[str], y_axis: dict, x_axis: dict, per_row: int, height: int
) -> tuple[list[dict], dict, int]:
    """Panels (traces without axes) in rows of at most per_row, all rows of equal length and about `height` px high:
    each row gets its own y axis (y_axis; its title on the middle row only), each panel its own x axis (x_axis; its
    tick labels and title only under a panel with none below it, or in a single column) and its title above it.
    Returns the traces with their axes, the layout's axes and annotations (the rows placed by rows_fitted once the
    figure's margins are known), and the number of rows."""
    n = len(panels)
    n_rows = -(-n // max(1, per_row))
    per_row = -(-n // n_rows)
    gap = PANEL_GAP
    width = (1 - gap * (per_row - 1)) / per_row
    traces, lay = [], {"annotations": [], "meta": PANEL_GRID}
    for r in range(n_rows):
        titled = y_axis if r == n_rows // 2 else {**y_axis, "title": None}
        anchor = {} if n_rows == 1 else {"anchor": f"x{r * per_row + 1 if r else ''}"}
        lay["yaxis" + ("" if r == 0 else str(r + 1))] = {**titled, **anchor}
    for k, panel in enumerate(panels):
        r, c = divmod(k, per_row)
        ax, ay = "" if k == 0 else str(k + 1), "" if r == 0 else str(r + 1)
        traces.append({**panel, "xaxis": "x" + ax, "yaxis": "y" + ay})
        # the tokens are named under a panel with none below it, and under each one of a column (a phone's)
        bottom = per_row == 1 or k + per_row >= n
        lay["xaxis" + ax] = {
            **(x_axis if bottom else {**x_axis, "showticklabels": False, "title": None}),
            "domain": [round(c * (width + gap), 6), round(min(1.0, c * (width + gap) + width), 6)],
            "anchor": "y" + ay,
        }
        lay["annotations"].append(
            {
                "text": esc(titles[k]),
                "xref": f"x{ax} domain",
                "yref": "paper",
                "x": 0.5,
                "y": 1.0,
                "yanchor": "bottom",
                "showarrow": False,
            }
        )
    return traces, lay, n_rows


def mosaic_slices(
    n_layer: int, n_head: int, n: int, layers_across: bool = False
) -> tuple[dict[tuple[int, int], tuple[slice, slice]], tuple[int, int]]:
    """Where each head's n × n thumbnail sits in the overview grid, {(layer, head): (rows, cols)}, and the grid's
    shape: a row of thumbnails per layer, or with layers_across a column per layer (a row per head)."""
    gap = max(1, n // 8)  # blank cells between thumbnails
    step = n + gap
    cells = [slice(k * step, k * step + n) for k in range(max(n_layer, n_head))]
    where = {
        (lay, h): (cells[h], cells[lay]) if layers_across else (cells[lay], cells[h])
        for lay in range(n_layer)
        for h in range(n_head)
    }
    rows, cols = (n_head, n_layer) if layers_across else (n_layer, n_head)
    return where, (rows * step - gap, cols * step - gap)


@reused
def head_overview(
    thumbs: np.ndarray,
    selected: tuple[int, int],
    title: str,
    *,
    zmax: float = 1.0,
    badges: Mapping[tuple[int, int], str] | None = None,
    layers_across: bool = False,
) -> go.Figure:
    """Every head's (n × n) thumbnail, thumbs (n_layer, n_head, n, n), in one heatmap: rows = layers, columns = heads
    (layers_across: columns = layers, rows = heads, for a wide and short screen); `selected` outlined; `badges` written
    in their thumbnails' top-right corner (a decoder's empty future)."""
    n_layer, n_head, n, _ = thumbs.shape
    where, shape = mosaic_slices(n_layer, n_head, n, layers_across)
    grid = np.full(shape, np.nan, dtype=np.float32)
    for (lay, h), (rows, cols) in where.items():
        grid[rows, cols] = thumbs[lay, h]
    hm = {
        "type": "heatmap",
        "z": grid,
        "colorscale": SEQUENTIAL,
        "zmin": 0,
        "zmax": zmax,
        "hoverongaps": False,
        "hovertemplate": "weight %{z:.3f}<extra></extra>",
        "colorbar": {"thickness": 12},
    }
    rows, cols = where[selected]
    box = {
        "type": "rect",
        "x0": cols.start - 0.5,
        "x1": cols.stop - 0.5,
        "y0": rows.start - 0.5,
        "y1": rows.stop - 0.5,
        "line": {"color": HIGHLIGHT, "width": 3},
    }
    layer_at = [(where[(lay, 0)][1 if layers_across else 0].start + (n - 1) / 2) for lay in range(n_layer)]
    head_at = [(where[(0, h)][0 if layers_across else 1].start + (n - 1) / 2) for h in range(n_head)]
    heads_ticks = {"tickvals": head_at, "ticktext": [f"head {h}" for h in range(n_head)]}
    layers_ticks = {"tickvals": layer_at, "ticktext": [f"layer {lay}" for lay in range(n_layer)]}
    if layers_across:  # thumbnails of ~30 px on a projector: a layer's number, under "layer"
        layers_ticks = {**layers_ticks, "ticktext": [str(lay) for lay in range(n_layer)], "title": title_dict("layer")}
    x_ticks, y_ticks = (layers_ticks, heads_ticks) if layers_across else (heads_ticks, layers_ticks)
    axes = {
        "xaxis": {
            "tickmode": "array",
            **x_ticks,
            "side": "top",
            "showgrid": False,
            "zeroline": False,
            "range": [-1, shape[1]],
        },
        "yaxis": {
            "tickmode": "array",
            **y_ticks,
            "range": [shape[0], -1],
            "showgrid": False,
            "zeroline": False,
            "scaleanchor": "x",
        },
        "shapes": [box],
    }
    if badges:
        axes["annotations"] = [
            badge(where[head][1].stop - 0.5, where[head][0].start - 0.5, text) for head, text in badges.items()
        ]
    n_rows = n_head if layers_across else n_layer
    height = 120 + int(np.clip(1800 // n_rows, 40, 110)) * n_rows
    return figure([hm], layout_dict(title, height, plot_bgcolor=WHITE, **axes))


def badge(x: float, y: float, text: str) -> dict:
    """A small label on a white ground, its top-right corner at (x, y) in data coordinates."""
    return {
        "x": x,
        "y": y,
        "text": text,
        "showarrow": False,
        "xanchor": "right",
        "yanchor": "top",
        "font": {"size": 10, "color": INK},
        "bgcolor": rgba(WHITE, 0.85),
        "borderpad": 1,
    }


def pair_markers(
    x: np.ndarray,
    y: np.ndarray,
    i: np.ndarray,
    j: np.ndarray,
    w: np.ndarray,
    labels: Sequence[str],
    name: str,
    **marker,
) -> dict:
    """One marker per (query i, key j) pair at (x, y); its hover names both tokens and gives the exact weight."""
    names = [esc(s) for s in labels]
    hover = [
        f"query {a}: {names[a]} → key {b}: {names[b]}<br>weight = {v:.4f}"
        for a, b, v in zip(i.tolist(), j.tolist(), np.asarray(w).tolist(), strict=True)
    ]
    xy = {"x": np.asarray(x, dtype=np.float32), "y": np.asarray(y, dtype=np.float32)}
    return {
        "type": "scatter",
        **xy,
        "mode": "markers",
        "name": name,
        "marker": marker,
        "text": hover,
        "hovertemplate": "%{text}<extra></extra>",
        "showlegend": False,
    }


LINE_VIEW = "token-lines"  # layout.meta of a line view: the browser's hover script (ui/line_hover.py) looks for it


@reused
def token_lines(
    heads: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray]], labels: Sequence[str], title: str
) -> go.Figure:
    """Queries on the left, keys on the right, a line from query i to key j for each pair; opacity = weight.

    heads: (name, i, j, w) per head. One head is drawn in the query colour; several get a colour and a legend entry
    each: clicking one shows it alone, clicking it again shows them all. Lines are grouped by their weight rounded to
    OPACITY_STEP, at least one step so that faint lines stay visible (one trace per step keeps the figure fast); a dot
    at each line's middle has the exact weight as its opacity and hover.
    """
    T = len(labels)
    small = T > 64  # many tokens: thinner lines, smaller dots
    several = len(heads) > 1
    traces = []
    for n, (name, i, j, w) in enumerate(heads):
        color = PALETTE[n % len(PALETTE)] if several else QUERY
        w = np.asarray(w, dtype=np.float32)
        level = np.clip(np.round(w / OPACITY_STEP), 1, None) * OPACITY_STEP  # (n,) the drawn opacity
        group = {"legendgroup": name, "showlegend": False}
        prefix = f"{esc(name)}: " if several else ""
        for a in np.unique(level):
            sel = level == a
            x = np.tile(np.array([0.0, 1.0, np.nan], dtype=np.float32), int(sel.sum()))  # (3n,) left, right, gap
            y = np.stack([i[sel], j[sel], np.full(sel.sum(), np.nan)], axis=1).reshape(-1).astype(np.float32)  # (3n,)
            line = {"color": color, "width": 1 if small else 2}
            traces.append(
                {
                    "type": "scatter",
                    "x": x,
                    "y": y,
                    "mode": "lines",
                    "opacity": float(min(a, 1.0)),
                    "line": line,
                    "hoverinfo": "skip",
                    **group,
                    "name": f"{prefix}lines, weight ≈ {a:.2f}",
                }
            )
        mid = pair_markers(
            np.full(len(w), 0.5),
            (i + j) / 2,
            i,
            j,
            w,
            labels,
            esc(name) if several else "line middles",
            color=color,
            size=3 if small else 6,
            opacity=w,
        )
        mid["text"] = [prefix + t for t in mid["text"]]
        traces.append({**mid, "legendgroup": name, "showlegend": several})
    names = [esc(s) for s in labels]
    ends = [
        {
            "type": "scatter",
            "x": np.full(T, x, dtype=np.float32),
            "y": np.arange(T, dtype=np.float32),
            "mode": "markers",
            "marker": {"color": color, "size": 3 if small else 7},
            "text": [f"{role} {a}: {s}" for a, s in enumerate(names)],
            "hovertemplate": "%{text}<extra></extra>",
            "showlegend": False,
            "name": role + " tokens",
            "yaxis": y,  # the keys sit on the right-hand axis, so plotly draws it
        }
        for x, color, role, y in ((0, QUERY, "query", "y"), (1, KEY, "key", "y2"))
    ]
    axis = {**token_axis(labels), "showgrid": False, "zeroline": False, "range": [T - 0.5, -0.5]}
    lay = {
        "meta": LINE_VIEW,
        "xaxis": {"range": [-0.05, 1.05], "visible": False},
        "yaxis": {**axis, "title": title_dict("query i (looking)")},
        "yaxis2": {
            **axis,
            "title": title_dict("key j (looked at)"),
            "overlaying": "y",
            "side": "right",
            "matches": "y",
        },
    }
    if not any(len(w) for *_, w in heads):
        lay["annotations"] = [
            {"text": "no weight reaches the threshold", "x": 0.5, "y": (T - 1) / 2, "showarrow": False}
        ]
    if several:
        # 70 px a head: rows as margins.fit counts them
        lay["legend"] = {**LEGEND_BELOW, "entrywidth": 70, "itemclick": "toggleothers", "itemdoubleclick": "toggle"}
    return figure(
        [*traces, *ends], layout_dict(title, int(np.clip(90 + 18 * T, 300, 900)), plot_bgcolor=WHITE, **lay)
    )


def _blocks(names: Sequence[str], n: int) -> tuple[dict, list[float]]:
    """Axis ticks naming len(names) equal blocks of n cells at their centres, and the positions of lines between
    blocks (none for 1-cell blocks)."""
    size = n // len(names)
    ticks = {
        "tickmode": "array",
        "tickvals": [k * size + (size - 1) / 2 for k in range(len(names))],
        "ticktext": [esc(s) for s in names],
    }
    return ticks, ([k * size - 0.5 for k in range(1, len(names))] if size > 1 else [])


@reused
def vector_rows(
    z: np.ndarray,
    title: str,
    *,
    row_blocks: Sequence[str],
    col_blocks: Sequence[str] | None = None,
    x_title: str = "",
    value_name: str = "value",
    height: int = 260,
) -> go.Figure:
    """A matrix, blue < 0 < red, whose rows (and optionally columns) come in equal named blocks,
    e.g. one block of rows per head."""
    z = np.asarray(z, dtype=np.float32)
    rows, cols = z.shape
    hover = f"row %{{y}}, column %{{x}}<br>{esc(value_name)} = %{{z:.4g}}<extra></extra>"
    hm = {
        "type": "heatmap", "z": z, "x": np.arange(cols), "y": np.arange(rows), "colorscale": DIVERGING, "zmid": 0,
        "hovertemplate": hover, "colorbar": {"thickness": 12},
    }
    y_ticks, y_lines = _blocks(row_blocks, rows)
    x_ticks, x_lines = _blocks(col_blocks, cols) if col_blocks else ({}, [])
    line = {"color": BLACK, "width": 1.5}
    shapes = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": y, "y1": y, "line": line} for y in y_lines]
    shapes += [{"type": "line", "yref": "paper", "y0": 0, "y1": 1, "x0": x, "x1": x, "line": line} for x in x_lines]
    axes = {
        "xaxis": {**x_ticks, "title": title_dict(x_title)},
        "yaxis": {**y_ticks, "autorange": "reversed"},
        "shapes": shapes or None,
    }
    return figure([hm], layout_dict(title, height, **axes))


@reused
def ablation_bars(labels: Sequence[str], before: np.ndarray, after: np.ndarray, title: str) -> go.Figure:
    """Next-token probabilities with every head on, and with the chosen heads switched off, side by side."""
    return grouped_bars(
        {"all heads on": before, "heads switched off": after},
        labels,
        title=title,
        x_title="next token",
        y_title="probability",
        height=340,
    )


@reused
def output_change_bars(cosine: np.ndarray, relative: np.ndarray, labels: Sequence[str], title: str) -> go.Figure:
    """An encoder's final vector of every token with heads switched off against with every
    head on: cos and relative change."""
    series = {"cos(before, after): 1 = same direction": cosine, "‖after − before‖ / ‖before‖": relative}
    return grouped_bars(series, labels, title=title, x_title="token", y_title="value", height=340)
