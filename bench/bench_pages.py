"""Page rerun cost through AppTest: median rerun time and bytes of the page's elements, at 16 and 256 tokens.

The model is given by --model (default the bundled shakespeare-gpt) and reaches each page as the query string's
model=…; the sentence is a Shakespeare passage cut to exactly N tokens of that model (--tokens, default 16 256).

Each page is run once to warm up, then re-run while the sidebar's attention temperature changes:
"new" gives every rerun a value not seen before (no cache can help: a fresh trace and fresh figures,
what dragging a slider costs), "repeat" alternates between two values (what toggling back and forth
costs once both are cached). Streamlit's caches, the trace cache (ui.models.TRACES) and the figures kept for reuse
(figures/reuse.py) are emptied before each page, so no page meets traces or figures another page left (the models
stay loaded: ui.models holds them). A page with lazy tabs gets one row per tab, measured with that tab open. Prints a
table; asserts nothing.

AppTest makes a new ScriptCache for every run, so it parses and compiles the page again each time (with Streamlit's
"magic" pass over the syntax tree). A server compiles a page once and keeps its bytecode. The reruns here share one
ScriptCache, as a server does; the "compile" column shows what AppTest alone would add to every rerun.

    .venv/bin/python bench/bench_pages.py [Masking Next …]   (only pages whose file name contains one of these)
    .venv/bin/python bench/bench_pages.py --model smollm2-135m --tokens 64   (page names, if any, before --tokens)
    .venv/bin/python bench/bench_pages.py --tokens 16 --repeats 120   (a steadier repeated-τ column, to compare commits)
    .venv/bin/python bench/bench_pages.py --screen 1300   (as a browser whose window is 1300 px wide: its report, which
                                                           a real browser sends after the first run, is set first)
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import streamlit as st  # noqa: E402
from streamlit.runtime.scriptrunner import magic  # noqa: E402
from streamlit.runtime.scriptrunner.script_cache import ScriptCache  # noqa: E402
from streamlit.testing.v1 import AppTest, local_script_runner  # noqa: E402
from texts import cut_to_tokens, passage  # noqa: E402

import ui.models  # noqa: E402
from figures import reuse  # noqa: E402
from tests.apptest_utils import lazy_tabs  # noqa: E402
from transformer.loading import shared_model  # noqa: E402
from ui import presenter, widths  # noqa: E402

PASSAGE = passage(20_000)
REPEATS = 11
SIDEBAR_ONLY = "import ui\nui.sidebar()\n"  # what every page pays before its own work (AppTest, widgets, query string)
SCRIPTS = ScriptCache()
local_script_runner.ScriptCache = lambda: SCRIPTS  # one bytecode cache for every run, as in a server (see above)


def text_of(model: str, n_tokens: int) -> str:
    """A Shakespeare passage cut to exactly n_tokens tokens of the model."""
    return cut_to_tokens(shared_model(model).tokenizer, PASSAGE, n_tokens)


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


class PageError(Exception):
    """The page showed an exception element."""


def describe(exc) -> str:
    """An exception element in one line: its type, message and the last line of its stack."""
    last = next((line.strip() for line in reversed(exc.stack_trace) if line.strip()), "")
    return f"{exc.proto.type}: {exc.proto.message} ({last.splitlines()[0] if last else ''})"[:200]


def app_test(
    page: Path | str, model: str, sentence: str | None = None, layer: int | None = None, screen: float | None = None
) -> AppTest:
    """An AppTest of a page file or a script's code, opened on `model` (and `sentence`, `layer`) by its query string;
    with `screen`, the report of a browser window that wide (ui/widths.py) is there from the first run."""
    at = (
        AppTest.from_file(str(page), default_timeout=120)
        if isinstance(page, Path)
        else AppTest.from_string(page, default_timeout=120)
    )
    at.query_params["model"] = model
    if layer is not None:
        at.query_params["layer"] = str(layer)
    if sentence is not None:
        at.query_params["sentence"] = sentence
    if screen is not None:
        at.session_state[widths.KEY] = {"widths": {widths.SCREEN: screen}}
    return at


def measure(
    page: Path | str,
    model: str,
    sentence: str,
    tab: tuple[str, str] | None = None,
    layer: int | None = None,
    repeats: int = REPEATS,
    screen: float | None = None,
) -> tuple[float, float, int]:
    """(median ms with new values, median ms with `repeats` repeated values, bytes of the page); page: a file, or a
    script's code; tab: (key, label) of a lazy tab to open first."""
    st.cache_resource.clear()
    st.cache_data.clear()
    ui.models.TRACES = ui.models.TraceCache(ui.models.TRACES.budget)  # get_trace reads the module's TRACES at each call
    reuse.KEPT = reuse.Figures()  # the figures kept for reuse (figures/reuse.py), read at each call too
    at = app_test(page, model, sentence, layer, screen)
    if tab:
        at.session_state[tab[0]] = tab[1]
    at.run()
    if at.exception:
        raise PageError(describe(at.exception[0]))

    # the sidebar's τ, or on a window at most presenter.NARROW_PX wide the bar's (the sidebar has no copy there)
    sliders = {s.key for s in at.slider}
    tau_key = next(k for k in ("w_temperature", presenter.BAR_PREFIX + "temperature") if k in sliders)

    def rerun(tau: float) -> float:
        at.slider(key=tau_key).set_value(tau)
        t0 = time.perf_counter()
        at.run()
        return time.perf_counter() - t0

    fresh = [rerun(round(0.5 + 0.05 * i, 2)) for i in range(REPEATS)]
    repeat = [rerun(0.95 if i % 2 else 1.0) for i in range(repeats + 2)][2:]
    return statistics.median(fresh) * 1000, statistics.median(repeat) * 1000, page_bytes(at)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", nargs="*", help="only pages whose file name contains one of these")
    ap.add_argument("--model", default="shakespeare-gpt", help="the model the pages open (query string model=…)")
    ap.add_argument("--tokens", type=int, nargs="+", default=[16, 256], help="sentence lengths in tokens")
    ap.add_argument("--repeats", type=int, default=REPEATS, help="reruns of the repeated-τ column (more: steadier)")
    ap.add_argument("--layer", type=int, help="the sidebar's layer (query string layer=…; default: the page's own, 0)")
    ap.add_argument("--screen", type=float, help="the width of the browser window its report gives (default: none)")
    a = ap.parse_args()
    pages = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"), key=lambda p: int(p.stem.split("_")[0]))]
    if a.pages:
        pages = [p for p in pages if any(name in p.stem for name in a.pages)]
    for logger in (
        "streamlit.runtime.scriptrunner_utils.script_run_context",
        "streamlit.runtime.caching.cache_data_api",
    ):
        logging.getLogger(logger).disabled = True  # AppTest's bare-mode warnings
    # .streamlit/config.toml hides them from students; name a page's exception here
    st.set_option("client.showErrorDetails", "full")
    st.set_option("logger.enableRich", False)
    # a page's exception: one line in the table, not its traceback
    logging.getLogger("streamlit.error_util").disabled = True
    sentences = {n: text_of(a.model, n) for n in a.tokens}
    print(
        f"load average before: {' '.join(Path('/proc/loadavg').read_text().split()[:3])} (2 cores; "
        "other work on the machine inflates every number)"
    )
    print(
        f"model {a.model}, layer {0 if a.layer is None else a.layer}; "
        "AppTest rerun medians (ms) after a temperature change, and KiB of the page's elements"
    )
    heads = "".join(f" {'new@' + str(n):>8} {'rep@' + str(n):>8} {'KiB@' + str(n):>8}" for n in a.tokens)
    print(f"{'page':44}{heads} {'compile':>8} {'load avg':>9}")
    for name, page in [("(sidebar only: the floor)", SIDEBAR_ONLY), *((p.stem, p) for p in pages)]:
        tabs = lazy_tabs(app_test(page, a.model, sentences[a.tokens[0]]).run()) if isinstance(page, Path) else {}
        for row, tab in (
            [(name, None)]
            if not tabs
            else [(f"{name} · {label}", (key, label)) for key, labels in tabs.items() for label in labels]
        ):
            try:
                measured = (
                    measure(page, a.model, sentences[n], tab, a.layer, a.repeats, a.screen) for n in a.tokens
                )
                cells = "".join(f" {new:8.1f} {rep:8.1f} {kib / 1024:8.1f}" for new, rep, kib in measured)
            except PageError as err:
                print(f"{row[:44]:44} the page shows an exception, not measured: {err}", flush=True)
                continue
            compiled = f"{compile_ms(page):8.1f}" if isinstance(page, Path) else " " * 8
            print(f"{row[:44]:44}{cells} {compiled} {os.getloadavg()[0]:9.2f}", flush=True)


if __name__ == "__main__":
    main()
