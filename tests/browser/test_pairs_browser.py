"""The minimal-pair section in headless Chromium, in one load of One head on SmolLM2 from a link: the section open
on a pair whose deciding word follows the chosen token ("it"), both sentences ending in markup. The page says that no
decoder head can see the word and draws MiniLM's ranking and rows instead; the markup stays text; no console error."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import pytest

from scripts.browser import page_url, wait_rendered
from tests.apptest_utils import XSS_PAYLOADS
from transformer.loading import missing_real_models

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(missing_real_models()), reason="the real models are not installed"),
]
MARKUP = XSS_PAYLOADS[1]
BIG = f"The trophy doesn't fit in the suitcase because it is too big. {MARKUP}"


def test_a_pair_after_the_token_shows_the_encoder_and_markup_stays_text(base_url, tab):
    query = {
        "model": "smollm2-135m", "sentence": BIG, "onehead_step": "5 · One query's weighted sum",
        "onehead_query": "10: ␣it", "pairs_open": "true", "pairs_second": BIG.replace("big", "small"),
    }
    tab.goto(page_url(base_url, Path("3_One_head.py")) + "?" + urlencode(query))
    wait_rendered(tab)
    section = tab.locator(".stExpander", has_text="Compare with a second sentence")
    said = section.inner_text()
    assert "comes after «␣it»: in this decoder no head can see it" in said and "Here is the encoder, minilm-l6" in said
    charts = section.locator(".stPlotlyChart")
    assert charts.count() == 2 and "minilm-l6: the heads whose row for “it” changes most" in charts.first.inner_text()
    assert "big | small" in charts.nth(1).inner_text()  # MiniLM's rows, on the slots both sentences share
    assert "\n<\nim\n##g\n" in charts.nth(1).inner_text()  # the markup's tokens (<, im, ##g …), written as text
    assert tab.evaluate("window.__xss") is None and tab.dialogs == [] and tab.errors == []
