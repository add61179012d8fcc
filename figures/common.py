"""Building blocks shared by every figure: escaping, token axes, heatmaps, bars."""

from __future__ import annotations

import base64
import html
import urllib.parse
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from . import margins
from .colours import BLANK, BLUE, HATCH_LINE, PALETTE, SEQUENTIAL, TEXT_MUTED, named_scale
from .reuse import reused

MAX_TICK_CHARS = 14
MAX_BAR_VALUES = 16  # write each bar's value on it up to this many bars in all
MASKED_NOTE = " (masked: score −∞)"  # a masked cell's hover ends with this
# The legend of a figure with several series: a row under everything, placed in the figure's own coordinates
# ("container"). plotly.js then reserves the legend's real height below the x-axis title however many rows it wraps
# to at the chart's width; a legend placed against the plot (y = 1.02 or −0.1 in "paper" coordinates) overprints the
# chart title or the x-axis title once it wraps to a second row.
LEGEND_BELOW = {
    "orientation": "h",
    "xref": "container",
    "yref": "container",
    "x": 0,
    "xanchor": "left",
    "y": 0,
    "yanchor": "bottom",
}
# Values written on bars: plotly.js shrinks a value to its bar's width, and hides it below this size instead of
# letting the values of neighbouring bars run into each other.
BAR_TEXT = {"minsize": 9, "mode": "hide"}
GROUP_GAP = 0.12  # between the bars of one group: their values, each shrunk to its bar, do not touch
HOVER_CELLS = 32 * 32  # per-cell hover text only up to this many cells (a 16×128 map with it is ~150 KiB)


# Diagonal lines, stretched over a plot under its heatmap: they show through the blank (NaN) cells only, so a masked
# cell is marked by more than its grey.
HATCH_PATH = "".join(f"M{k - 100},100L{k},0" for k in range(0, 201, 4))  # 45° lines across a 100 × 100 box
HATCH_SVG = (
    "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 100 100' preserveAspectRatio='none'>"
    f"<path d='{HATCH_PATH}' stroke='{HATCH_LINE}' stroke-width='0.8'/></svg>"
)
HATCH_SOURCE = "data:image/svg+xml," + urllib.parse.quote(HATCH_SVG)


def hatch(x: str = "x", y: str = "y") -> dict:
    """A layout image of the hatching that fills the plot of axes (x, y), under its traces."""
    return {
        "source": HATCH_SOURCE,
        "xref": f"{x} domain",
        "yref": f"{y} domain",
        "x": 0,
        "y": 1,
        "sizex": 1,
        "sizey": 1,
        "sizing": "stretch",
        "xanchor": "left",
        "yanchor": "top",
        "layer": "below",
    }
TYPED = {
    "float32": "f4",
    "float64": "f8",
    "int8": "i1",
    "int16": "i2",
    "int32": "i4",
    "uint8": "u1",
    "uint16": "u2",
    "uint32": "u4",
}


NESTED = dict | list | tuple | np.ndarray  # what plain() has to look inside


def plain(value):
    """A figure property as plotly.js reads it: numeric arrays as base64 typed arrays
    (what plotly.py sends), None dropped."""
    if isinstance(value, np.ndarray):
        if value.dtype == np.int64:
            value = value.astype(np.int32)  # plotly.js has no 64-bit integers
        if value.dtype.name not in TYPED:
            return value.tolist()
        spec = {
            "dtype": TYPED[value.dtype.name],
            "bdata": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode(),
        }
        return spec if value.ndim == 1 else {**spec, "shape": ", ".join(map(str, value.shape))}
    if isinstance(value, dict):
        return {k: plain(v) if isinstance(v, NESTED) else v for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple) and value and isinstance(value[0], NESTED):
        return [plain(v) for v in value]  # lists are homogeneous here: a list of strings or numbers is kept as it is
    return value


class Spec(go.Figure):
    """A finished figure held as plotly JSON (plain dicts), handed over as it is.

    st.plotly_chart reads a figure through to_dict() only. A real go.Figure costs ~1 ms to build and ~1 ms more
    to deep-copy in to_dict, for each of a page's figures on every rerun, so this one skips go.Figure's machinery:
    fig.data, fig.update_layout and the like are not available. Build the dicts completely, then wrap them.
    """

    def __init__(self, spec: dict):  # go.Figure.__init__ is skipped on purpose (see above)
        self._spec = spec

    def to_dict(self) -> dict:
        return self._spec

    def to_plotly_json(self) -> dict:
        return self._spec

    def __repr__(self) -> str:
        return f"Spec({[t.get('type') for t in self._spec['data']]})"


