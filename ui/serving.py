"""One script run at a time per server process.

Streamlit runs every rerun in a thread of its own, and all of them share one GIL. A torch op lets go of
the GIL and must take it back, so with many students at once a forward pass pays for hundreds of thread
switches: a 16-token trace costs 4–5 ms of CPU alone, 10 ms with 8 traces at once and 13 ms with 25,
against 5 ms each when they take turns (bench/bench_engine.py). Python runs on one core at a time
anyway, so taking turns costs no throughput and saves the switching: 50 students dragging sliders on a
busy machine got p95 257–327 ms with the gate, 499–622 ms without (README, "Serving a classroom").

Streamlit has no setting for this: `install` wraps ScriptRunner._run_script, the one place a rerun's
script (and its fragments, and the reruns it restarts into) runs. A run that waits longer than
WAIT_S goes ahead anyway: the gate only saves time, it must never hang a page. _run_script is private:
if a Streamlit release moves or renames it, `install` logs one warning and leaves script runs ungated.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import threading

RUNS_ENV = "ATLAS_CONCURRENT_RUNS"  # how many script runs at once; 0 = no limit (Streamlit's default)
WAIT_S = 30.0
TARGET = ("streamlit.runtime.scriptrunner.script_runner", "ScriptRunner", "_run_script")  # module, class, method

log = logging.getLogger("atlas.serving")


def gate(run, runs: int):
    """`run` (ScriptRunner._run_script) behind a semaphore of `runs` places."""
    places = threading.BoundedSemaphore(runs)

    @functools.wraps(run)
    def gated(*args, **kwargs):  # passes on whatever Streamlit passes, so a new parameter cannot break a run
        got = places.acquire(timeout=WAIT_S)
        try:
            return run(*args, **kwargs)
        finally:
            if got:
                places.release()

    gated.places = places  # marks the wrapper (install is idempotent); tests take the place
    return gated


def streamlit_class(target: tuple[str, str, str]) -> type | None:
    """The class of `target` (module, class, method) if it has that method, callable; else None."""
    module, cls_name, method = target
    try:
        cls = getattr(importlib.import_module(module), cls_name, None)
    except ImportError:
        return None
    return cls if isinstance(cls, type) and callable(getattr(cls, method, None)) else None


def runner_class() -> type | None:
    """Streamlit's ScriptRunner if it still has a callable _run_script to wrap; else None, after one warning."""
    if (cls := streamlit_class(TARGET)) is not None:
        return cls
    log.warning(
        "%s.%s.%s not found or not callable: script runs are not gated (Streamlit's default behaviour)", *TARGET
    )
    return None


def install() -> None:
    """Gate script runs to ATLAS_CONCURRENT_RUNS (default 1) at once; idempotent;
    a no-op if Streamlit lacks the hook."""
    raw = os.environ.get(RUNS_ENV, "1")
    if not raw.isdigit():
        raise ValueError(f"{RUNS_ENV} must be a whole number (0 = no limit), not {raw!r}")
    runs = int(raw)
    cls = runner_class() if runs > 0 else None
    if cls is not None and not hasattr(cls._run_script, "places"):
        cls._run_script = gate(cls._run_script, runs)
