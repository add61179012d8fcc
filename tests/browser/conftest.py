"""One served app and one headless Chromium profile per test worker (and a Chromium for tests that need people with
browsers of their own), and a tab that records errors."""

from __future__ import annotations

import pytest

from scripts.browser import launch, launch_profile, new_tab, serve_app

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="session")
def base_url():
    with serve_app() as base:
        yield base


@pytest.fixture(scope="session")
def playwright():
    with playwright_api.sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def profile(playwright, tmp_path_factory):
    """The worker's Chromium profile: new_tab(profile, viewport) opens a tab in it; its tabs share the compiled
    scripts (scripts.browser.launch_profile). Each tab is still a session of its own on the server."""
    context = launch_profile(playwright, tmp_path_factory.mktemp("chromium-profile"))
    yield context
    context.close()


@pytest.fixture(scope="session")
def browser(playwright):
    """A Chromium without a profile: browser.new_context() is another person's browser (cookies of its own)."""
    b = launch(playwright)
    yield b
    b.close()


def streamlit_probe(msg) -> bool:
    """Streamlit's own frontend, opened at a page's URL (/One_head), first probes /One_head/_stcore/health and
    /One_head/_stcore/host-config, gets 404 and falls back to /_stcore/…; the browser logs those 404s as errors."""
    return "404" in msg.text and "/_stcore/" in (msg.location or {}).get("url", "")


@pytest.fixture
def tab(profile):
    """A desktop-sized tab that records console errors (Streamlit's own 404 probes aside), page errors and dialogs."""
    page = new_tab(profile, viewport={"width": 1300, "height": 900})
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
