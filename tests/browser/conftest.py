"""One served app and one headless Chromium per test module."""

from __future__ import annotations

import pytest

from scripts.browser import launch, serve_app

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def base_url():
    with serve_app() as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()
