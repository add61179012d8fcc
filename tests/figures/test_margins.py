"""figures.margins: room for labels, colour bars and legends, estimated from the figure itself."""

from __future__ import annotations

import numpy as np

from figures import margins
from figures.common import bars, grouped_bars, heatmap


def margin(fig) -> dict:
    return fig.to_dict()["layout"]["margin"]


def test_longer_and_wider_tick_labels_get_more_room():
    z = np.zeros((3, 3))
    short = margin(heatmap(z, ["a", "b", "c"], ["a", "b", "c"]))
    long = margin(heatmap(z, ["a", "b", "c"], ["a", "b", "internationalization"]))
    cjk = margin(heatmap(z, ["a", "b", "c"], ["a", "b", "日本語の"]))
    ascii_same_length = margin(heatmap(z, ["a", "b", "c"], ["a", "b", "abcd"]))
    assert long["l"] > short["l"] and cjk["l"] > ascii_same_length["l"]
    # escaped text is measured as drawn: "<b>", 3 characters
    assert margins.text_px("&lt;b&gt;") == margins.text_px("(b)")
    assert margins.text_px("<b>x</b>") == margins.text_px("x")  # plotly's own markup is not drawn


def test_axis_titles_crowded_labels_colour_bars_and_legends_take_room():
    z = np.zeros((3, 3))
    plain = margin(heatmap(z, ["a", "b", "c"], ["a", "b", "c"]))
    titled = margin(heatmap(z, ["a", "b", "c"], ["a", "b", "c"], x_title="key", y_title="query"))
    assert titled["l"] > plain["l"] and titled["b"] > plain["b"]
    many = [f"token{i}" for i in range(30)]  # these turn vertical in a column: their width becomes the height
    assert margin(heatmap(np.zeros((30, 30)), many, many))["b"] > margins.text_px("token29")
    assert plain["r"] > 60  # the colour bar and its numbers
    assert margin(bars(np.ones(3), ["a", "b", "c"]))["r"] < 60  # no colour bar
    one, two = (
        margin(grouped_bars({k: np.ones(3) for k in names}, ["a", "b", "c"], title="t"))
        for names in (["x"], ["x", "y"])
    )
    # the legend sits under the x-axis title, clear of the chart title
    assert two["b"] > one["b"] and two["t"] == one["t"]


def test_given_margins_are_never_narrowed():
    layout = {
        "margin": {"l": 300, "r": 200, "t": 150, "b": 120},
        "yaxis": {"ticktext": ["a"]},
        "xaxis": {"ticktext": ["b"]},
    }
    assert margins.fit([], layout) == layout["margin"]


def test_a_y_axis_title_fits_along_its_plot():
    """A y-axis title longer than the plot is tall runs into the chart title (Cross-attention's "French word written
    (query: decoder)" on a 2-row map): the figure grows until the plot holds it."""
    from figures.cross_attention import alignment_heatmap

    for fig in (
        alignment_heatmap(np.eye(2), ["a", "b"], ["x", "y"], gold=[(0, 0)], title="t"),
        heatmap(np.zeros((2, 2)), y_title="a long title " * 4, height=200),
    ):
        lay = fig.to_dict()["layout"]
        plot_h = lay["height"] - lay["margin"]["t"] - lay["margin"]["b"]
        assert plot_h >= margins.text_px(lay["yaxis"]["title"]["text"], margins.TITLE_PX)
