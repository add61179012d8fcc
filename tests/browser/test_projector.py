"""Presenter view on a projector, in headless Chromium: at 1024 × 768 and 1280 × 720 every page and every tab shows
its main chart (the first one of the page or tab) wholly on the first screen, with readable labels; at 1024 × 768 it
has no serious or critical axe-core violation (tests/browser/axe.py; the elements are the same at the other size); and
One head's maps keep numbers of at least 14 px in their cells for a sentence of 13–16 tokens.

Each page is loaded once, in presenter view at 1024 × 768, and each tab opened in turn; then the window is resized to
1280 × 720, as a laptop meets another projector (the page redraws its charts for the new room: ui/widths.py), and the
tabs are opened again in reverse order (the open tab first).
With PROJECTOR_SHOTS=1 the first screen of each page at 1024 × 768 is saved as docs/views/projector_<page>.png.
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

import pytest

from scripts.browser import ROOT, new_tab, open_tab, settled, wait_rendered
from tests.browser.axe import add_axe, serious
from tests.browser.groups import by_group
from ui import navigation

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

SIZES = ((1024, 768), (1280, 720))  # a projector's common resolutions: 4:3 and 16:9
NO_CHART = {"0_Guided_tour"}  # a list of stops: no chart to show
FIRST_PRESS = {"2 · Generate text": "Generate one token"}  # tabs that draw their chart once a button is pressed
SHOTS = ROOT / "docs" / "views"
# The first chart of the page (of the open tab: hidden tabs have no width) and the screen's height.
MAIN_CHART = """() => {
  const c = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
    .find((p) => p.getBoundingClientRect().width > 0);
  if (!c) return null;
  const r = c.getBoundingClientRect();
  const title = c.querySelector('text.gtitle');
  return {top: r.top, bottom: r.bottom, screen: innerHeight, title: title ? title.textContent : ''};
}"""


# Values written on bars, and a chart's notes (the titles of its maps, badges), closer than 2 px to another of the same
# chart, side by side (the texts, as read), in the open tab: presenter view's larger text ran Multi-head · 5's pairs of
# values together ("0.1690.169"), and the titles of Multi-head · 2's two maps into each other.
TEXTS_TOUCH = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].flatMap((p) => {
  const t = [...p.querySelectorAll('.bartext, .annotation-text')]
    .filter((e) => getComputedStyle(e).display !== 'none' && e.textContent)
    .map((e) => ({text: e.textContent, r: e.getBoundingClientRect()})).filter((b) => b.r.width > 0);
  const hit = (a, b) => a.left < b.right + 2 && b.left < a.right + 2 && a.top + 1 < b.bottom && b.top + 1 < a.bottom;
  return t.flatMap((a, i) => t.slice(i + 1).filter((b) => hit(a.r, b.r)).map((b) => a.text + '|' + b.text));
})"""


# The y tick labels of a chart in the open tab that run more than 9 px (over half of their 16 px letters) into
# another's, as (chart title, label, label): charts fitted to the first screen gave 19 token rows ~9 px each.
TICKS_OVER = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
  .filter((p) => p.getBoundingClientRect().width > 0).flatMap((p) => {
    const title = (p.querySelector('text.gtitle') || {textContent: ''}).textContent.slice(0, 40);
    const t = [...p.querySelectorAll('.ytick text')].filter((e) => e.textContent.trim())
      .map((e) => ({text: e.textContent, r: e.getBoundingClientRect()})).filter((b) => b.r.height > 0);
    const over = (a, b) => a.left < b.right && b.left < a.right && a.top + 9 < b.bottom && b.top + 9 < a.bottom;
    return t.flatMap((a, i) => t.slice(i + 1).filter((b) => over(a.r, b.r)).map((b) => [title, a.text, b.text]));
  })"""


# Axis titles that run over another axis title, a tick label or a note of the same chart in the open tab, as
# "title|text": Multi-head · 1's rows of maps, squeezed onto the first screen, put each row's "key j" over the tick
# labels of the row below.
TITLES_OVER = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
  .filter((p) => p.getBoundingClientRect().width > 0).flatMap((p) => {
    const box = (e) => ({text: e.textContent, r: e.getBoundingClientRect()});
    const shown = (b) => b.text.trim() && b.r.width > 0 && b.r.height > 0;
    const titles = [...p.querySelectorAll('.infolayer g[class^="g-x"] > text, .infolayer g[class^="g-y"] > text')]
      .map(box).filter(shown);
    const others = [...p.querySelectorAll('[class$="tick"] > text, .annotation-text')].map(box).filter(shown);
    const over = (a, b) => a.left < b.right - 2 && b.left < a.right - 2 && a.top < b.bottom - 2 && b.top < a.bottom - 2;
    return titles.flatMap((a, i) => [...titles.slice(i + 1), ...others].filter((b) => over(a.r, b.r))
      .map((b) => a.text + '|' + b.text));
  })"""


# Formulas that run under the element after them (Encoder vs decoder's formula under its expander), as (text, px).
FORMULAS_UNDER = """() => [...document.querySelectorAll('[data-testid="stMain"] .katex-display')]
  .filter((k) => k.getBoundingClientRect().width > 0).map((k) => {
    const next = k.closest('[data-testid="stElementContainer"]').nextElementSibling;
    const top = next ? next.getBoundingClientRect().top : Infinity;
    return [k.textContent.slice(0, 40), Math.round(k.getBoundingClientRect().bottom - top)];
  }).filter(([, under]) => under > 1)"""


def name_of(page: navigation.PageInfo) -> str:
    return "home" if page is navigation.HOME else Path(page.path).stem