# plotly's default for a numeric axis, ticklabeloverflow "hide past div", measures every tick label against the div on
# every draw (a forced layout each): ~60 % of redrawing a 16×16 heatmap. The margins already hold the labels.
AXIS_DEFAULTS = {"ticklabeloverflow": "allow"}
# the stub plotly.py adds to every layout (no theme: see figures/__init__)
TEMPLATE = go.Figure().to_dict()["layout"].get("template")


def figure(traces: Sequence[dict], layout: dict) -> Spec:
    """A figure from plain dicts already in plotly's own form ({"type": "heatmap", …}, {"title": {"text": …}}).

    Skips plotly.py's validation, which costs ~2 ms per figure (most of a page rerun). Every figure a page test
    reads is re-validated (tests/apptest_utils.checked_spec): it must equal what validation gives.
    """
    lay = plain(layout)
    for key in [k for k in lay if margins.AXIS.match(k)]:
        lay[key] = {**AXIS_DEFAULTS, **lay[key]}
    # text the theme writes grey (contrast 3.7 on white), darker: notes and panel titles, words beside points, values
    # over bars
    if lay.get("annotations"):
        lay["annotations"] = [{**a, "font": {"color": TEXT_MUTED, **(a.get("font") or {})}} for a in lay["annotations"]]
    traces = [_dark_text(t) for t in traces]
    margin = margins.fit(traces, lay)
    # a y-axis title is drawn along the plot: a plot shorter than it lets it run into the chart title
    if "height" in lay:
        lay["height"] = max(lay["height"], margin["t"] + margin["b"] + margins.y_title_px(lay))
    # the toolbar stands up along the right edge: lying across the top, on a phone it covers the chart's title
    lay.setdefault("modebar", {"orientation": "v"})
    lay["margin"] = margin
    lay |= rows_fitted(lay)
    return Spec({"data": [plain(t) for t in traces], "layout": {**lay, "template": TEMPLATE}})


ROW_GAP_PX = 40  # between two rows of maps: the lower row's map titles (presenter view's 16 px text, with room)
PANEL_GRID = "panel-grid"  # layout.meta of a figure of maps in rows (figures.multihead.panel_grid): a y axis a row


def row_gap_px(bottom: float, named: bool) -> float:
    """px between two rows of maps: ROW_GAP_PX, or where each row names its tokens (a single column) the room the
    bottom margin (`bottom` px) gives the last one's (an upper estimate of the labels, with room to spare for the next
    row's titles)."""
    return max(ROW_GAP_PX, bottom) if named else ROW_GAP_PX


def rows_fitted(layout: dict) -> dict:
    """Layout updates that place the rows of a panel_grid figure in its plot area at the figure's height now: rows of
    equal height, ROW_GAP_PX apart (the bottom margin apart when each row names its tokens) whatever that height.
    (As fractions of the plot, gaps fitted once shrank with a chart squeezed onto a projector's first screen until
    each row's titles ran into the row above.) {} for a figure of one row, or of another kind."""
    grid = layout.get("meta") == PANEL_GRID
    n_rows = sum(1 for k in layout if margins.AXIS.match(k) and k.startswith("y")) if grid else 1
    if n_rows < 2:
        return {}
    margin = layout.get("margin") or {}
    plot = max(1.0, layout["height"] - margin.get("t", 0) - margin.get("b", 0))  # px
    gap_px = row_gap_px(margin.get("b", 0), named=layout["xaxis"].get("showticklabels", True))
    gap = min(gap_px / plot, 0.5 / (n_rows - 1))  # fraction of the plot between rows (at most half of it in all)
    row = (1 - gap * (n_rows - 1)) / n_rows
    tops = [1 - r * (row + gap) for r in range(n_rows)]  # the top of each row, top row first
    names = ["yaxis" + ("" if r == 0 else str(r + 1)) for r in range(n_rows)]
    out = {
        name: {**layout[name], "domain": [round(max(0.0, top - row), 6), round(top, 6)]}
        for name, top in zip(names, tops, strict=True)
    }
    row_of = {"y" + name[5:]: r for r, name in enumerate(names)}  # "y2" → 1
    # a map's title is placed on its x axis's domain ("x2 domain"); that axis is anchored on its row's y axis
    out["annotations"] = [
        {**a, "y": round(tops[row_of[layout["xaxis" + a["xref"].split()[0][1:]]["anchor"]]], 6)}
        if a.get("yref") == "paper" and str(a.get("xref", "")).endswith(" domain") else a
        for a in layout.get("annotations") or []
    ]
    return out


