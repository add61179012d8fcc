"""Text typed or linked into the app never runs as HTML, in headless Chromium."""

from __future__ import annotations

import pytest

from scripts.browser import page_url, wait_rendered
from tests.apptest_utils import XSS_PAYLOADS as PAYLOADS

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

# Every page opened with the payloads in its address: tests/browser/test_browser.py (one load per page checks that too).


def test_typed_xss_is_inert_and_shown_as_text(base_url, tab):
    tab.goto(page_url(base_url, None))
    wait_rendered(tab)
    box = tab.get_by_role("textbox", name="Sentence")
    for payload in PAYLOADS:
        box.fill(payload)
        box.press("Control+Enter")
        wait_rendered(tab)
        assert tab.evaluate("window.__xss") is None
    assert tab.dialogs == []
    # The payload's text is shown as tokens, not swallowed as markup.
    assert '<svg␣onload="window' in tab.locator(".stPlotlyChart").first.inner_text().replace("\n", "")
