"""Accessibility in the browser beyond axe-core: reduced motion, 200 % zoom. axe-core (WCAG 2.0 and 2.1, levels A and
AA, tests/browser/axe.py) runs in the loads other tests make: every page and tab in normal view at a desktop's and a
phone's width in tests/browser/test_browser.py, in presenter view at a projector's sizes in
tests/browser/test_projector.py.

axe does not look inside the charts: their text alternatives are tested in tests/figures/test_describe.py and
tests/app/test_text_alternatives.py.
"""

from __future__ import annotations

import pytest

from scripts.browser import CUT, new_tab, open_tab, wait_rendered
from tests.browser.axe import AXE
from tests.browser.groups import by_group
from ui.a11y import CAPTION

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

WIDE = 1280


def test_axe_core_is_installed():
    """make test installs it (npm ci): a missing file would skip nothing, it fails here."""
    assert AXE.is_file(), "run `npm ci --no-audit --no-fund` (make test and make a11y do)"


@pytest.mark.parametrize("reduce", by_group([True, False], ["reduce", "no-preference"], ["a11y-15_Heads_forming"] * 2))
def test_with_reduced_motion_a_replay_is_stepped_not_played(browser, base_url, reduce):
    """Heads forming's replay: with reduced motion asked for, no ▶ Play (it would redraw the charts every 0.8 s); the
    step slider shows the chosen snapshot and moves one snapshot per key press."""
    tab = new_tab(browser, viewport={"width": WIDE, "height": 900},
                  reduced_motion="reduce" if reduce else "no-preference")
    try:
        tab.goto(f"{base_url}/Heads_forming")
        wait_rendered(tab)
        assert tab.get_by_role("button", name="▶ Play").is_visible() is not reduce
        shown = tab.locator('.st-key-heads_step [data-testid="stSliderThumbValue"]')
        before = shown.inner_text()
        tab.get_by_role("slider", name="Training step").press("ArrowRight")
        wait_rendered(tab)
        assert shown.inner_text() != before and "heads_step" in tab.url
    finally:
        tab.close()


ZOOMED = ("One_head", "Multi_head", "Lecture_example")


@pytest.mark.parametrize("address", by_group(list(ZOOMED), list(ZOOMED), [f"a11y-zoom-{p}" for p in ZOOMED]))
def test_at_200_percent_zoom_nothing_is_cut(browser, base_url, address):
    """A 1280 × 900 window at 200 % zoom is a 640 × 450 page drawn at device scale 2: no text cut with "…", no control
    label under the next column, and the page does not scroll sideways."""
    tab = new_tab(browser, viewport={"width": 640, "height": 450}, device_scale_factor=2)
    try:
        tab.goto(f"{base_url}/{address}")
        wait_rendered(tab)
        assert tab.evaluate(CUT) == []
        assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    finally:
        tab.close()


# The page's background, a caption's colour, and the colours of a chart's tick labels and axis titles.
COLOURS = """() => ({
  page: getComputedStyle(document.querySelector('[data-testid="stApp"]')).backgroundColor,
  caption: getComputedStyle(document.querySelector('[data-testid="stCaptionContainer"]')).color,
  chart: [...new Set([...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
    .filter((p) => p.getBoundingClientRect().width > 0)
    .flatMap((p) => [...p.querySelectorAll('[class$="tick"] > text, text.xtitle, text.ytitle')])
    .map((t) => getComputedStyle(t).fill))],
})"""


@pytest.mark.parametrize("scheme", by_group(["dark"], ["dark"], ["a11y-dark"]))
def test_a_system_that_prefers_dark_gets_the_light_theme(browser, base_url, scheme):
    """(A browser whose system prefers dark got Streamlit's dark theme, in which the captions' and charts' text,
    darkened for 4.5:1 on white, was 2.4–3.4:1 on the dark background; viewer mode has no menu to change it.) The page
    is white, with the captions and the charts' tick labels and axis titles in the checked colour."""
    tab = new_tab(browser, viewport={"width": WIDE, "height": 900}, color_scheme=scheme)
    try:
        tab.goto(f"{base_url}/One_head")
        wait_rendered(tab)
        open_tab(tab, "4 · Mask, then softmax")
        shown = tab.evaluate(COLOURS)
        caption = "rgb({}, {}, {})".format(*(int(CAPTION[i:i + 2], 16) for i in (1, 3, 5)))
        assert shown == {"page": "rgb(255, 255, 255)", "caption": caption, "chart": [caption]}
    finally:
        tab.close()
