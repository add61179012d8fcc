"""figures.narrow: in a narrow column the colour bar and a legend beside the plot go under
it, and the plot keeps its height; numbers plotly.js would write too small in heatmap cells are left to the hover."""

from __future__ import annotations

import copy
import math

import numpy as np
import plotly.graph_objects as go
import pytest

from figures.attention import padding_heatmap, scores_heatmap
from figures.common import LEGEND_BELOW, figure, heatmap, layout_dict
from figures.cross_attention import alignment_heatmap
from figures.multihead import weight_panels
from figures.narrow import (
    CELL_NOTE,
    MIN_CELL_TEXT_PX,
    cell_texts,
    narrow,
    readable_from,
    without_cell_numbers,
)
from figures.positions import waves
from figures.prediction import lens_heatmap


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


PHONE_PX = 358  # a phone's chart: its whole column


def plotly_px(rows: int, cols: int, chars: int, plot_w: float, plot_h: float, font_px: float = 12) -> int:
    """The size plotly.js (src/traces/heatmap/plot.js) gives a heatmap's cell texts, `chars` characters each, on a plot
    plot_w × plot_h px: the smallest distance between two texts (whole pixels) / (0.65 em a character) across, / 1.3
    (its line spacing) down, at most the layout's font."""
    return min(int(plot_w // cols / chars / 0.65), int(plot_h // rows / 1.3), int(font_px))


def test_the_reference_rule_gives_the_hand_sums_and_what_chromium_drew():
    assert plotly_px(2, 2, 4, 200, 200) == 12  # "0.25" in cells 100 × 100 px: the layout's 12 px
    assert plotly_px(2, 2, 4, 40, 200) == 7  # 20 px / 4 / 0.65 = 7.7
    assert plotly_px(2, 2, 4, 200, 20) == 7  # 10 px / 1.3 = 7.7
    # 10 columns on 235 px: texts 23 or 24 px apart, and 23 / 4 / 0.65 = 8.8 (Chromium drew them at 8 px)
    assert plotly_px(10, 10, 4, 235, 300) == 8


def test_the_numbers_a_heatmap_writes():
    z = np.array([[0.25, 1.0], [-12.0, np.nan]])  # NaN: a masked cell, blank
    assert cell_texts({"type": "heatmap", "z": z, "texttemplate": "%{z:.2f}"}) == (2, 2, 6)  # "-12.00"
    assert cell_texts({"type": "heatmap", "z": z, "texttemplate": "%{z:.3~g}"}) == (2, 2, 4)  # "0.25", "-12"
    assert cell_texts({"type": "heatmap", "z": z, "texttemplate": "%{text}"}) is None  # words: left as they are
    assert cell_texts({"type": "heatmap", "z": z}) is None


def test_the_words_a_heatmap_writes():
    """With `words`, the tokens as drawn (escaped for HTML in the figure, read unescaped): 2 texts, 19 positions, the
    longest "␣bear" or "[pad]" (5 characters); a heatmap of numbers writes no words."""
    assert cell_texts(nineteen_token_batch()["data"][0], words=True) == (2, 19, 5)
    tags = {"type": "heatmap", "texttemplate": "%{text}", "text": [["&lt;b&gt;", "a"]]}
    assert cell_texts(tags, words=True) == (1, 2, 3)  # "<b>", drawn as such
    assert cell_texts(ten_token_scores()["data"][0], words=True) is None


def ten_token_scores() -> dict:
    scores = np.random.default_rng(3).normal(0, 3, (10, 10))  # "−5.12": 5 characters
    return scores_heatmap(scores, [f"tok{i}" for i in range(10)], "Raw scores").to_dict()


def nineteen_token_batch() -> dict:
    tokens = [["The", "␣h", "i", "k", "ing", "␣t", "ra", "il", "␣l", "ed", "␣us", "␣th", "r", "ough", "␣bear", "␣cou",
               "nt", "ry", "."], ["The", "␣c", "at", "␣s", "at", "."]]  # the bundled model's tokens
    real = np.array([[True] * 19, [True] * 6 + [False] * 13])
    return padding_heatmap(real, tokens, ["A (yours)", "B (second)"], "The batch").to_dict()


@pytest.mark.parametrize(
    ("spec", "words", "narrow_column"),
    [(ten_token_scores(), False, False), (ten_token_scores(), False, True), (nineteen_token_batch(), True, False)],
    ids=["numbers", "numbers-narrow", "tokens"],
)
def test_the_least_width_for_readable_texts_is_where_plotly_writes_them_at_9_px(spec, words, narrow_column):
    least = readable_from(spec, narrow_column, words=words)
    layout, t = spec["layout"], spec["data"][0]
    m = layout["margin"]
    right = 16 if narrow_column else m["r"]  # a narrow column's colour bar goes under the plot

    def px(width: float) -> int:
        return plotly_px(*cell_texts(t, words), width - m["l"] - right, layout["height"] - m["t"] - m["b"])

    assert px(least) >= MIN_CELL_TEXT_PX > px(least - 1)
    assert PHONE_PX < least < 1000  # a phone's chart is too narrow for them, a desktop's wide enough


def test_numbers_too_small_on_a_phone_are_left_to_the_hover():
    spec = ten_token_scores()
    before = copy.deepcopy(spec)
    out = without_cell_numbers(spec)
    assert spec == before  # the cached figure is not changed
    assert "texttemplate" not in out["data"][0] and "texttemplate" in spec["data"][0]
    assert out["data"][0]["hovertemplate"] == spec["data"][0]["hovertemplate"]  # a tap still gives the number
    assert out["layout"]["title"]["subtitle"]["text"] == CELL_NOTE
    assert plot_box(out["layout"])[0] == plot_box(spec["layout"])[0]  # the note has its own room
    go.Figure(narrow(out))


def test_rows_too_short_for_readable_numbers_never_keep_them():
    spec = heatmap(np.zeros((40, 3)), show_values=True, height=300).to_dict()  # 40 rows in ~200 px: 5 px each
    assert readable_from(spec, narrow_column=False) == math.inf


def test_a_map_whose_numbers_stood_for_its_colour_bar_gets_the_bar_back():
    weights = np.random.default_rng(4).dirichlet(np.ones(12), size=10)  # (10, 12)
    spec = alignment_heatmap(weights, [f"mot{i}" for i in range(10)], [f"word{j}" for j in range(12)]).to_dict()
    assert spec["data"][0]["showscale"] is False and spec["data"][0]["texttemplate"]
    assert readable_from(spec, narrow_column=True) > PHONE_PX
    out = without_cell_numbers(spec)
    assert out["data"][0]["showscale"] is True and "texttemplate" not in out["data"][0]
    assert out["layout"]["margin"]["r"] > spec["layout"]["margin"]["r"]  # room for the bar beside the plot…
    bar = narrow(out)["data"][0]["colorbar"]
    assert bar["orientation"] == "h"  # …or under it, in a narrow column


def test_words_written_in_cells_are_not_judged():
    probs = np.full((6, 10), 0.5)
    spec = lens_heatmap(probs, [["word"] * 10] * 6, [f"s{i}" for i in range(6)], list(range(10)), list("abcdefghij"))
    assert readable_from(spec.to_dict(), narrow_column=True) is None
