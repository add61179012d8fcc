"""A figure drawn in a narrow column (a phone, or three charts in a row): its colour bar and legend under the plot.

Beside the plot, a colour bar takes ~110–150 px of width and a legend ~100 px or more: on a phone, whose column
is ~358 px, token labels on the left and a colour bar on the right leave the plot 60–130 px. Under the plot they
take height instead, and the figure grows by that height, so the plot keeps its own.
"""

from __future__ import annotations

from .common import LEGEND_BELOW
from .margins import TICK_PX, TITLE_PX, axis_margins, colorbar_px, colorbars, legend_px, title_text

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
