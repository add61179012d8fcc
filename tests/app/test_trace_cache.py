"""The shared trace cache under a class: identical requests in flight run once, and make_trace builds a trace from the
cached one it shares blocks with (same text under a later ablation, a typed extension), equal to a fresh run."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

import ui.models
from transformer import NO_INTERVENTIONS, Interventions, run_trace

MODEL = "shakespeare-gpt"  # 4 layers
TEXT = "The hiking trail led us through bear country."


@pytest.fixture
def lm():
    return ui.models.get_model(MODEL)


def counted(calls: list, make, wait: float = 0.3):
    """make, counting its calls in `calls` and taking `wait` seconds longer (the others ask meanwhile)."""

    def slow():
        calls.append(threading.get_ident())
        time.sleep(wait)
        return make()

    return slow


def test_thirty_identical_requests_at_once_make_the_trace_once(lm):
    cache, calls = ui.models.TraceCache(budget=2**30), []
    make = counted(calls, lambda: run_trace(lm.model, lm.tokenizer, TEXT))
    with ThreadPoolExecutor(max_workers=30) as pool:
        got = list(pool.map(lambda _: cache.get(("preset",), make), range(30)))
    assert len(calls) == 1 and all(trace is got[0] for trace in got) and len(cache) == 1
    assert cache.get(("preset",), make) is got[0] and len(calls) == 1  # cached


def test_an_error_reaches_every_waiter_and_is_not_cached():
    cache, calls = ui.models.TraceCache(budget=2**30), []

    def fails():
        raise ValueError("no such model")

    def ask(_):
        try:
            cache.get(("broken",), counted(calls, fails))
        except ValueError as err:
            return str(err)

    with ThreadPoolExecutor(max_workers=10) as pool:
        assert list(pool.map(ask, range(10))) == ["no such model"] * 10
    assert len(calls) == 1 and len(cache) == 0
    assert ask(0) == "no such model" and len(calls) == 2  # the next request tries again


def test_a_make_stopped_by_streamlit_hands_the_key_to_a_waiter(lm):
    """A rerun or stop (StopException, not an error) in the session making the trace must not reach the others'
    scripts: one of the waiting sessions makes it instead."""
    cache, calls, started = ui.models.TraceCache(budget=2**30), [], threading.Event()

    def stopped():
        started.set()
        time.sleep(0.3)
        raise StopException()

    make = counted(calls, lambda: run_trace(lm.model, lm.tokenizer, TEXT), wait=0.1)
    with ThreadPoolExecutor(max_workers=6) as pool:
        first = pool.submit(cache.get, ("preset",), stopped)
        started.wait(5)
        others = [pool.submit(cache.get, ("preset",), make) for _ in range(5)]
        with pytest.raises(StopException):
            first.result()
        got = [f.result() for f in others]
    assert len(calls) == 1 and all(trace is got[0] for trace in got)


@pytest.fixture
def traces(monkeypatch):
    """An empty trace cache for ui.models, for the test alone."""
    cache = ui.models.TraceCache(budget=2**30)
    monkeypatch.setattr(ui.models, "TRACES", cache)
    return cache


def make(traces, text: str, iv: Interventions = NO_INTERVENTIONS):
    return traces.get((MODEL, text, iv), lambda: ui.models.make_trace(MODEL, text, iv))


def test_make_trace_derives_an_ablation_from_the_cached_trace_of_the_text(traces, lm):
    base = make(traces, TEXT).run_blocks()
    iv = Interventions(ablate=frozenset({(3, 1)}))
    derived = make(traces, TEXT, iv)
    assert derived is not base and derived.forward.done == 3 and len(traces) == 2
    assert derived.cache["blocks.2.hook_resid_post"] is base.cache["blocks.2.hook_resid_post"]  # shared, not run again
    fresh = run_trace(lm.model, lm.tokenizer, TEXT, iv)
    for name in fresh.names:
        np.testing.assert_array_equal(derived[name], fresh[name], err_msg=name)


def test_make_trace_extends_a_cached_shorter_text(traces, lm):
    make(traces, TEXT)["blocks.2.attn.hook_pattern"]  # a page read layer 2: blocks 0–2 ran
    longer = TEXT + " We saw no bears."
    extended = make(traces, longer)
    assert extended.forward.start == 3  # blocks 0–2 run on the new tokens alone
    fresh = run_trace(lm.model, lm.tokenizer, longer)
    for name in ("blocks.1.hook_resid_post", "blocks.3.attn.hook_pattern", "logits"):
        # float32 rounding: the new tokens ran in products of other shapes than a fresh run's
        np.testing.assert_allclose(extended[name], fresh[name], rtol=1e-4, atol=1e-5, err_msg=name)
    assert make(traces, "A sentence of its own.").forward.done == 0  # nothing in common: a fresh trace


CLASS = 50  # students on one process, each with a sentence of their own


@pytest.mark.parametrize(
    "module, lesson, made_by, cached_call",
    [
        # the logit lens: ~1 s of CPU per SmolLM2 sentence
        ("next_token", "ll", "logit_lens", lambda c, key: c.lens_figure(key, 3)),
        # Masking: the text with and without its causal mask, two forward passes
        ("masking", "one_head", "future_table", lambda c, key: c.future_comparison(key, 4)),
        # Multi-head: the heads switched off, a forward pass from their layer on
        ("heads", "heads", "next_token_change", lambda c, key: c.ablation(key, ((1, 0),), 5)),
    ],
)
def test_a_class_of_sentences_stays_in_the_costly_caches(monkeypatch, module, lesson, made_by, cached_call):
    """A class on one page, each student with a sentence of their own, every student moving a control again (τ on the
    weights: the same key for these results): each result was made once, not again at every move (with a cache of 16
    or 32 entries, 50 students evicted one another: on SmolLM2's lens, 1.4 s of CPU a move, p50 31 s for 40
    students)."""
    import importlib

    cache = importlib.import_module(f"ui.caches.{module}")
    lesson = getattr(cache, lesson)  # the lessons module whose function makes the result
    made, real = [], getattr(lesson, made_by)
    monkeypatch.setattr(lesson, made_by, lambda *a, **k: made.append(1) or real(*a, **k))
    keys = [ui.models.TraceKey(MODEL, f"{TEXT} Student {i} wrote it.") for i in range(CLASS)]
    for _ in range(2):  # every student's page, then every student's move
        for key in keys:
            cached_call(cache, key)
    assert len(made) == CLASS
