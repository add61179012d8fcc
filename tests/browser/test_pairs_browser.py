"""The minimal-pair section in headless Chromium: one load of One head from a link that opens the section with a
second sentence holding markup; both charts draw, the markup stays text, no console error."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import pytest

from scripts.browser import page_url, wait_rendered
from tests.apptest_utils import XSS_PAYLOADS

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser


def test_a_linked_second_sentence_is_compared_and_stays_text(base_url, tab):
    second = f"The hiking trail led us {XSS_PAYLOADS[1]} through bear country."
    query = {"model": "shakespeare-gpt", "pairs_open": "true", "pairs_second": second}
    tab.goto(page_url(base_url, Path("3_One_head.py")) + "?" + urlencode(query))
    wait_rendered(tab)
    section = tab.locator(".stExpander", has_text="Compare with a second sentence")
    assert section.get_by_role("textbox", name="Second sentence").input_value() == second
    charts = section.locator(".stPlotlyChart")
    assert charts.count() == 2 and "changes most" in charts.first.inner_text()
    assert "< (2)" in charts.nth(1).inner_text()  # the payload's "<", a token of sentence 2, written as text
    assert tab.evaluate("window.__xss") is None and tab.dialogs == [] and tab.errors == []
