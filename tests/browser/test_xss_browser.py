"""Text typed or linked into the app never runs as HTML, in headless Chromium."""

from __future__ import annotations

import urllib.parse

import pytest

from scripts.browser import page_url, wait_rendered
from tests.apptest_utils import PAGES as PAGE_FILES

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

PAGES = [None, *PAGE_FILES]  # None: the home page
PAYLOADS = ["<script>window.__xss=1</script>", '<img src=x onerror="window.__xss=1">', '<svg onload="window.__xss=1">']


@pytest.mark.parametrize("page_file", PAGES, ids=lambda p: "home" if p is None else p.stem)
def test_xss_in_query_string_is_inert(base_url, tab, page_file):
    tab.goto(page_url(base_url, page_file) + "?sentence=" + urllib.parse.quote(" ".join(PAYLOADS)))  # every payload in one sentence: any one would set it
    wait_rendered(tab)
    assert tab.evaluate("window.__xss") is None
    assert tab.dialogs == []
    assert tab.errors == []


def test_typed_xss_is_inert_and_shown_as_text(base_url, tab):
    tab.goto(page_url(base_url, None))
    wait_rendered(tab)
    box = tab.get_by_role("textbox", name="Sentence")
    for payload in PAYLOADS:
        box.fill(payload)
        box.press("Control+Enter")
        tab.wait_for_timeout(300)
        wait_rendered(tab)
        assert tab.evaluate("window.__xss") is None
    assert tab.dialogs == []
    # The payload's text is shown as tokens, not swallowed as markup.
    assert '<svg␣onload="window' in tab.locator(".stPlotlyChart").first.inner_text().replace("\n", "")
