"""ui/serving.py: script runs take turns, a failing run frees its place, a stuck gate never hangs a page."""

from __future__ import annotations

import threading
import time

import pytest
from streamlit.runtime.scriptrunner import script_runner

from tests.apptest_utils import page_path, run_page
from ui import serving


def most_at_once(runs: int, threads: int = 6, hold_s: float = 0.02) -> int:
    """Start `threads` runs of a gated function together; how many were ever inside it at the same time."""
    inside, most, lock = 0, 0, threading.Lock()

    def run(self, rerun_data):
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        time.sleep(hold_s)
        with lock:
            inside -= 1

    gated = serving.gate(run, runs)
    workers = [threading.Thread(target=gated, args=(None, None)) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return most


def test_runs_take_turns():
    assert most_at_once(runs=1) == 1
    assert most_at_once(runs=2) == 2
    assert most_at_once(runs=6) > 1  # the measurement itself sees overlap when the gate allows it


def test_a_failing_run_frees_its_place():
    def run(self, rerun_data):
        raise RuntimeError("script error")

    gated = serving.gate(run, 1)
    for _ in range(3):
        with pytest.raises(RuntimeError):
            gated(None, None)
    assert gated.places.acquire(blocking=False)  # the place is free again


def test_a_run_goes_ahead_when_the_gate_stays_shut(monkeypatch):
    monkeypatch.setattr(serving, "WAIT_S", 0.05)
    ran = []
    gated = serving.gate(lambda self, rerun_data: ran.append(1), 1)
    gated.places.acquire()  # a run that never ends
    t0 = time.perf_counter()
    gated(None, None)  # must not release the place it did not get (a BoundedSemaphore would raise)
    assert ran == [1] and time.perf_counter() - t0 >= 0.05


def test_install_wraps_streamlit_once(monkeypatch):
    class Runner:
        def _run_script(self, rerun_data):
            return rerun_data

    monkeypatch.setattr(script_runner, "ScriptRunner", Runner)
    monkeypatch.delenv(serving.RUNS_ENV, raising=False)
    serving.install()
    first = Runner._run_script
    serving.install()
    assert Runner._run_script is first and hasattr(first, "places")
    assert Runner()._run_script("data") == "data"


@pytest.mark.parametrize("value", ["0", "2", "x", "-1"])
def test_install_follows_the_environment(monkeypatch, value):
    class Runner:
        def _run_script(self, rerun_data):
            return rerun_data

    monkeypatch.setattr(script_runner, "ScriptRunner", Runner)
    monkeypatch.setenv(serving.RUNS_ENV, value)
    if not value.isdigit():
        with pytest.raises(ValueError, match=serving.RUNS_ENV):
            serving.install()
        return
    serving.install()
    gated = hasattr(Runner._run_script, "places")
    assert gated == (value != "0")


def test_pages_run_through_the_gate(monkeypatch):
    """`import ui` gates Streamlit's own runner (AppTest's runner inherits it):
    with the place taken, a page waits WAIT_S."""
    places = script_runner.ScriptRunner._run_script.places
    monkeypatch.setattr(serving, "WAIT_S", 0.5)
    assert places.acquire(blocking=False)
    try:
        t0 = time.perf_counter()
        at = run_page(page_path("5_Softmax_and_temperature"))
        waited = time.perf_counter() - t0
    finally:
        places.release()
    assert not at.exception and waited >= 0.5
