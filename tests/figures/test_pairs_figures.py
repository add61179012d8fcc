"""Minimal-pair figures (figures/pairs.py): the heads ranked by change, and two rows side by side; valid plotly, labels
escaped."""

from __future__ import annotations

import json

import numpy as np

from figures import pairs as fp
from tests.apptest_utils import array, checked_spec


def spec(fig) -> dict:
    return checked_spec(json.dumps(fig.to_dict(), default=lambda a: a.tolist()))


def test_the_ranking_puts_the_most_changed_heads_first_with_their_target_change():
    tv = np.array([[0.1, 0.7], [0.3, 0.05]])  # (n_layer, n_head)
    delta = np.array([[0.0, 0.2], [0.4, 0.01]])
    names = ["0.0", "0.1", "1.0", "<b>1.1</b>"]
    fig = spec(fp.ranking(names, tv, delta, "Heads <i>ranked</i>", top=3))
    assert fig["layout"]["xaxis"]["ticktext"] == ["0.1", "1.0", "0.0"]  # by TV: 0.7, 0.3, 0.1
    np.testing.assert_allclose(array(fig["data"][0]["y"]), [0.7, 0.3, 0.1])
    np.testing.assert_allclose(array(fig["data"][1]["y"]), [0.2, 0.4, 0.0])
    assert fig["layout"]["title"]["text"] == "Heads &lt;i&gt;ranked&lt;/i&gt;"
    every = spec(fp.ranking(names, tv, None, "t"))
    assert len(every["data"]) == 1 and "&lt;b&gt;1.1&lt;/b&gt;" in every["layout"]["xaxis"]["ticktext"]


def test_the_rows_side_by_side():
    a, b = np.array([0.5, 0.5, 0.0]), np.array([0.2, 0.0, 0.8])
    fig = spec(fp.rows_side_by_side(a, b, ["The", "<script>x</script>", "big | small"], "Weights"))
    assert [t["name"] for t in fig["data"]] == ["sentence 1", "sentence 2"]
    np.testing.assert_allclose(array(fig["data"][0]["y"]), a)
    np.testing.assert_allclose(array(fig["data"][1]["y"]), b)
    assert "<script" not in json.dumps(fig) and "&lt;script&gt;" in json.dumps(fig)
