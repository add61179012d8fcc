"""The keyboard alone, in headless Chromium, on One head and Multi-head: Tab to the sentence; change layer, head and τ
with the arrow keys; open each tab with the arrow keys; skip to the first chart and open its text alternative. At
every step the focused control shows a focus outline (ui/a11y.py). Screenshots of One head's walk go to
docs/views/keyboard_*.png."""

from __future__ import annotations

import os
import urllib.parse

import pytest

from scripts.browser import ROOT, new_tab, wait_rendered
from tests.browser.groups import by_group

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

SHOTS = ROOT / "docs" / "views"
# The focused element: what it is, and whether a focus outline is drawn around it: on it, or (a switch's input, drawn
# by its label; a select box's input, drawn by its box; a slider's hidden range input, by its thumb) on an ancestor at
# most three levels up, with a box on the screen (not clipped away, transparent or hidden).
FOCUSED = """() => {
  const e = document.activeElement;
  const hidden = (el) => {  // inside a visually hidden box (a slider's range input), transparent or invisible
    for (let a = el; a; a = a.parentElement) {
      const s = getComputedStyle(a), r = a.getBoundingClientRect();
      if (s.clipPath !== 'none' || s.opacity === '0' || s.visibility === 'hidden'
          || (s.overflow === 'hidden' && (r.width <= 1 || r.height <= 1))) return true;
    }
    return false;
  };
  let o = e, outline = null;
  for (let k = 0; k < 4 && o && !outline; k++, o = o.parentElement) {
    const s = getComputedStyle(o), r = o.getBoundingClientRect();
    if (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2 && s.outlineColor !== 'rgba(0, 0, 0, 0)'
        && r.width > 4 && r.height > 4 && !hidden(o)) outline = `${s.outlineWidth} ${s.outlineStyle} ${s.outlineColor}`;
  }
  return {tag: e.tagName, role: e.getAttribute('role'), id: e.id, outline,
    label: (e.getAttribute('aria-label') || e.innerText || '').trim().slice(0, 40),
    selected: e.getAttribute('aria-selected')};
}"""
PAGES = {"One_head": "3_One_head", "Multi_head": "7_Multi_head"}
SUMMARY = "Read as text, data as table"


FADE_MS = 300  # Streamlit's toolbars and heading links fade in (0.15 s) when they take the focus


def focused(tab) -> dict:
    """The focused element (FOCUSED), read again after a fade-in when its outline is not shown yet."""
    now = tab.evaluate(FOCUSED)
    if not now["outline"]:
        tab.wait_for_timeout(FADE_MS)
        now = tab.evaluate(FOCUSED)
    return now


def press_until(tab, found, key: str = "Tab", limit: int = 80) -> dict:
    """Press `key` until found(the focused element) is true; every element passed on the way shows its focus."""
    passed = []
    for _ in range(limit):
        tab.keyboard.press(key)
        now = focused(tab)
        assert now["outline"], f"no visible focus on {now}, after {passed[-5:]}"
        if found(now):
            return now
        passed.append((now["tag"], now["label"]))
    raise AssertionError(f"not reached with {limit} presses of {key}: {passed}")


def query(tab) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(tab.url).query))


def arrow(tab, key: str) -> dict:
    """Press an arrow key on the focused control, wait for the page, and check the focus stayed there, visibly."""
    before = focused(tab)
    tab.keyboard.press(key)
    wait_rendered(tab)
    now = focused(tab)
    assert now["outline"] and now["tag"] == before["tag"], (before, now)
    return now


