"""axe-core (WCAG 2.0 and 2.1, levels A and AA, tests/browser/axe.py) on every page and every tab in normal view,
at a desktop's width (1280 px) and, on the same loaded page, a phone's (390 px): no serious or critical violation.
Presenter view is checked the same way at a projector's sizes, in the loads of tests/browser/test_projector.py.

axe does not look inside the charts: their text alternatives are tested in tests/figures/test_describe.py and
tests/app/test_text_alternatives.py.
"""

from __future__ import annotations

import pytest

from scripts.browser import CUT, new_tab, open_tab, page_url, wait_rendered
from tests.apptest_utils import PAGES as PAGE_FILES
from tests.browser.axe import AXE, add_axe, serious
from tests.browser.groups import by_group

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

WIDE, PHONE = 1280, 390
TAB_LABELS = """() => [...document.querySelectorAll('[data-testid="stMain"] [role="tab"]')].map((t) => t.innerText)"""

PAGES = [None, *PAGE_FILES]  # None: the home page
NAMES = ["home" if p is None else p.stem for p in PAGES]


def test_axe_core_is_installed():
    """make test installs it (npm ci): a missing file would skip nothing, it fails here."""
    assert AXE.is_file(), "run `npm ci --no-audit --no-fund` (make test and make a11y do)"


@pytest.mark.parametrize("page_file", by_group(PAGES, NAMES, [f"a11y-{n}" for n in NAMES]))
def test_no_serious_or_critical_axe_violation(browser, base_url, page_file):
    """One load per page: each tab at 1280 px, then the same page resized to 390 px and each tab again (in reverse
    order, so the open tab is checked first)."""
    tab = new_tab(browser, viewport={"width": WIDE, "height": 900})
    try:
        tab.goto(page_url(base_url, page_file))
        wait_rendered(tab)
        add_axe(tab)
        labels = tab.evaluate(TAB_LABELS) or [None]
        found, checked = [], 0
        for width, order in ((WIDE, labels), (PHONE, labels[::-1])):
            if width != WIDE:
                tab.set_viewport_size({"width": width, "height": 844})
                wait_rendered(tab)
            for i, label in enumerate(order):
                if label is not None and i > 0:
                    shown = tab.evaluate(TAB_LABELS)
                    assert label in shown, (width, label, shown, tab.url)
                    open_tab(tab, label)
                assert tab.locator('[data-testid="stException"]').count() == 0, (width, label)
                found += serious(tab, f"{width} px{f', tab {label}' if label else ''}")
                checked += 1
        assert checked == 2 * len(labels)
        assert found == [], "\n".join(found)
    finally:
        tab.close()


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
