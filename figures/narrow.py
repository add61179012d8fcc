"""A figure drawn in a narrow column (a phone, or three charts in a row): its colour bar and legend under the plot.

Beside the plot, a colour bar takes ~110–150 px of width and a legend ~100 px or more: on a phone, whose column
is ~358 px, token labels on the left and a colour bar on the right leave the plot 60–130 px. Under the plot they
take height instead, and the figure grows by that height, so the plot keeps its own.
"""

from __future__ import annotations

import html
import math
import re

import numpy as np

from .common import LEGEND_BELOW, with_note
from .export import values
from .margins import TICK_PX, TITLE_PX, axis_margins, colorbar_px, colorbars, fit, legend_px, title_text

NARROW_PX = 520  # a chart narrower than this puts its colour bar and legend under the plot
BAR_PX = 12  # the bar's thickness
PAD_PX = 10  # the colour bar's own padding (plotly's ypad), above and below it
# Level, as wide as the plot, at the bottom of the figure (in its own coordinates, under the x axis and its title):
BAR_BELOW = {
    "orientation": "h",
    "x": 0.5,
    "xanchor": "center",
    "len": 1,
    "lenmode": "fraction",
    "yref": "container",
    "y": 0,
    "yanchor": "bottom",
    "ypad": PAD_PX,
    "thickness": BAR_PX,
}


def narrow(spec: dict) -> dict:
    """The figure (plotly JSON: data, layout) with its one colour bar, and a legend beside the plot, moved under
    everything else; margins and height changed so that the plot area keeps its height and gains the width.
    A figure with nothing beside the plot, several colour bars, or a colour bar and a legend already under it, is
    returned as it is."""
    traces, layout = spec["data"], spec["layout"]
    margin = dict(layout.get("margin") or {})
    bars = colorbars(traces, layout)
    side, legend = legend_px(traces, layout)
    legend_beside = side == "r" and legend > 0
    if not (bars or legend_beside) or len(bars) > 1 or (bars and legend > 0 and not legend_beside):
        return spec
    out_traces, out_layout, grow = list(traces), dict(layout), 0
    if bars:
        where, bar = bars[0]
        title = title_text(bar.get("title"))
        below = {k: v for k, v in bar.items() if k != "title"} | BAR_BELOW
        if title:
            below["title"] = {
                **(bar["title"] if isinstance(bar["title"], dict) else {}),
                "text": title,
                "side": "bottom",
            }  # under its numbers ("top" overprints the bar)
        if isinstance(where, str):  # a shared colour axis
            out_layout[where] = {**layout[where], "colorbar": below}
        else:
            out_traces[where] = {**traces[where], "colorbar": below}
        grow += 2 * PAD_PX + BAR_PX + 2 * TICK_PX + (round(1.5 * TITLE_PX) if title else 0)
    if legend_beside:
        out_layout["legend"] = {**(layout.get("legend") or {}), **LEGEND_BELOW}
        grow += round(legend_px(traces, out_layout)[1])
    right = axis_margins(traces, layout)["r"]  # what stays on the right: a y axis drawn there
    margin["r"] = round(
        max(right, margin.get("r", 0) - colorbar_px(traces, layout) - (legend if legend_beside else 0), 16)
    )
    margin["b"] = margin.get("b", 0) + grow
    out_layout.update(margin=margin, height=(layout.get("height") or 420) + grow)
    return {**spec, "data": out_traces, "layout": out_layout}


# -- numbers written in heatmap cells
# plotly.js sizes them to the cell (textfont.size "auto"): at most the cell's width / (0.65 · the longest text's
# characters), its height / 1.3 (its line spacing) and the layout's font size, a cell's size being the smallest
# distance between two texts' positions (whole pixels). On a phone a 10-token map's cells are ~23 px wide, and "0.35"
# comes out at 8 px, "−0.35" at 6 px: hard to read. Such numbers are left to the hover (a tap on a phone), the
# chart's table (ui/a11y.py) and its CSV.
MIN_CELL_TEXT_PX = 9  # numbers plotly.js would write smaller than this are not written
CHAR_EM, LINE_SPACING = 0.65, 1.3  # plotly.js's estimates of a character's width and a line's height, in em
FONT_PX = 12  # the layout's font size when it sets none (plotly's default)
NUMBERS = re.compile(r"%\{z:\.(\d+)(~?)([fg])\}$")  # d3-format numbers plotly writes: "%{z:.2f}", "%{z:.3~g}"
CELL_NOTE = "tap or hover a cell for its number"


