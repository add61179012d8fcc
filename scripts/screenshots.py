"""Regenerate docs/<page>.png: one screenshot of every page of the running app (README shows them)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import sync_playwright  # noqa: E402

from scripts.browser import ROOT, SHOWN_TAB, launch, open_tab, page_url, serve_app, wait_rendered  # noqa: E402

DOCS = ROOT / "docs"


def main() -> None:
    DOCS.mkdir(exist_ok=True)
    pages = [None, *sorted((ROOT / "pages").glob("*.py"))]
    with serve_app() as base, sync_playwright() as p:
        browser = launch(p)
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        for page_file in pages:
            tab.goto(page_url(base, page_file))
            wait_rendered(tab)
            name = "home" if page_file is None else page_file.stem
            if name in SHOWN_TAB:
                open_tab(tab, SHOWN_TAB[name])
            out = DOCS / f"{name}.png"
            tab.screenshot(path=str(out), full_page=False)
            print(out.relative_to(ROOT))
        browser.close()


if __name__ == "__main__":
    main()
