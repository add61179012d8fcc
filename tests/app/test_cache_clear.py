"""Any browser may send Streamlit's "clear cache" message; it must not make the bundled model load again for everyone.

Streamlit handles that message (BackMsg clear_cache) in AppSession._handle_clear_cache_request, which empties
st.cache_data and st.cache_resource for the whole process. ui.models holds models in a module-level registry,
and traces in ui.models.TRACES: neither is emptied. The tests send the real message through a real AppSession.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import streamlit as st
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.script_data import ScriptData
from streamlit.runtime.scriptrunner.script_cache import ScriptCache

import ui
from tests.apptest_utils import ROOT, array, assert_ok, chart, charts, page_path, run_page
from transformer import Interventions, loading, run_trace
from transformer.shortcuts import Tempered

MODEL = "shakespeare-gpt"


def send_clear_cache() -> None:
    """What the server does when a browser sends the clear-cache message."""

    async def session() -> None:  # an AppSession needs a running event loop
        s = AppSession(
            ScriptData(str(ROOT / "app.py")), MemoryUploadedFileManager("/_stcore/upload_file"), ScriptCache(), None, {}
        )
        try:
            s.handle_backmsg(BackMsg(clear_cache=True))
        finally:
            s.shutdown()

    # on a thread of its own: in a worker that ran browser tests first, Playwright's loop runs on this one
    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, session()).result()


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    """The names the shared registry (transformer.loading) loads from disk during the test."""
    calls, real = [], loading.load_model

    def counting(name, *args, **kwargs):
        calls.append(str(name))
        return real(name, *args, **kwargs)

    monkeypatch.setattr(loading, "load_model", counting)
    return calls


@pytest.fixture
def traces(monkeypatch) -> list[str]:
    """The texts ui.models runs through the model (not served from the trace cache) during the test."""
    calls, real = [], ui.models.make_trace

    def counting(model_name, text, *args, **kwargs):
        calls.append(text)
        return real(model_name, text, *args, **kwargs)

    monkeypatch.setattr(ui.models, "make_trace", counting)
    return calls


def survives_clear_cache(get_model, loads: list[str]) -> bool:
    """After a clear-cache message, `get_model` returns the very same object and nothing was loaded again."""
    before = get_model(MODEL)
    n_loads = len(loads)
    send_clear_cache()
    return get_model(MODEL) is before and len(loads) == n_loads


def test_clear_cache_keeps_the_loaded_model(loads):
    assert survives_clear_cache(ui.get_model, loads)
    assert loads in ([], [MODEL])  # at most the first load, if no earlier test had loaded it


def test_a_model_held_only_in_cache_resource_would_be_reloaded(loads):
    """The check above has teeth: the naive accessor, a plain @st.cache_resource function, fails it."""

    @st.cache_resource
    def plain_get_model(name: str):
        return loading.load_model(name, restrict=True)

    assert not survives_clear_cache(plain_get_model, loads)
    assert loads == [MODEL, MODEL]  # loaded, cleared, loaded again


def test_pages_render_after_clear_cache(loads, traces):
    """The open session reruns and a new session opens after the clear: same numbers, no model load, and the traces
    (ui.models.TRACES, not a Streamlit cache) are still there: one student cannot make everyone's pages recompute."""
    at = run_page("app.py")
    before = array(chart(at, "home_pattern")["data"][0]["z"])
    loads.clear()  # the process's first load, if it happened just now
    send_clear_cache()
    traces.clear()
    at.run()
    assert_ok(at)
    np.testing.assert_array_equal(array(chart(at, "home_pattern")["data"][0]["z"]), before)
    assert traces == []
    fresh = run_page(page_path("3_One_head"))
    assert_ok(fresh)
    assert charts(fresh)
    assert loads == []


def test_one_trace_however_its_key_is_written(traces):
    """A trace key with its defaults written out or left out, or its heads switched off listed in another order, is one
    key: one forward pass."""
    text = "A sentence no other test runs, for one cache entry."
    first = ui.get_trace(ui.TraceKey(MODEL, text, Interventions(temperature=0.7)))
    assert ui.get_trace(ui.TraceKey(MODEL, text, Interventions(0.7, (), True, frozenset()))) is first
    assert ui.page.get_trace(ui.TraceKey(MODEL, text).but(temperature=0.7)) is first
    assert traces == [text]
    ablated = ui.get_trace(ui.TraceKey(MODEL, text).but(ablate=[(1, 0), (0, 2)]))
    assert ui.get_trace(ui.TraceKey(MODEL, text).but(ablate=((0, 2), (1, 0)))) is ablated is not first
    assert traces == [text, text]