def cell_texts(trace: dict, words: bool = False) -> tuple[int, int, int] | None:
    """A heatmap trace's texts written in its cells: (rows, cols, characters of the longest); None when it writes none
    of that kind. The numbers of its z ("%{z:.2f}"), or with `words` its own texts ("%{text}": tokens)."""
    template = str(trace.get("texttemplate") or "") if trace.get("type") == "heatmap" else ""
    if words:
        if template != "%{text}" or not trace.get("text"):
            return None
        cells = [[html.unescape(str(c)) for c in row] for row in trace["text"]]  # (rows, cols) as drawn
        return len(cells), len(cells[0]), max(len(c) for row in cells for c in row)
    m = NUMBERS.match(template)
    if m is None or trace.get("z") is None:
        return None
    z = np.asarray(values(trace["z"]), dtype=np.float64)  # (rows, cols)
    if z.ndim != 2 or not z.size:
        return None
    shown = z[np.isfinite(z)]
    spec = f".{m.group(1)}{m.group(3)}"  # d3's ".3~g" trims zeros as Python's ".3g" does
    # plotly sizes them all to the longest: at a fixed number of decimals, the smallest or the largest
    ends = (shown.min(), shown.max()) if m.group(3) == "f" and shown.size else shown.tolist()
    return *z.shape, max((len(format(float(v), spec)) for v in ends), default=1)


def readable_from(spec: dict, narrow_column: bool, words: bool = False) -> float | None:
    """The least width (px) at which plotly.js writes every number in the figure's heatmap cells (with `words`: every
    word, cell_texts) at MIN_CELL_TEXT_PX or more (math.inf: its rows are too short at any width); None when it writes
    none. narrow_column: the figure is drawn narrow (its colour bar under the plot: narrow())."""
    traces, layout = spec["data"], spec["layout"]
    margin = layout.get("margin") or {}
    right = max(axis_margins(traces, layout)["r"], 16) if narrow_column else margin.get("r", 80)
    sides = margin.get("l", 80) + right
    plot_h = (layout.get("height") or 420) - margin.get("t", 100) - margin.get("b", 80)
    font = (layout.get("font") or {}).get("size") or FONT_PX
    least = None
    for t in traces:
        if (texts := cell_texts(t, words)) is None:
            continue
        rows, cols, chars = texts
        if min(plot_h * _share(layout, t, "y") // rows / LINE_SPACING, font) < MIN_CELL_TEXT_PX:
            return math.inf  # too short a row, or too small a font, at any width
        cell_w = math.ceil(MIN_CELL_TEXT_PX * CHAR_EM * chars)  # the least cell width that holds them
        least = max(least or 0.0, sides + cell_w * cols / _share(layout, t, "x"))  # its own subplot's share
    return least


def without_cell_numbers(spec: dict) -> dict:
    """The figure (plotly JSON) without the numbers written in its heatmaps' cells: a map that had them instead of a
    colour bar gets its bar back, and the title says where the numbers are (CELL_NOTE)."""
    out = [
        {k: v for k, v in t.items() if k != "texttemplate"} | ({"showscale": True} if "showscale" in t else {})
        if cell_texts(t) is not None else t
        for t in spec["data"]
    ]
    layout = with_note(spec["layout"], CELL_NOTE)
    return {**spec, "data": out, "layout": {**layout, "margin": fit(out, layout)}}


def _share(layout: dict, trace: dict, letter: str) -> float:
    """The share of the plot area's width (x) or height (y) the trace's axis spans (its domain)."""
    ref = trace.get(letter + "axis", letter)  # "x", "x2", …
    lo, hi = (layout.get(letter + "axis" + ref[1:]) or {}).get("domain", (0, 1))
    return hi - lo
