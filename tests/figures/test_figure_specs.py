"""Every figure every page sends is in plotly's validated form (figures are built without plotly.py's validation),
and no axis makes plotly.js measure its tick labels against the div on every redraw (ticklabeloverflow "allow")."""

from __future__ import annotations

import pytest

from tests.apptest_utils import PAGES, assert_ok, charts_by_key, run_page

NO_CHARTS = {"0_Guided_tour"}  # pages that draw no figure (the tour's stops link to the pages that do)
CHART_PAGES = ["app.py", *(str(p) for p in PAGES if p.stem not in NO_CHARTS)]  # each must draw some: asserted below


@pytest.mark.parametrize("page", CHART_PAGES, ids=lambda p: p.rsplit("/", 1)[-1])
def test_every_figure_is_valid_plotly(page):
    at = run_page(page, sentence="The cat sat on the mat, and the cat slept.")
    assert_ok(at)
    figures = charts_by_key(at)  # re-validates each figure and compares it with what was sent
    assert figures
    for key, fig in figures.items():
        axes = {name: axis for name, axis in fig["layout"].items() if name.startswith(("xaxis", "yaxis"))}
        assert axes, key
        assert all(axis.get("ticklabeloverflow") == "allow" for axis in axes.values()), (key, axes)
