"""Regenerate the screenshots in docs/: every page of the running app.

docs/<page>.png: each page at 1400 × 1000 (the README shows them).
docs/views/<view>/<page>.jpg: the first screen of each page on a phone (390 × 844), a tablet (768 × 1024), a
projector (1024 × 768, with presenter view off and on) and a desktop (1440 × 900).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import sync_playwright  # noqa: E402

from scripts.browser import ROOT, SHOWN_TAB, launch, new_tab, open_tab, serve_app, settled, wait_rendered  # noqa: E402
from ui import navigation  # noqa: E402

DOCS = ROOT / "docs"
VIEWS = {  # name: (width, height, presenter view)
    "phone-390": (390, 844, False),
    "tablet-768": (768, 1024, False),
    "projector-1024": (1024, 768, False),
    "presenter-1024": (1024, 768, True),
    "desktop-1440": (1440, 900, False),
}

# Where each chart is drawn. A page's first run draws its charts before the browser has reported their widths; the
# run that report asks for draws them again at those widths (and, in presenter view, fitted to the first screen:
# ui/widths.py, ui/presenter.py). A screenshot waits until two readings agree.
CHART_BOXES = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
  .map((p) => { const r = p.getBoundingClientRect(); return [r.top, r.width, r.height]; })"""


def name_of(page: navigation.PageInfo) -> str:
    return "home" if page is navigation.HOME else Path(page.path).stem


def shoot(tab, base: str, page: navigation.PageInfo, out: Path, presenter: bool = False, **options) -> None:
    tab.goto(f"{base}/{page.url_path}" + ("?present=true" if presenter else ""))
    wait_rendered(tab)
    if name_of(page) in SHOWN_TAB:
        open_tab(tab, SHOWN_TAB[name_of(page)])
    settled(tab, CHART_BOXES)
    tab.screenshot(path=str(out), **options)
    print(out.relative_to(ROOT))


def main() -> None:
    with serve_app() as base, sync_playwright() as p:
        browser = launch(p)
        tab = new_tab(browser, viewport={"width": 1400, "height": 1000})
        for page in navigation.ORDER:
            shoot(tab, base, page, DOCS / f"{name_of(page)}.png")
        tab.close()
        for view, (width, height, presenter) in VIEWS.items():
            (DOCS / "views" / view).mkdir(parents=True, exist_ok=True)
            tab = new_tab(browser, viewport={"width": width, "height": height})
            for page in navigation.ORDER:
                shoot(
                    tab, base, page, DOCS / "views" / view / f"{name_of(page)}.jpg", presenter, type="jpeg", quality=60
                )
            tab.close()
        browser.close()


if __name__ == "__main__":
    main()
