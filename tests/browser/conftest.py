"""One served app and one headless Chromium per test worker, and a tab that records errors."""

from __future__ import annotations

import pytest

from scripts.browser import launch, new_tab, serve_app

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="session")
def base_url():
    with serve_app() as base:
        yield base


@pytest.fixture(scope="session")
def browser():
    with playwright_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def streamlit_probe(msg) -> bool:
    """Streamlit's own frontend, opened at a page's URL (/One_head), first probes /One_head/_stcore/health and
    /One_head/_stcore/host-config, gets 404 and falls back to /_stcore/…; the browser logs those 404s as errors."""
    return "404" in msg.text and "/_stcore/" in (msg.location or {}).get("url", "")


@pytest.fixture
def tab(browser):
    """A desktop-sized tab that records console errors (Streamlit's own 404 probes aside), page errors and dialogs."""
    page = new_tab(browser, viewport={"width": 1300, "height": 900})
    page.errors = []
    page.on(
        "console",
        lambda m: (
            page.errors.append(f"{m.text} {m.location}") if m.type == "error" and not streamlit_probe(m) else None
        ),
    )
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    yield page
    page.close()
