"""Attention maps write their numbers into the cells up to 16 tokens, and beyond that say why there are none."""

from __future__ import annotations

import numpy as np
import pytest

from figures.attention import scores_heatmap, weights_heatmap


def maps(T: int):
    rng = np.random.default_rng(T)
    scores = rng.normal(size=(T, T))
    weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    labels = [f"t{i}" for i in range(T)]
    return (
        scores_heatmap(scores, labels, "Raw scores").to_dict(),
        weights_heatmap(weights, labels, None, "Attention weights α").to_dict(),
    )


@pytest.mark.parametrize("T", [1, 9, 13, 16])
def test_numbers_in_the_cells_up_to_16_tokens(T):
    for fig in maps(T):
        assert fig["data"][0]["texttemplate"] == "%{z:.2f}"
        assert "subtitle" not in fig["layout"]["title"]


@pytest.mark.parametrize("T", [17, 40])
def test_beyond_16_tokens_the_chart_says_why_there_are_no_numbers(T):
    short_scores, short_weights = maps(16)
    for fig, short in zip(maps(T), (short_scores, short_weights), strict=True):
        assert "texttemplate" not in fig["data"][0]
        assert fig["layout"]["title"]["subtitle"]["text"] == "numbers hidden above 16 tokens: hover a cell"
        # the note has room of its own under the title: 20 px more at the top, and the plot keeps its height
        assert fig["layout"]["margin"]["t"] == short["layout"]["margin"]["t"] + 20
        assert fig["layout"]["height"] - fig["layout"]["margin"]["t"] == short["layout"]["height"] - short["layout"][
            "margin"
        ]["t"]


def test_a_map_asked_for_without_numbers_has_no_note():
    fig = weights_heatmap(np.eye(30), [str(i) for i in range(30)], None, "w", values=False).to_dict()
    assert "texttemplate" not in fig["data"][0] and "subtitle" not in (fig["layout"]["title"] or {})
