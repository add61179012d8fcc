"""Margins sized from a figure's own labels, so that plotly.js draws it once.

With Streamlit's theme every axis has automargin on. When a tick label, axis title, colour bar or legend does not
fit in layout.margin, plotly.js pushes the margin out and draws the whole figure a second time: about twice the
browser's work for each chart on every rerun (~75 → ~30 ms for a 16×16 heatmap in headless Chromium). Margins
estimated from the labels, on the generous side, leave the push nothing to do; automargin stays on, so a label
wider than estimated still fits (at the cost of the second pass).
"""

from __future__ import annotations

import functools
import html
import math
import re
import unicodedata

import numpy as np

TICK_PX, TITLE_PX = 12, 14  # Streamlit's theme: tick labels 12 px, axis titles 14 px
PAD = 8  # the theme's margin.pad
GAP = 10  # between the axis line and its tick labels, with some to spare
CROWDED_PX = 200  # x tick labels wider than this in all may turn vertical (a narrow column holds ~250 px of plot)
STANDOFF = {"x": 20, "y": 24}  # the theme's axis title standoff
COLORAXIS_BAR = {"xpad": 24}  # the theme pads a shared colour axis's bar more than a trace's own
NUMBER_CHARS = 6  # a numeric tick label, e.g. "−0.25" or "1000"
LEGEND_ROW_PX = 320  # a horizontal legend wraps at about the width of a plot in a narrow column
AXIS = re.compile(r"([xy])axis\d*$")


@functools.lru_cache(maxsize=4096)  # token labels recur in every figure of a page
def text_px(text: str, size: int = TICK_PX) -> float:
    """An upper estimate of the width of one line of text in the theme's font (Source Sans) at `size` px."""
    if "<" in text or "&" in text:
        text = html.unescape(re.sub(r"<[^>]+>", "", text))  # plotly's own markup (<b>, <br>) is not drawn as text
    return size * sum(map(_char_em, text))


def _char_em(c: str) -> float:
    """Width of one character in em: Latin letters and digits ~0.5–0.6 (m, w ~0.85), symbols from a fallback
    font (␣ ↵ −) ~1, CJK and emoji more."""
    if unicodedata.east_asian_width(c) in "WF" or ord(c) >= 0x1F000:
        return 1.25
    if c in "MWmw@%":
        return 0.9
    return 0.65 if ord(c) < 0x2000 else 1.1


def title_text(prop) -> str:
    return (prop or {}).get("text") or "" if isinstance(prop, dict) else prop or ""


def _labels_px(axis: dict, values: list) -> float:
    """Width of the widest tick label of an axis: its ticktext, or numbers as long as the data (or range) they span."""
    if "ticktext" in axis:
        return max((text_px(str(t)) for t in axis["ticktext"]), default=0.0)
    return text_px("0" * _number_chars(axis.get("range") or values))


def _number_chars(values) -> int:
    """Characters of plotly's tick numbers over these values: 0.25 (4) below 1, 7.5 (3)
    below 10, then the integer digits."""
    try:
        v = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in values]) if len(values) else np.empty(0)
    except (TypeError, ValueError):  # category names
        return NUMBER_CHARS
    top = np.nanmax(np.abs(v), initial=0.0)
    if not np.isfinite(top) or top == 0:
        return NUMBER_CHARS
    negative = np.nanmin(v) < 0
    return len(str(int(top))) + (2 if top < 10 else 0) + (1 if top < 1 else 0) + int(negative) + 1  # + 1 to spare


