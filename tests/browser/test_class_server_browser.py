"""`make serve` in a browser: a student whose process dies is served by a live one, with the same view."""

from __future__ import annotations

import urllib.parse

import pytest

from scripts.browser import new_tab, wait_rendered
from scripts.serve import serving

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

VIEW = {"sentence": "The cat sat on the mat because it was tired.", "layer": "1", "head": "2"}


def test_a_student_of_a_dead_process_comes_back_on_a_live_one_with_the_view(browser):
    with serving(2) as c:
        context = browser.new_context(viewport={"width": 1300, "height": 900})
        page = new_tab(context)
        page.goto(f"{c.url}/?{urllib.parse.urlencode(VIEW)}")  # the home page: its first chart names layer and head
        wait_rendered(page)
        chart = page.locator(".stPlotlyChart").first
        playwright_api.expect(chart).to_contain_text("layer 1, head 2")
        served_by = next(k["value"] for k in context.cookies() if k["name"] == "ATLAS_REPLICA")
        dead = c.procs[int(served_by.removeprefix("atlas")) - 1]
        dead.kill()
        dead.wait(10)
        # The page reconnects by itself (no reload) to the other process, where the next move runs with the view it
        # had: a session there answers (head 2 → 3), on the same sentence and layer.
        status = page.locator('[data-testid="stConnectionStatus"]')
        status.wait_for(state="visible", timeout=10_000)  # the page sees its process go…
        status.wait_for(state="detached", timeout=30_000)  # …and connects again, through the proxy, to the live one
        wait_rendered(page)  # where its first run draws the view again
        head = page.locator('[data-testid="stSidebar"] input[aria-label="Head"]')
        # A key press in the second or so after the page reconnected can be lost (the slider does not move and
        # nothing is sent), or taken back by a run that answers the reconnect under load: pressed again until the
        # chart shows head 3, as a student would.
        for _ in range(10):
            if head.input_value() != "3":
                head.press("ArrowRight")
            page.wait_for_timeout(1000)
            wait_rendered(page)
            if "layer 1, head 3" in chart.inner_text():
                break
        playwright_api.expect(chart).to_contain_text("layer 1, head 3", timeout=30_000)
        wait_rendered(page)
        assert page.get_by_role("textbox", name="Sentence").input_value() == VIEW["sentence"]
        assert page.locator('[data-testid="stException"]').count() == 0
        context.close()
