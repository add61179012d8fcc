"""figures/describe.py: a chart's text alternative says what its numbers say. Expected values are computed here from
a real trace of the bundled model with NumPy (or written by hand), not read from the figure."""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
import pytest

from figures import attention as fa
from figures.describe import MAX_ROWS, describe, grids
from transformer import run_trace

SENTENCE = "The cat sat on the mat."
LAYER, HEAD = 1, 2


@pytest.fixture(scope="module")
def tr(lm):
    return run_trace(lm.model, lm.tokenizer, SENTENCE)


def top_two(row: np.ndarray, allowed: np.ndarray) -> list[int]:
    """The positions of the two largest allowed values of a row, by a plain sort of (−value, position) pairs."""
    return [j for _, j in sorted((-float(row[j]), j) for j in np.flatnonzero(allowed))][:2]


def test_an_attention_map_says_where_each_token_looks_most(tr):
    """Each query row: the key with the largest weight and the next one, with their weights to two decimals; a row
    that sees one key (the first token, causal mask) names only it."""
    weights = tr[f"blocks.{LAYER}.attn.hook_pattern"][HEAD]  # (T, T)
    labels = tr.encoding.labels
    text = describe(fa.pattern_heatmap(tr, LAYER, HEAD))
    assert text.startswith(f"Attention weights, layer {LAYER}, head {HEAD}. Heatmap, {len(labels)} rows")
    assert "query i (looking)" in text and "key j (looked at)" in text
    assert len(labels) <= MAX_ROWS
    for i, label in enumerate(labels):
        first, *then = top_two(weights[i], np.arange(len(labels)) <= i)  # the causal mask: keys 0…i
        expected = f"'{label}' looks most at '{labels[first]}' ({weights[i, first]:.2f})"
        expected += f", then '{labels[then[0]]}' ({weights[i, then[0]]:.2f})." if then else "."
        assert expected in text, (i, expected, text)
    assert text.count(" looks most at ") == len(labels)
    assert "'The' looks most at 'The' (1.00)." in text  # the first token sees only itself


def test_bars_name_the_largest(tr):
    row = tr[f"blocks.{LAYER}.attn.hook_pattern"][HEAD][-1]
    labels = tr.encoding.labels
    text = describe(fa.weight_bars(row, labels, "Weights of query 5"))
    order = sorted(range(len(row)), key=lambda j: -float(row[j]))[:3]
    listed = ", ".join(f"'{labels[j]}' {row[j]:.2f}" for j in order)
    assert text == f"Weights of query 5. {len(row)} bars; the largest: {listed}."


def test_a_line_gives_its_start_end_and_extremes():
    """A plain go.Figure (validated by plotly.py) reads as the app's dicts do."""
    fig = go.Figure(
        go.Scatter(x=[0.5, 1, 2, 4], y=[3.0, 0.25, 7.5, 1.0], mode="lines", name="entropy"),
        layout={"title": {"text": "Entropy vs τ"}, "xaxis": {"title": {"text": "τ"}}, "yaxis": {"title": "bits"}},
    )
    assert describe(fig) == (
        "Entropy vs τ. entropy: bits from 3.00 at τ 0.5 to 1.00 at τ 4; highest 7.50 at τ 2, lowest 0.25 at τ 1."
    )


def test_a_long_map_describes_the_first_rows_and_points_to_the_table(lm):
    text = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer"
    long = run_trace(lm.model, lm.tokenizer, text)
    n = len(long.encoding)
    assert n > MAX_ROWS
    said = describe(fa.pattern_heatmap(long, 0, 0))
    assert said.count(" looks most at ") == MAX_ROWS
    assert f"{n - MAX_ROWS} more rows in the data table" in said


def test_token_text_comes_out_as_plain_text():
    """Labels are HTML-escaped in the figure (plotly reads markup); the description gives the text itself."""
    weights = np.array([[1.0, 0.0], [0.3, 0.7]], dtype=np.float32)
    text = describe(fa.weights_heatmap(weights, ["<b>", "a&b"], None, "W <i>"))
    assert text.startswith("W <i>. ")
    assert "'a&b' looks most at 'a&b' (0.70), then '<b>' (0.30)" in text
    assert "&lt;" not in text and "&amp;" not in text


def test_category_labels_come_out_as_plain_text_too():
    """Labels given as the x and y values themselves (no tick text), escaped as the figures escape user text."""
    spec = {
        "layout": {"title": {"text": "W"}},
        "data": [
            {"type": "heatmap", "x": ["&lt;b&gt;", "a"], "y": ["&lt;b&gt;", "a"], "z": [[0.9, 0.1], [0.2, 0.8]]},
            {"type": "bar", "x": ["&lt;i&gt;", "b&amp;c"], "y": [0.3, 0.7]},
        ],
    }
    text = describe(spec)
    assert "row <b> is largest at column <b> (0.90)" in text and "b&c 0.70, <i> 0.30" in text
    assert "&lt;" not in text and "&amp;" not in text


def test_grids_give_the_map_with_its_labels(tr):
    weights = tr[f"blocks.{LAYER}.attn.hook_pattern"][HEAD]
    [(name, rows, cols, z)] = list(grids(fa.pattern_heatmap(tr, LAYER, HEAD)))
    assert rows == cols == list(tr.encoding.labels)
    visible = np.tril(np.ones_like(weights, dtype=bool))
    np.testing.assert_array_equal(z[visible], weights[visible])
    assert np.isnan(z[~visible]).all()  # masked cells: blank in the chart, empty in the table


def test_every_number_in_a_description_is_a_value_of_the_chart(tr):
    """No number is made up: each one printed (two decimals) is a weight of the map, rounded."""
    weights = tr[f"blocks.{LAYER}.attn.hook_pattern"][HEAD]
    text = describe(fa.pattern_heatmap(tr, LAYER, HEAD))
    printed = {float(v) for v in re.findall(r"\((\d+\.\d\d)\)", text)}
    assert printed and printed <= {round(float(w), 2) for w in weights.ravel()}