def test_tau_on_the_weights_shown_is_a_view_of_the_cached_trace(traces):
    """A key's τ on the weights (the sidebar's default) makes no trace: get_trace returns the cached one, seen through
    Tempered; `but` keeps the τ, `untempered` drops it."""
    text = "Another sentence no other test runs, seen at three temperatures."
    plain = ui.get_trace(ui.TraceKey(MODEL, text))
    for tau in (0.5, 2.0, 0.5):
        key = ui.TraceKey(MODEL, text, tau=tau)
        view = ui.get_trace(key)
        assert isinstance(view, Tempered) and view.trace is plain and view.tau == tau
        assert key.untempered == ui.TraceKey(MODEL, text) and key != key.untempered
        assert key.but(causal=False).tau == tau
    assert ui.get_trace(ui.TraceKey(MODEL, text).but(temperature=0.5)) is not plain  # τ in every layer: its own pass
    assert traces == [text, text]
    batch = ui.BatchKey(MODEL, (text, "A second one."), tau=0.5)
    views = ui.get_traces(batch)
    alone = ui.get_traces(batch.untempered)
    assert (
        len(views) == len(alone) == 2
        and all(v.trace is t and v.tau == 0.5 for v, t in zip(views, alone, strict=True))
    )


def test_trace_cache_keeps_the_most_recent_traces_within_its_byte_budget():
    lm = ui.get_model(MODEL)
    made = []

    def maker(tau: float):
        def make():
            made.append(tau)
            text = "The same words, three temperatures."
            return run_trace(lm.model, lm.tokenizer, text, ui.models.Interventions(temperature=tau))

        return make

    size = maker(1.0)().nbytes
    made.clear()
    cache = ui.models.TraceCache(budget=int(2.5 * size))  # room for two
    first = cache.get(("a",), maker(0.5))
    cache.get(("b",), maker(0.6))
    assert cache.get(("a",), maker(0.5)) is first  # a hit, and "a" is now the most recent
    cache.get(("c",), maker(0.7))  # over budget: the least recent ("b") goes
    assert made == [0.5, 0.6, 0.7] and len(cache) == 2 and cache.nbytes == 2 * size
    assert cache.get(("a",), maker(0.5)) is first
    cache.get(("c",), maker(0.7))
    cache.get(("b",), maker(0.6))
    assert made == [0.5, 0.6, 0.7, 0.6]  # "a" and "c" were hits; "b" had been evicted: made again
    # A cached trace grows as pages read it; the next look-up counts it again and makes room.
    cache.get(("b",), maker(0.6))["logits"]  # every block and the logits: far more than two fresh traces
    assert cache.nbytes == 2 * size  # counted at look-ups only
    cache.get(("c",), maker(0.7))  # a hit: now "b" is the least recent, and over the budget
    assert len(cache) == 1 and cache.nbytes == size
    cache.get(("b",), maker(0.6))
    assert made == [0.5, 0.6, 0.7, 0.6, 0.6]
    huge = ui.models.TraceCache(budget=size // 2)
    # one trace above the budget stays
    assert huge.get(("x",), maker(0.8)) is huge.get(("x",), maker(0.8)) and len(huge) == 1


def test_together_runs_the_calls_at_the_same_time_and_returns_them_in_order():
    """Masking runs the model with and without its mask through ui.models.together: two calls that each wait for
    the other would time out if they ran one after the other."""
    import threading

    meet = threading.Barrier(2, timeout=10)
    assert (
        ui.models.together(lambda: (meet.wait(), "first")[1], lambda: (meet.wait(), "second")[1])
        == ["first", "second"]
    )
    assert ui.models.together(lambda: 1, lambda: 2, lambda: 3) == [1, 2, 3]  # more calls than threads: they queue

    def fails():
        raise ValueError("the second call's error")

    with pytest.raises(ValueError, match="second call"):
        ui.models.together(lambda: 1, fails)
