"""Every figure every page sends is in plotly's validated form (figures are built without plotly.py's validation)."""

from __future__ import annotations

import pytest

from tests.apptest_utils import PAGES, assert_ok, charts, run_page


@pytest.mark.parametrize("page", ["app.py", *(str(p) for p in PAGES)], ids=lambda p: p.rsplit("/", 1)[-1])
def test_every_figure_is_valid_plotly(page):
    at = run_page(page, sentence="The cat sat on the mat, and the cat slept.")
    assert_ok(at)
    assert charts(at)  # charts() re-validates each figure and compares it with what was sent
