"""Every chart's text alternative on the pages (ui/a11y.py): a description a screen reader reads as the chart's name
(its `alt`), and on request the description and the chart's numbers as a table. Expected values come from a fresh
trace of the bundled model, read with NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests import apptest_utils as u
from transformer import run_trace
from ui import a11y

PAGE = u.page_path("3_One_head")
SENTENCE = "The cat sat on the mat."
LAYER, HEAD = 1, 2
ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")  # lessons.words.md's backslash before each ASCII punctuation mark


@pytest.fixture(scope="module")
def weights(lm) -> np.ndarray:
    """The head's attention weights (T, T), from a trace of our own."""
    return run_trace(lm.model, lm.tokenizer, SENTENCE)[f"blocks.{LAYER}.attn.hook_pattern"][HEAD]


@pytest.fixture(scope="module")
def labels(lm) -> list[str]:
    return list(lm.tokenizer.encode(SENTENCE).labels)


def page():
    at = u.run_page(PAGE, sentence=SENTENCE, layer=str(LAYER), head=str(HEAD))
    u.assert_ok(at)
    return at


def descriptions(at) -> list[str]:
    """The charts' descriptions as sent: each chart's `alt` (Streamlit makes it the chart's aria-label)."""
    return [c.proto.alt for c in at.get("plotly_chart")]


def test_every_chart_has_a_description_for_screen_readers():
    """A description for every chart, on every tab, each starting with its chart's title."""
    from figures.describe import text_of

    at = page()
    opened = 0
    for _ in u.each_tab(at):
        titles = [text_of(c["layout"].get("title")) for c in u.charts(at)]
        said = descriptions(at)
        assert titles and len(said) == len(titles)
        assert all(d.startswith(t + ".") for d, t in zip(said, titles, strict=True)), said
        opened += 1
    assert opened == 6


def test_one_head_says_where_the_top_weight_is(weights, labels):
    """Step 4's map of weights: each query's most-attended key and its weight, as the trace has them."""
    at = u.open_tab(page(), "onehead_step", "4 ·")
    [said] = [d for d in descriptions(at) if d.startswith("Attention weights α")]
    below = weights[1:]  # the first token sees only itself (weight 1): the top weight of the other rows
    i, j = np.unravel_index(np.argmax(below), below.shape)
    i += 1
    assert f"'{labels[i]}' looks most at '{labels[j]}' ({weights[i, j]:.2f})" in said
    last = int(np.argmax(weights[-1]))
    assert f"'{labels[-1]}' looks most at '{labels[last]}' ({weights[-1, last]:.2f})" in said


def test_the_chosen_tokens_attention_row_reads_as_a_table(weights, labels):
    """Step 5, a chosen query token: its row of weights in the bars' data table (opened on request: a closed one
    draws nothing)."""
    i = 3
    at = page()
    at.session_state["onehead_query"] = i
    u.open_tab(at, "onehead_step", "5 ·")
    assert not at.dataframe  # closed: no table sent
    at.session_state["onehead_bars" + a11y.TABLE_SUFFIX] = True
    at.run()
    u.assert_ok(at)
    [table] = [d.value for d in at.dataframe]
    assert list(table["x"]) == labels
    np.testing.assert_allclose(table["y"].to_numpy(dtype=float), weights[i], rtol=1e-6)
    shown = [ESCAPED.sub(r"\1", m.value) for m in at.markdown]
    j = int(np.argmax(weights[i]))
    assert any(t.startswith(f"Weights of query {i}.") and f"'{labels[j]}' {weights[i, j]:.2f}" in t for t in shown)


