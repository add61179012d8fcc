"""The real models for the app tests that open pages on them (skipped where their packages are not installed)."""

from __future__ import annotations

import pytest

import ui.models
from transformer.loading import shared_model

SMOL, MINI = "smollm2-135m", "minilm-l6"
SENTENCE = "The animal didn't cross the street because it was too tired."


@pytest.fixture(autouse=True, scope="module")
def own_trace_cache():
    """Each test file starts with an empty trace cache. A trace the app makes from a cached one (the same sentence with
    heads switched off, a longer sentence that begins with a cached one: ui.models.make_trace) equals a fresh trace
    within float32 rounding; the page tests compare the page with fresh traces to the last bit, so another file's
    traces must not be there to start from (tests/engine/test_shortcuts.py checks those shortcuts)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ui.models, "TRACES", ui.models.TraceCache(budget=ui.models.TRACES.budget))
        yield


@pytest.fixture(scope="module")
def smol():
    return shared_model(SMOL)


@pytest.fixture(scope="module")
def mini():
    return shared_model(MINI)
