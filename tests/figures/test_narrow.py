"""figures.narrow: in a narrow column the colour bar and a legend beside the plot go under
it, and the plot keeps its height."""

from __future__ import annotations

import copy

import numpy as np
import plotly.graph_objects as go

from figures.common import LEGEND_BELOW, figure, heatmap, layout_dict
from figures.multihead import weight_panels
from figures.narrow import narrow
from figures.positions import waves


def plot_box(layout: dict) -> tuple[float, float]:
    """The plot area's height, and the width the margins take from it."""
    m = layout["margin"]
    return layout["height"] - m["t"] - m["b"], m["l"] + m["r"]


def test_a_colour_bar_goes_under_the_plot_which_keeps_its_height_and_gains_the_width():
    spec = heatmap(
        np.random.default_rng(0).random((5, 5)),
        list("abcde"),
        list("abcde"),
        title="weights",
        x_title="key",
        y_title="query",
    ).to_dict()
    before = copy.deepcopy(spec)
    out = narrow(spec)
    assert spec == before  # the cached figure is not changed
    bar = out["data"][0]["colorbar"]
    assert (bar["orientation"], bar["yref"], bar["y"], bar["yanchor"]) == ("h", "container", 0, "bottom")
    (h0, side0), (h1, side1) = plot_box(spec["layout"]), plot_box(out["layout"])
    assert h1 == h0
    assert side0 - side1 >= 90  # the ~110 px the bar took on the right
    go.Figure(out)  # still a valid figure


def test_a_shared_colour_axis_moves_its_bar_and_keeps_its_title():
    maps = np.random.default_rng(1).random((2, 4, 4))
    spec = weight_panels(maps, list("abcd"), np.tril(np.ones((4, 4), bool)), ["head 0", "head 1"], "heads").to_dict()
    out = narrow(spec)
    bar = out["layout"]["coloraxis"]["colorbar"]
    assert (
        bar["orientation"] == "h"
        and bar["title"]["text"] == spec["layout"]["coloraxis"]["colorbar"]["title"]["text"]
    )
    assert plot_box(out["layout"])[0] == plot_box(spec["layout"])[0]
    assert out["layout"]["margin"]["r"] < spec["layout"]["margin"]["r"] - 90
    go.Figure(out)


def test_a_legend_beside_the_plot_goes_under_it():
    spec = waves(np.random.default_rng(2).random((16, 8)), [0, 1, 6, 7]).to_dict()
    out = narrow(spec)
    assert {k: out["layout"]["legend"][k] for k in LEGEND_BELOW} == LEGEND_BELOW
    assert out["layout"]["margin"]["r"] < spec["layout"]["margin"]["r"] - 60
    assert plot_box(out["layout"])[0] == plot_box(spec["layout"])[0]
    go.Figure(out)


def test_figures_with_nothing_beside_the_plot_or_two_colour_bars_stay_as_they_are():
    line = figure([{"type": "scatter", "x": [0, 1], "y": [1, 2]}], layout_dict("one line", 300)).to_dict()
    assert narrow(line) == line
    no_height = {**line, "layout": {k: v for k, v in line["layout"].items() if k != "height"}}
    assert narrow(no_height) is no_height  # no height is set: Streamlit's default stays
    z = np.zeros((2, 2))
    two = figure(
        [{"type": "heatmap", "z": z}, {"type": "heatmap", "z": z, "xaxis": "x2"}], layout_dict("two bars", 300)
    ).to_dict()
    assert narrow(two) == two
