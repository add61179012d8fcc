"""Page rerun cost through AppTest: median rerun time and bytes of the page's elements, at 16 and 256 tokens.

Each page is run once to warm up, then re-run while the sidebar's attention temperature changes:
"new" gives every rerun a value not seen before (no cache can help: a fresh trace and fresh figures,
what dragging a slider costs), "repeat" alternates between two values (what toggling back and forth
costs once both are cached). Streamlit's caches are cleared before each page, so no page meets traces
another page left (the models stay loaded: ui.models holds them outside the cache). A page with lazy
tabs gets one row per tab, measured with that tab open. Prints a table; asserts nothing.

AppTest makes a new ScriptCache for every run, so it parses and compiles the page again each time (with Streamlit's
"magic" pass over the syntax tree). A server compiles a page once and keeps its bytecode. The reruns here share one
ScriptCache, as a server does; the "compile" column shows what AppTest alone would add to every rerun.

    .venv/bin/python bench/bench_pages.py [Masking Next …]   (only pages whose file name contains one of these)
"""

from __future__ import annotations

import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from streamlit.runtime.scriptrunner import magic  # noqa: E402
from streamlit.runtime.scriptrunner.script_cache import ScriptCache  # noqa: E402
from streamlit.testing.v1 import AppTest, local_script_runner  # noqa: E402

from tests.apptest_utils import lazy_tabs  # noqa: E402
from transformer.loading import load_model  # noqa: E402

PASSAGE = (ROOT.parent / "shared" / "corpora" / "tinyshakespeare.txt").read_text()[:20_000]
REPEATS = 11
SIDEBAR_ONLY = "import ui\nui.sidebar()\n"  # what every page pays before its own work (AppTest, widgets, query string)
SCRIPTS = ScriptCache()
local_script_runner.ScriptCache = lambda: SCRIPTS  # one bytecode cache for every run, as in a server (see above)


def text_of(n_tokens: int) -> str:
    """A Shakespeare passage cut to exactly n_tokens tokens of the bundled model."""
    enc = load_model("shakespeare-gpt").tokenizer.encode(PASSAGE)
    return PASSAGE[: enc.offsets[n_tokens - 1][1]]


def page_bytes(at: AppTest) -> int:
    """Serialized size of every element on the page (≈ what one full rerun sends)."""
    total = 0
    stack = [at._tree]
    while stack:
        node = stack.pop()
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "ByteSize"):
            total += proto.ByteSize()
        stack.extend(getattr(node, "children", {}).values())
    return total


def compile_ms(page: Path) -> float:
    """What AppTest spends on every run compiling the page (median of 5): magic pass, then compile()."""
    source = page.read_text()

    def once() -> float:
        t0 = time.perf_counter()
        compile(magic.add_magic(source, str(page)), str(page), "exec", dont_inherit=True)
        return time.perf_counter() - t0

    return statistics.median(once() for _ in range(5)) * 1000


def measure(page: Path | str, sentence: str, tab: tuple[str, str] | None = None) -> tuple[float, float, int]:
    """(median ms with new values, median ms with repeated values, bytes of the page); page: a file, or a script's
    code; tab: (key, label) of a lazy tab to open first."""
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(page), default_timeout=120) if isinstance(page, Path) else AppTest.from_string(page, default_timeout=120)
    at.query_params["sentence"] = sentence
    if tab:
        at.session_state[tab[0]] = tab[1]
    at.run()
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception[0].value}")

    def rerun(tau: float) -> float:
        at.slider(key="w_temperature").set_value(tau)
        t0 = time.perf_counter()
        at.run()
        return time.perf_counter() - t0

    fresh = [rerun(round(0.5 + 0.05 * i, 2)) for i in range(REPEATS)]
    repeat = [rerun(0.95 if i % 2 else 1.0) for i in range(REPEATS + 2)][2:]
    return statistics.median(fresh) * 1000, statistics.median(repeat) * 1000, page_bytes(at)


def main() -> None:
    pages = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"), key=lambda p: int(p.stem.split("_")[0]))]
    if len(sys.argv) > 1:  # only pages whose file name contains one of the arguments
        pages = [p for p in pages if any(a in p.stem for a in sys.argv[1:])]
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").disabled = True  # AppTest's bare-mode warnings
    sentences = {n: text_of(n) for n in (16, 256)}
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores; other work on the machine inflates every number)")
    print("AppTest rerun medians (ms) after a temperature change, and KiB of the page's elements")
    print(f"{'page':44} {'new@16':>7} {'rep@16':>7} {'KiB@16':>7} {'new@256':>8} {'rep@256':>8} {'KiB@256':>8} {'compile':>8}")
    for name, page in [("(sidebar only: the floor)", SIDEBAR_ONLY), *((p.stem, p) for p in pages)]:
        tabs = lazy_tabs(AppTest.from_file(str(page), default_timeout=120).run()) if isinstance(page, Path) else {}
        for row, tab in [(name, None)] if not tabs else [(f"{name} · {label}", (key, label)) for key, labels in tabs.items() for label in labels]:
            (n16, r16, b16), (n256, r256, b256) = (measure(page, sentences[n], tab) for n in (16, 256))
            compiled = f"{compile_ms(page):8.1f}" if isinstance(page, Path) else ""
            print(f"{row[:44]:44} {n16:7.1f} {r16:7.1f} {b16 / 1024:7.1f} {n256:8.1f} {r256:8.1f} {b256 / 1024:8.1f} {compiled}", flush=True)


if __name__ == "__main__":
    main()