@pytest.mark.parametrize("page_file", u.PAGE_FILES, ids=lambda p: p.rsplit("/", 1)[-1])
def test_every_chart_of_every_page_has_a_description_and_a_table_a_browser_can_take(page_file):
    """Each chart of each tab: a description that starts with its title, and at least one table, every column of
    one type (Arrow converts it as it is: a column mixing text and numbers makes Streamlit fall back and log a
    traceback)."""
    import pyarrow as pa

    from figures.describe import describe, text_of

    at = u.run_page(page_file)
    u.assert_ok(at)
    seen = 0
    for _ in [None, *u.each_tab(at)]:
        for key, spec in u.charts_by_key(at).items():
            title = text_of(spec["layout"].get("title"))
            assert describe(spec).startswith((title or "Chart") + "."), key
            tables = a11y.tables(spec)
            assert tables, key
            for _, table in tables:
                pa.Table.from_pandas(table)  # raises on a column of mixed types
            seen += 1
    assert seen or page_file.endswith("0_Guided_tour.py")


def test_a_chart_drawn_again_from_the_shared_cache_is_not_described_again(monkeypatch):
    """Positional encoding's figures come from the shared cache (ui/caches/embeddings.py): a rerun that draws the same
    figures gives the same descriptions without computing any again."""
    calls = []
    real = a11y.describe
    monkeypatch.setattr(a11y, "describe", lambda fig: calls.append(fig) or real(fig))
    at = u.run_page(u.page_path("2_Positional_encoding"), positions_length="37")  # a length no other test draws
    u.assert_ok(at)
    first = descriptions(at)
    waves = [spec for spec in calls if spec["layout"]["title"]["text"].startswith("A few dimensions as waves")]
    assert len(waves) == 1  # a new figure: described on its first drawing
    calls.clear()
    at.run()
    u.assert_ok(at)
    assert descriptions(at) == first
    assert calls == []


@pytest.mark.parametrize("page_file", ["3_One_head", "5_Softmax_and_temperature"])
def test_a_page_that_builds_its_figures_on_every_run_describes_none_again_for_the_same_view(page_file, monkeypatch):
    """These pages build their figures on every run (figures/reuse.py returns the figure built before for equal
    arguments): the sidebar's τ moved away and back gives the first run's charts, no description computed again."""
    from figures import reuse

    monkeypatch.setattr(reuse, "KEPT", reuse.Figures())  # no figure another test left
    calls = []
    real = a11y.describe
    monkeypatch.setattr(a11y, "describe", lambda fig: calls.append(fig) or real(fig))
    at = u.run_page(u.page_path(page_file), sentence="A sentence no other test draws, 7 tokens.")
    u.assert_ok(at)
    first, specs = descriptions(at), u.charts(at)
    assert len(calls) == len(first) > 0
    at.slider(key="w_temperature").set_value(0.95).run()
    u.assert_ok(at)
    calls.clear()
    at.slider(key="w_temperature").set_value(1.0).run()
    u.assert_ok(at)
    assert descriptions(at) == first and u.charts(at) == specs
    assert calls == []


@pytest.mark.parametrize("page_file", ["2_Positional_encoding", "3_One_head"])
def test_a_description_kept_from_the_figure_says_what_the_chart_as_sent_shows(page_file):
    """A description is computed from the figure as built and kept (ui/a11y.description); presenter view draws it with
    other fonts, heights and cell text sizes. Read afresh from each chart as sent in presenter view, the description is
    the same, word for word."""
    from figures.describe import describe
    from ui import presenter

    at = u.run_page(u.page_path(page_file), present="true")
    u.assert_ok(at)
    specs = u.charts(at)
    assert specs and all(spec["layout"]["font"]["size"] == presenter.TICK_PX for spec in specs)  # drawn for presenting
    assert descriptions(at) == [describe(spec) for spec in specs]


def test_a_figures_description_goes_with_the_figure():
    """The description kept for a figure is dropped when the figure is: a figure built afresh on every run leaves
    nothing behind, and a new figure at the same address is described anew."""
    import gc

    from figures.common import figure

    fig = figure([{"type": "bar", "x": ["a", "b"], "y": [1.0, 3.0]}], {"title": {"text": "Two bars"}})
    assert a11y.description(fig).startswith("Two bars")
    key = id(fig)
    assert key in a11y._DESCRIBED
    del fig
    gc.collect()
    assert key not in a11y._DESCRIBED