@pytest.mark.parametrize("address", by_group(list(PAGES), list(PAGES), [f"keyboard-{p}" for p in PAGES]))
def test_a_keyboard_walk_through_the_page(profile, base_url, address):
    tab = new_tab(profile, viewport={"width": 1280, "height": 900})
    shots = address == "One_head" and bool(os.environ.get("KEYBOARD_SHOTS"))
    try:
        tab.goto(f"{base_url}/{address}")
        wait_rendered(tab)
        start = query(tab)
        press_until(tab, lambda f: f["tag"] == "TEXTAREA" and f["label"] == "Sentence")
        if shots:
            tab.screenshot(path=str(SHOTS / "keyboard_sentence.png"))
        for name, label, key, value in (
            ("layer", "Layer", "ArrowRight", str(int(start["layer"]) + 1)),
            ("head", "Head", "ArrowRight", str(int(start["head"]) + 1)),
            ("temperature", "Attention temperature τ", "ArrowLeft", "0.95"),
        ):
            press_until(tab, lambda f, label=label: f["label"] == label)
            arrow(tab, key)
            assert query(tab)[name] == value, (name, query(tab))
        if shots:
            tab.screenshot(path=str(SHOTS / "keyboard_slider.png"))

        labels = tab.locator('[data-testid="stMain"] [role="tab"]').all_inner_texts()
        assert len(labels) >= 5
        press_until(tab, lambda f: f["role"] == "tab" and f["selected"] == "true")
        for label in labels[1:]:
            now = arrow(tab, "ArrowRight")
            assert now["role"] in ("tab", "tablist"), now  # the tab, or its row when the new tab's part is drawn
            assert tab.locator('[data-testid="stMain"] [role="tab"][aria-selected="true"]').inner_text() == label
            assert tab.locator('[role="tabpanel"]:visible .stPlotlyChart .main-svg').count() > 0, label
        if shots:
            tab.screenshot(path=str(SHOTS / "keyboard_tabs.png"))

        # back up to the skip link, which moves the focus to the first chart; its text alternative comes after it
        press_until(tab, lambda f: f["label"] == "Skip to the chart", key="Shift+Tab")
        tab.keyboard.press("Enter")
        wait_rendered(tab)
        assert focused(tab)["id"] == "atlas-chart"
        press_until(tab, lambda f: f["tag"] == "SUMMARY" and SUMMARY[:12] in f["label"])  # after its icon's name
        tab.keyboard.press("Enter")
        wait_rendered(tab)
        opened = tab.locator('[data-testid="stExpander"]:has(summary:has-text("Read as text")) details[open]')
        playwright_api.expect(opened.first.locator('[data-testid="stDataFrame"]')).to_be_visible()
        title = tab.locator('[role="tabpanel"]:visible .stPlotlyChart .gtitle').first.text_content()
        text = opened.first.locator('[data-testid="stExpanderDetails"]').inner_text()
        assert text.startswith(title.split(" · ")[0] + ". "), (title, text[:80])  # the description, then the table
        if shots:
            opened.first.scroll_into_view_if_needed()
            tab.screenshot(path=str(SHOTS / "keyboard_text.png"))
    finally:
        tab.close()


# What Streamlit does to a tab while a rerun redraws its part: the tab loses its tabindex (it is disabled), so the
# browser drops the focus to the body; then it gets its tabindex back.
DISABLE = """() => { const t = document.querySelector('[data-testid="stMain"] [role="tab"][aria-selected="true"]');
  window.__atlasTab = [t, t.getAttribute('tabindex')]; t.removeAttribute('tabindex'); }"""
ENABLE = "() => window.__atlasTab[0].setAttribute('tabindex', window.__atlasTab[1])"


@pytest.mark.parametrize("address", by_group(["One_head"], ["One_head"], ["keyboard-One_head"]))
def test_a_tab_that_a_redraw_disables_gets_the_focus_back(profile, base_url, address):
    tab = new_tab(profile, viewport={"width": 1280, "height": 900})
    try:
        tab.goto(f"{base_url}/{address}")
        wait_rendered(tab)
        selected = '[data-testid="stMain"] [role="tab"][aria-selected="true"]'
        tab.focus(selected)
        tab.evaluate(DISABLE)
        tab.wait_for_timeout(200)
        assert focused(tab)["tag"] == "BODY"  # the browser dropped the focus
        tab.evaluate(ENABLE)
        tab.wait_for_timeout(200)
        now = focused(tab)
        assert now["role"] == "tab" and now["selected"] == "true" and now["outline"], now

        tab.evaluate(DISABLE)  # and while it was disabled the focus went to the sentence: it stays there
        tab.wait_for_timeout(200)
        tab.focus('[data-testid="stTextArea"] textarea')
        tab.evaluate(ENABLE)
        tab.wait_for_timeout(200)
        assert focused(tab)["tag"] == "TEXTAREA"
    finally:
        tab.close()
