"""Serve the app on localhost and drive it with Playwright in Debian's headless Chromium."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from scripts.serve import ROOT, free_port, healthy, streamlit_command

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]


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
    proc = subprocess.Popen(streamlit_command(port, "127.0.0.1"), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
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


# The page is drawn: no script run going on, and every chart has its SVG.
DONE = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    const busy = document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSkeleton"], .stSpinner');
    const charts = [...document.querySelectorAll('.stPlotlyChart')];
    return main && !busy && main.innerText.trim().length > 0 && charts.every(c => c.querySelector('.main-svg'));
}"""


def wait_rendered(page, timeout: float = 90_000) -> None:
    """Wait until the script run has finished and every chart is drawn (and stays so for a moment)."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    for _ in range(2):  # a rerun may start right after the first run settles
        page.wait_for_timeout(700)
        page.wait_for_function(DONE, timeout=timeout)


def settled(page, read: str, pause_ms: int = 1200, tries: int = 5):
    """page.evaluate(read) once two readings pause_ms apart agree. After a page first settles, the report of its
    chart widths can still redraw it (maps into rows, a narrow chart's colour bar under the plot: ui/widths.py),
    seconds later on a busy machine."""
    last = page.evaluate(read)
    for _ in range(tries):
        page.wait_for_timeout(pause_ms)
        page.wait_for_function(DONE, timeout=90_000)
        now = page.evaluate(read)
        if now == last:
            return now
        last = now
    return last


# Every text in the page that Streamlit cuts with "…" (a button's text, a metric's label, a page link's title), every
# select box whose chosen value is wider than its box, and every widget label that runs out of its column (under the
# next column's controls).
CUT = """() => [...document.querySelectorAll('[data-testid="stMain"] *')]
  .filter((e) => e.clientWidth > 0 && getComputedStyle(e).textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + 1)
  .concat([...document.querySelectorAll('[data-testid="stMain"] [data-testid="stSelectbox"] input')].filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1))
  .concat([...document.querySelectorAll('[data-testid="stMain"] [data-testid="stWidgetLabel"]')].filter((e) => {
    const col = e.closest('[data-testid="stColumn"]');
    return col && e.clientWidth > 0 && Math.max(...[...e.querySelectorAll('*')].map((c) => c.getBoundingClientRect().right)) > col.getBoundingClientRect().right + 1;
  }))
  .map((e) => (e.value || e.textContent).slice(0, 60))"""


# The tab to open on pages whose parts sit in lazy tabs, for screenshots and timings: the part the sidebar's
# attention temperature changes.
SHOWN_TAB = {"3_One_head": "4 · Mask, then softmax"}


def open_tab(page, label: str) -> None:
    """Click the tab named `label` (a lazy tab: its part runs on the server) and wait until it is drawn."""
    page.get_by_role("tab", name=label, exact=True).click()
    wait_rendered(page)
