"""axe-core (WCAG 2.0 and 2.1, levels A and AA) on every page and every tab, in normal and presenter view, at a
desktop's width (1280 px) and, on the same loaded page, a phone's (390 px): no serious or critical violation.

axe-core comes from npm (package.json; `make test` and `make a11y` install it): the test injects node_modules'
axe.min.js into the page; the app itself never loads it. axe does not look inside the charts: their text
alternatives are tested in tests/figures/test_describe.py and tests/app/test_text_alternatives.py.
"""

from __future__ import annotations

import pytest

from scripts.browser import ROOT, new_tab, open_tab, page_url, wait_rendered
from tests.apptest_utils import PAGES as PAGE_FILES
from tests.browser.groups import by_group

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
WIDE, PHONE = 1280, 390
# Every violation of the page as it is now: rule id, impact, and where (axe's CSS selector of each element).
RUN_AXE = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return result.violations.flatMap((v) => v.nodes.map((n) => ({id: v.id, impact: v.impact, target: n.target.join(' '),
    summary: n.failureSummary.slice(0, 240)})));
}"""
TAB_LABELS = """() => [...document.querySelectorAll('[data-testid="stMain"] [role="tab"]')].map((t) => t.innerText)"""

PAGES = [None, *PAGE_FILES]  # None: the home page
NAMES = ["home" if p is None else p.stem for p in PAGES]
CASES = [(page, view) for page in PAGES for view in ("normal", "presenter")]
IDS = [f"{name}-{view}" for name in NAMES for view in ("normal", "presenter")]


def test_axe_core_is_installed():
    """make test installs it (npm ci): a missing file would skip nothing, it fails here."""
    assert AXE.is_file(), "run `npm ci --no-audit --no-fund` (make test and make a11y do)"


def serious(tab, where: str) -> list[str]:
    """The serious and critical violations axe finds in the page as it is, each as one readable line."""
    found = tab.evaluate(RUN_AXE, TAGS)
    return [f"{where}: {v['id']} ({v['impact']}) at {v['target']}: {v['summary']}" for v in found
            if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("page_file,view", by_group(CASES, IDS, [f"a11y-{n}" for n in NAMES for _ in range(2)]))
def test_no_serious_or_critical_axe_violation(browser, base_url, page_file, view):
    """One load per page and view: each tab at 1280 px, then the same page resized to 390 px and each tab again (in
    reverse order, so the open tab is checked first)."""
    tab = new_tab(browser, viewport={"width": WIDE, "height": 900})
    try:
        tab.goto(page_url(base_url, page_file) + ("?present=true" if view == "presenter" else ""))
        wait_rendered(tab)
        tab.add_script_tag(path=str(AXE))
        labels = tab.evaluate(TAB_LABELS) or [None]
        found, checked = [], 0
        for width, order in ((WIDE, labels), (PHONE, labels[::-1])):
            if width != WIDE:
                tab.set_viewport_size({"width": width, "height": 844})
                wait_rendered(tab)
            for i, label in enumerate(order):
                if label is not None and i > 0:
                    open_tab(tab, label)
                assert tab.locator('[data-testid="stException"]').count() == 0, (width, label)
                found += serious(tab, f"{width} px{f', tab {label}' if label else ''}")
                checked += 1
        assert checked == 2 * len(labels)
        assert found == [], "\n".join(found)
    finally:
        tab.close()