def axis_margins(traces: list[dict], layout: dict) -> dict[str, float]:
    """Left and bottom space for the tick labels and titles of the axes on those sides (top/right: likewise)."""
    need = {"l": 0.0, "r": 0.0, "t": 0.0, "b": 0.0}
    for key, axis in layout.items():
        m = AXIS.match(key)
        if not m or not isinstance(axis, dict) or axis.get("visible") is False:
            continue
        letter = m.group(1)
        ref = letter + key[5:]  # "yaxis2" → "y2"
        values = [t[letter] for t in traces if letter in t and t.get(letter + "axis", letter) == ref]
        title = title_text(axis.get("title"))
        title_px = STANDOFF[letter] + 2 * TITLE_PX if title else 0.0
        labels = _labels_px(axis, values) if axis.get("showticklabels", True) else 0.0
        if letter == "y":  # labels are horizontal: their width is the margin
            side = "r" if axis.get("side") == "right" else "l"
            need[side] = max(need[side], PAD + GAP + labels + title_px)
        else:  # labels may turn vertical when they crowd: then their width is the margin's height
            side = "t" if axis.get("side") == "top" else "b"
            crowded = (
                axis.get("type") == "category"
                or sum(text_px(str(t)) + TICK_PX for t in axis.get("ticktext", ())) > CROWDED_PX
            )
            need[side] = max(need[side], PAD + GAP + (labels + TICK_PX if crowded else 2.5 * TICK_PX) + title_px)
    return need


def colorbars(traces: list[dict], layout: dict) -> list[tuple[int | str, dict]]:
    """The colour bars a figure draws: (the index of its heatmap trace, or the layout key of a
    shared colour axis; its settings)."""
    bars: list[tuple[int | str, dict]] = [
        (i, t.get("colorbar") or {})
        for i, t in enumerate(traces)
        if t.get("type") == "heatmap" and t.get("showscale", True) and "coloraxis" not in t
    ]
    bars += [
        (key, ax.get("colorbar") or {})
        for key, ax in layout.items()
        if key.startswith("coloraxis") and isinstance(ax, dict) and ax.get("showscale", True)
    ]
    return bars


def colorbar_px(traces: list[dict], layout: dict) -> float:
    """Right-hand space for a colour bar: its offset from the plot, pads, and the wider of
    bar + tick labels and its title."""
    bars = [{**COLORAXIS_BAR, **cb} if isinstance(where, str) else cb for where, cb in colorbars(traces, layout)]
    widths = [
        2 * cb.get("xpad", 10)
        + max(cb.get("thickness", 30) + 6 + text_px("0" * NUMBER_CHARS), text_px(title_text(cb.get("title")), TITLE_PX))
        for cb in bars
    ]
    return 25 + max(widths) if widths else 0.0  # 25: the bar sits at x = 1.02 of the plot width


def legend_px(traces: list[dict], layout: dict) -> tuple[str, float]:
    """The side a legend takes space on, and how much."""
    names = [t.get("name", "") for t in traces if t.get("showlegend", True) and t.get("name")]
    if not layout.get("showlegend", len(names) > 1) or not names:
        return "r", 0.0
    legend = layout.get("legend") or {}
    if legend.get("orientation") == "h":
        side = "t" if legend.get("y", -0.1) > 0.5 else "b"
        rows = math.ceil(sum(40 + text_px(str(n)) for n in names) / LEGEND_ROW_PX)
        if legend.get("yref") == "container":  # under everything else on its side: plotly.js reserves its drawn height
            return side, 8.0 + 22 * rows
        return side, 16.0 + 24 * rows + (40 if side == "b" else 0)  # below the plot it also clears the x labels
    return "r", 50 + max(text_px(str(n)) for n in names)


def y_title_px(layout: dict) -> float:
    """The plot height the longest y-axis title needs (drawn turned along the axis), with a little to spare."""
    titles = [
        title_text(ax.get("title"))
        for key, ax in layout.items()
        if key.startswith("yaxis") and isinstance(ax, dict) and ax.get("visible") is not False
    ]
    return max((text_px(t, TITLE_PX) + GAP for t in titles if t), default=0.0)


def fit(traces: list[dict], layout: dict) -> dict:
    """layout.margin widened to what the labels, colour bars and legends need (never narrowed)."""
    given = layout.get("margin") or {}
    need = axis_margins(traces, layout)
    need["r"] = max(need["r"], colorbar_px(traces, layout))
    out = {**given, **{k: max(given.get(k, 0), round(v)) for k, v in need.items()}}
    side, px = legend_px(traces, layout)
    out[side] += round(px)  # the legend goes outside everything else on its side (e.g. between the title and the plot)
    return out