def _dark_text(trace: dict) -> dict:
    """The trace with TEXT_MUTED as the colour of the words it writes beside its points or over its bars, unless it
    sets its own."""
    outside = trace.get("type") == "bar" and trace.get("textposition") == "outside"
    beside = outside or "text" in str(trace.get("mode", ""))
    font = trace.get("textfont") or {}
    return {**trace, "textfont": {"color": TEXT_MUTED, **font}} if beside and "color" not in font else trace


def title_dict(text: str) -> dict | None:
    """A title property, escaped (None: no title)."""
    return {"text": esc(text)} if text else None


NOTE_PX = 20  # the room a note under a figure's title takes


def with_note(layout: dict, note: str) -> dict:
    """The layout with `note` under its title (a subtitle), and the room for it; a title with a note keeps its own."""
    title = layout.get("title") or {}
    title = title if isinstance(title, dict) else {"text": title}
    if title.get("subtitle"):
        return layout
    margin = layout.get("margin") or {}
    return {
        **layout,
        "title": {**title, "subtitle": {"text": note}},
        "margin": {**margin, "t": margin.get("t", 100) + NOTE_PX},
        "height": (layout.get("height") or 420) + NOTE_PX,
    }


def esc(text: str) -> str:
    """Text made safe for a plotly label: plotly reads <br>, <a href> … as markup."""
    return html.escape(str(text), quote=False)


def tick_labels(labels: Sequence[str]) -> list[str]:
    """Escaped, shortened labels for a token axis."""
    return [esc(s if len(s) <= MAX_TICK_CHARS else s[: MAX_TICK_CHARS - 1] + "…") for s in labels]


