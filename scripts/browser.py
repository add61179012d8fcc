"""Serve the app on localhost and drive it with Playwright in Debian's headless Chromium."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from scripts.serve import ROOT, free_port, healthy, streamlit_command

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


ONE_RENDERER = ["--renderer-process-limit=1", "--disable-site-isolation-trials", "--disable-features=site-per-process"]


def page_url(base: str, page_file: Path | None) -> str:
    """URL of app.py (None) or of a file in pages/: "3_One_head.py" → /One_head."""
    if page_file is None:
        return base + "/"
    return base + "/" + page_file.stem.split("_", 1)[1]


@contextlib.contextmanager
def serve_app(port: int | None = None, timeout: float = 60.0):
    """Run `streamlit run app.py` on 127.0.0.1 (one process); yields the base URL."""
    port = port or free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        streamlit_command(port, "127.0.0.1"), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    try:
        deadline = time.time() + timeout
        while not healthy(f"127.0.0.1:{port}"):
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"streamlit did not start: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.3)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def launch_profile(playwright, folder: Path):
    """A Chromium with a profile on disk (in `folder`) whose tabs all run in one renderer process: they share its
    scripts as compiled and the HTTP cache, so Streamlit's and plotly's scripts are not loaded and compiled anew at
    every page load as in a new context (three walks of One head, loaded, two tabs opened, a phone's width: 13.7 s of
    the machine's CPU instead of 17.3 s with the profile alone; one load: 3.5 s with the profile, 4.6 s in a new
    context). For tests only, where every page is our own app's: a renderer per site is Chromium's isolation between
    sites."""
    return playwright.chromium.launch_persistent_context(
        folder, executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *ONE_RENDERER]
    )


# Times every websocket message the app sends or receives (window.__atlasLastMessage, ms since the page loaded): the
# page is settled once none has passed for QUIET_MS, which also covers the runs that follow the first one (a report
# of the chart widths, ui/widths.py, may redraw the page).
MESSAGE_CLOCK = """(() => {
  const Base = window.WebSocket;
  const mark = () => { window.__atlasLastMessage = performance.now(); };
  mark();
  window.WebSocket = class extends Base {
    constructor(...args) {
      super(...args);
      ['open', 'message', 'close'].forEach((e) => this.addEventListener(e, mark));
    }
    send(data) { mark(); return super.send(data); }
  };
})();"""
QUIET_MS = 600
FIRST_MS = 300  # an action's first message leaves within this time (a click, a key, a resize that changes a width)


def new_tab(owner, viewport: dict | None = None, **kwargs):
    """A tab whose app messages are timed (MESSAGE_CLOCK), for wait_rendered: a Browser's new_page(viewport, **kwargs)
    (a context of its own), or a new page of a context (a profile's, or another person's browser) at `viewport`."""
    from playwright.sync_api import BrowserContext  # playwright is a test requirement (requirements-dev.txt)

    if isinstance(owner, BrowserContext):
        assert not kwargs, f"a context's pages take only a viewport, not {sorted(kwargs)}"
        page = owner.new_page()
        if viewport:
            page.set_viewport_size(viewport)
    else:
        page = owner.new_page(viewport=viewport, **kwargs)
    page.add_init_script(MESSAGE_CLOCK)
    return page


# The page is drawn: no script run going on (the app's own run state, and no spinner or skeleton), every chart has its
# SVG, and no message for QUIET_MS.
DONE = """(quiet) => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || !['notRunning', 'compilationError'].includes(app.dataset.testScriptState)) return false;
    const main = document.querySelector('[data-testid="stMain"]');
    const busy = document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSkeleton"], .stSpinner');
    const charts = [...document.querySelectorAll('.stPlotlyChart')];
    return main && !busy && main.innerText.trim().length > 0 && charts.every(c => c.querySelector('.main-svg'))
      && performance.now() - window.__atlasLastMessage >= quiet;
}"""


def wait_rendered(page, timeout: float = 90_000) -> None:
    """Wait until the script runs have finished, every chart is drawn and the app has been quiet for QUIET_MS."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    assert page.evaluate("typeof window.__atlasLastMessage") == "number", "open pages with scripts.browser.new_tab"
    page.wait_for_timeout(FIRST_MS)
    page.wait_for_function(DONE, arg=QUIET_MS, timeout=timeout, polling=100)


def settled(page, read: str, tries: int = 5, until=lambda reading: True):
    """page.evaluate(read) once two readings, each after the page settled again, agree and `until` holds for them (a
    redraw that a width report asks for comes after the first reading on a busy machine, and a chart redrawn at a new
    width is hidden until drawn again: ui/widths.py); the last reading after `tries` more waits."""
    last = page.evaluate(read)
    for _ in range(tries):
        wait_rendered(page)
        now = page.evaluate(read)
        if now == last and until(now):
            return now
        last = now
    return last


# Every text in the page that Streamlit cuts with "…" (a button's text, a metric's label, a page link's title), every
# select box whose chosen value is wider than its box, and every widget label that runs out of its column (under the
# next column's controls).
CUT = """() => [...document.querySelectorAll('[data-testid="stMain"] *')]
  .filter((e) => e.clientWidth > 0 && getComputedStyle(e).textOverflow === 'ellipsis'
    && e.scrollWidth > e.clientWidth + 1)
  .concat([...document.querySelectorAll('[data-testid="stMain"] [data-testid="stSelectbox"] input')]
    .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1))
  .concat([...document.querySelectorAll('[data-testid="stMain"] [data-testid="stWidgetLabel"]')].filter((e) => {
    const col = e.closest('[data-testid="stColumn"]');
    return col && e.clientWidth > 0
      && Math.max(...[...e.querySelectorAll('*')].map((c) => c.getBoundingClientRect().right))
        > col.getBoundingClientRect().right + 1;
  }))
  .map((e) => (e.value || e.textContent).slice(0, 60))"""


# The tab to open on pages whose parts sit in lazy tabs, for screenshots and timings: the part the sidebar's
# attention temperature changes.
SHOWN_TAB = {"3_One_head": "4 · Mask, then softmax"}


def open_tab(page, label: str) -> None:
    """Click the tab named `label` (a lazy tab: its part runs on the server) and wait until it is drawn."""
    page.get_by_role("tab", name=label, exact=True).click()
    wait_rendered(page)