PAGES = [p for p in navigation.ORDER if name_of(p) not in NO_CHART]
NAMES = [name_of(p) for p in PAGES]


def presenting(profile, base_url: str, address: str):
    """A tab at the first size, opened at `address` in presenter view."""
    tab = new_tab(profile, viewport={"width": SIZES[0][0], "height": SIZES[0][1]})
    tab.goto(f"{base_url}/{address}" + ("&" if "?" in address else "?") + "present=true")
    wait_rendered(tab)
    assert tab.locator('[data-testid="stException"]').count() == 0
    add_axe(tab)
    return tab


@pytest.mark.parametrize("page", by_group(PAGES, NAMES, [f"projector-{n}" for n in NAMES]))
def test_the_main_chart_is_whole_on_the_first_screen(base_url, profile, page):
    """(Every page tried in presenter view at 1024 × 768: the first chart started 430–703 px down and ended below the
    screen.) For every tab and both sizes, the main chart's top is on the screen and its bottom above the screen's
    bottom edge, with the page scrolled to its top; no y labels (ui/presenter.py thinned_ticks), values on bars or
    notes of a chart run together; and at 1024 × 768 axe finds nothing serious."""
    tab = presenting(profile, base_url, page.url_path)
    labels = tab.locator('[data-testid="stMain"] [role="tab"]').all_inner_texts() or [""]
    if os.environ.get("PROJECTOR_SHOTS"):
        tab.screenshot(path=str(SHOTS / f"projector_{name_of(page)}.png"))
    checked, bad = [], []
    for (width, height), order in ((SIZES[0], labels), (SIZES[1], labels[::-1])):
        first = (width, height) == SIZES[0]
        for i, label in enumerate(order):
            if i == 0 and not first:
                tab.set_viewport_size({"width": width, "height": height})
                wait_rendered(tab)
            elif i > 0:
                open_tab(tab, label)
            if label in FIRST_PRESS and first:
                tab.get_by_role("button", name=FIRST_PRESS[label]).click()
                wait_rendered(tab)
            main = settled(tab, MAIN_CHART, tries=10, until=lambda m: m is not None)
            assert main is not None, (label, width)
            assert main["screen"] == height and tab.evaluate("scrollY") == 0
            checked.append((label, width))
            if not (main["top"] >= 0 and main["bottom"] <= height):
                bad.append(f"{label or name_of(page)} at {width}×{height}: {main['title']!r} {main['top']:.0f}–"
                           f"{main['bottom']:.0f} px")
            if under := tab.evaluate(FORMULAS_UNDER):
                bad.append(f"{label or name_of(page)} at {width}×{height}: formulas under the next element {under}")
            if over := tab.evaluate(TICKS_OVER):
                bad.append(f"{label or name_of(page)} at {width}×{height}: y labels run over each other {over[:3]}")
            if titles := tab.evaluate(TITLES_OVER):
                bad.append(f"{label or name_of(page)} at {width}×{height}: axis titles over other text {titles[:3]}")
            if touching := tab.evaluate(TEXTS_TOUCH):
                bad.append(f"{label or name_of(page)} at {width}×{height}: texts run together {touching}")
            if first:  # the same elements at either size: axe once, on the smaller screen
                bad += serious(tab, f"{label or name_of(page)} at {width}×{height}")
    tab.close()
    assert len(checked) == 2 * len(labels)
    assert bad == [], "\n".join(bad)


def test_the_guided_tour_has_no_chart(base_url, profile):
    """The page left out of the projector test above has indeed no chart to show (and nothing serious for axe)."""
    tab = presenting(profile, base_url, navigation.TOUR.url_path)
    assert tab.evaluate(MAIN_CHART) is None
    assert serious(tab, "Guided tour at 1024×768") == []
    tab.close()


# A sentence of 13–16 tokens (15 for the tests' model, shakespeare-gpt; the test checks the count).
LONG = "To be, or not to be: that is the question."
# Every number written in a visible heatmap's cells: its font size as the browser computes it, and its drawn height.
CELL_TEXT = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
  .filter((p) => p.getBoundingClientRect().width > 0)
  .map((p) => ({
    title: (p.querySelector('text.gtitle') || {textContent: ''}).textContent,
    cells: [...p.querySelectorAll('.heatmap-label text')].map((t) => ({
      px: parseFloat(getComputedStyle(t).fontSize), drawn: t.getBoundingClientRect().height})),
  }))"""


def test_one_head_cells_keep_numbers_of_14_px(base_url, profile):
    """(One head with a 13-token sentence: its cells lost their numbers.) At both sizes, the masked scores and the
    weights of a 13–16 token sentence write a number in each visible cell, at 14 px or more, drawn at that size (not
    shrunk)."""
    tab = presenting(profile, base_url, "One_head?sentence=" + urllib.parse.quote(LONG))
    open_tab(tab, "4 · Mask, then softmax")
    for width, height in SIZES:
        tab.set_viewport_size({"width": width, "height": height})
        wait_rendered(tab)
        maps = settled(tab, CELL_TEXT)
        assert [m["title"] for m in maps] == ["Masked scores", "Attention weights α"], (width, height)
        for m in maps:
            where = (width, height, m["title"])
            T = round(((8 * len(m["cells"]) + 1) ** 0.5 - 1) / 2)
            assert 13 <= T <= 16, where
            assert len(m["cells"]) == T * (T + 1) // 2, where  # a number in each cell on and below the diagonal
            assert min(c["px"] for c in m["cells"]) >= 14, where
            assert min(c["drawn"] for c in m["cells"]) >= 14, where
    tab.close()