def token_axis(labels: Sequence[str], axis_title: str = "") -> dict:
    """An axis at integer positions 0…n−1 labelled by tokens (axis_title is escaped here):
    a repeated token keeps its own row."""
    n = len(labels)
    step = max(1, n // 40)  # at most ~40 tick labels
    idx = list(range(0, n, step))
    return {
        "tickmode": "array",
        "tickvals": idx,
        "ticktext": tick_labels([labels[i] for i in idx]),
        "title": title_dict(axis_title),
    }


def layout_dict(text: str = "", height: int = 420, **kwargs) -> dict:
    """The layout every figure shares, as one dict: pass it to figure(traces, layout_dict(…))."""
    return {
        "title": title_dict(text),
        "height": height,
        "margin": {"l": 16, "r": 16, "t": 40 if text else 16, "b": 16},
        **kwargs,
    }


@reused
def heatmap(
    z: np.ndarray,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    *,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    colorscale: str | list = SEQUENTIAL,
    zmid: float | None = None,
    zmin: float | None = None,
    zmax: float | None = None,
    show_values: bool = False,
    value_name: str = "value",
    masked: np.ndarray | None = None,
    height: int = 420,
    notes: np.ndarray | None = None,
    shapes: list[dict] | None = None,
    extra: dict | None = None,
) -> go.Figure:
    """A heatmap with row 0 at the top. Masked cells (default: those equal to −∞) are
    left blank (grey and hatched) and say so on hover.

    notes: (rows, cols) text ending each cell's hover (default: MASKED_NOTE on masked cells);
    extra: trace properties set last (e.g. other hover text); shapes: layout shapes drawn over the map.
    """
    z = np.asarray(z, dtype=np.float32)
    neg_inf = np.isneginf(z) if masked is None else np.asarray(masked, dtype=bool)
    shown = np.where(neg_inf, np.nan, z).astype(np.float32)
    rows, cols = z.shape
    trace = {
        "z": shown,
        "x": np.arange(cols),
        "y": np.arange(rows),
        "colorscale": named_scale(colorscale) if isinstance(colorscale, str) else colorscale,
        "zmid": zmid,
        "zmin": zmin,
        "zmax": zmax,
        "hoverongaps": True,
        "colorbar": {"thickness": 12},
    }
    if rows * cols <= HOVER_CELLS:
        xl = [esc(s) for s in (x_labels if x_labels is not None else map(str, range(cols)))]
        yl = [esc(s) for s in (y_labels if y_labels is not None else map(str, range(rows)))]
        name = esc(value_name)
        # Python floats: far faster than numpy scalars
        values = [["−∞" if v == -np.inf else f"{v:.4g}" for v in row] for row in z.tolist()]
        notes = np.where(neg_inf, MASKED_NOTE, "").tolist() if notes is None else np.asarray(notes).tolist()
        hover = [
            [f"{yl[i]} (row {i}) → {xl[j]} (col {j})<br>{name} = {values[i][j]}{notes[i][j]}" for j in range(cols)]
            for i in range(rows)
        ]
        trace.update(text=hover, hovertemplate="%{text}<extra></extra>")
        if show_values:
            # plotly writes each cell's own z (customdata does not render in heatmap
            # text); masked (NaN) cells stay blank
            trace.update(texttemplate="%{z:.2f}")
    else:
        trace.update(hovertemplate=f"row %{{y}} → col %{{x}}<br>{esc(value_name)} = %{{z:.4g}}<extra></extra>")
    xaxis = token_axis(x_labels, x_title) if x_labels is not None else {"title": title_dict(x_title)}
    yaxis = token_axis(y_labels, y_title) if y_labels is not None else {"title": title_dict(y_title)}
    trace.update(extra or {})
    return figure(
        [{"type": "heatmap", **trace}],
        layout_dict(
            title,
            height,
            plot_bgcolor=BLANK,
            xaxis=xaxis,
            yaxis={**yaxis, "autorange": "reversed"},
            shapes=shapes,
            images=[hatch()] if neg_inf.any() else None,
        ),
    )


@reused
def bars(
    values: np.ndarray,
    labels: Sequence[str],
    *,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    height: int = 320,
    color: str = BLUE,
) -> go.Figure:
    """Vertical bars at integer positions labelled by (escaped) tokens."""
    values = np.asarray(values, dtype=np.float32)
    bar = {
        "type": "bar",
        "x": np.arange(len(values)),
        "y": values,
        "marker": {"color": color},
        "text": [esc(s) for s in labels],
        "hovertemplate": "%{text}: %{y:.4g}<extra></extra>",
        "textposition": "none",
    }
    return figure(
        [bar], layout_dict(title, height, xaxis=token_axis(labels, x_title), yaxis={"title": title_dict(y_title)})
    )


@reused
def grouped_bars(
    series: dict[str, np.ndarray],
    labels: Sequence[str],
    *,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    y_range: tuple[float, float] | None = None,
    height: int = 320,
) -> go.Figure:
    """One bar per label for each named series, side by side in its own colour;
    values written on the bars when there are few."""
    names = [esc(s) for s in labels]
    values = (
        {"texttemplate": "%{y:.3f}", "textposition": "outside"}
        if len(labels) * len(series) <= MAX_BAR_VALUES
        else {"textposition": "none"}
    )
    data = [
        {
            "type": "bar",
            "x": np.arange(len(labels)),
            "y": np.asarray(y, dtype=np.float32),
            "name": esc(name),
            "marker": {"color": PALETTE[k % len(PALETTE)]},
            "text": names,
            "hovertemplate": f"%{{text}}<br>{esc(name)}: %{{y:.4g}}<extra></extra>",
            **values,
        }
        for k, (name, y) in enumerate(series.items())
    ]
    # room for the values above the bars
    y_axis = {"title": title_dict(y_title), "range": None if y_range is None else [y_range[0], y_range[1] * 1.12]}
    lay = layout_dict(
        title,
        height,
        barmode="group",
        showlegend=len(series) > 1,
        xaxis=token_axis(labels, x_title),
        yaxis=y_axis,
        uniformtext=BAR_TEXT,
        **({"bargroupgap": GROUP_GAP} if len(series) > 1 else {}),
    )
    if len(series) > 1:  # the legend under the x-axis title (margins.fit makes room for it)
        lay.update(legend=LEGEND_BELOW)
    return figure(data, lay)
