"""Where a page rerun's time goes: cProfile over AppTest reruns of one page after temperature changes.

    .venv/bin/python bench/profile_page.py 3_One_head --model smollm2-135m --tokens 64
        [--tab "4 · Mask, then softmax"] [--reruns 6]

Runs the page once (opening the lazy tab given), then profiles `--reruns` reruns, each with a new attention
temperature (fresh trace and fresh figures, as in bench_pages.py's "new" column), and prints the functions with
the most cumulative time, then the most own time. Per-rerun milliseconds = the printed times / reruns.
Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import logging
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from streamlit.runtime.scriptrunner.script_cache import ScriptCache  # noqa: E402
from streamlit.testing.v1 import AppTest, local_script_runner  # noqa: E402
from texts import cut_to_tokens, passage  # noqa: E402

from transformer.loading import shared_model  # noqa: E402

SCRIPTS = ScriptCache()
local_script_runner.ScriptCache = lambda: SCRIPTS  # one bytecode cache for every run, as in a server
PROFILE = cProfile.Profile()
PROFILING = [False]
_run_script = local_script_runner.LocalScriptRunner._run_script


def _profiled_run_script(self, rerun_data) -> None:
    """The script runs on its own thread: profile it there (cProfile sees only the thread that enables it)."""
    if not PROFILING[0]:
        return _run_script(self, rerun_data)
    PROFILE.enable()
    try:
        return _run_script(self, rerun_data)
    finally:
        PROFILE.disable()


local_script_runner.LocalScriptRunner._run_script = _profiled_run_script


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page", help='a page file stem, e.g. 3_One_head ("app" = home)')
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--tab", help="label of a lazy tab to open first (key found on the page)")
    ap.add_argument("--reruns", type=int, default=6)
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    for logger in (
        "streamlit.runtime.scriptrunner_utils.script_run_context",
        "streamlit.runtime.caching.cache_data_api",
    ):
        logging.getLogger(logger).disabled = True
    path = ROOT / "app.py" if a.page == "app" else ROOT / "pages" / f"{a.page}.py"
    at = AppTest.from_file(str(path), default_timeout=300)
    at.query_params["model"] = a.model
    at.query_params["sentence"] = cut_to_tokens(shared_model(a.model).tokenizer, passage(20_000), a.tokens)
    at.run()
    if a.tab:
        from tests.apptest_utils import lazy_tabs

        key = next(k for k, labels in lazy_tabs(at).items() if a.tab in labels)
        at.session_state[key] = a.tab
        at.run()
    if at.exception:
        raise SystemExit(f"{path.name}: {at.exception[0].value}")
    times = []
    PROFILING[0] = True
    for i in range(a.reruns):
        at.slider(key="w_temperature").set_value(round(0.5 + 0.05 * i, 2))
        t0 = time.perf_counter()
        at.run()
        times.append(1000 * (time.perf_counter() - t0))
    PROFILING[0] = False
    print(
        f"{path.name} on {a.model} at {a.tokens} tokens{f', tab {a.tab!r}' if a.tab else ''}: "
        f"reruns (ms, under the profiler) {', '.join(f'{t:.0f}' for t in times)}"
    )
    print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    for key in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(PROFILE, stream=out).sort_stats(key).print_stats(a.top)
        print(out.getvalue().split("\n", 4)[-1])  # without pstats' header lines


if __name__ == "__main__":
    main()
