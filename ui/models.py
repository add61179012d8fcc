"""Loaded models, held in a module-level registry shared by every session.

A client's "clear cache" request empties Streamlit's caches, not this registry, so a bundled
model is loaded once per process and never reloaded for everyone. Traces are cached per
(model, text, interventions) with bounded size; their arrays are read-only.
"""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path

import streamlit as st
import torch

from transformer import Interventions, Trace, run_trace, run_traces
from transformer.loading import LoadedModel, bundled_models, load_model, local_models

_MODELS: dict[str, LoadedModel] = {}
_LOCK = threading.Lock()
# Many sessions share 2 cores: one torch thread each beats several fighting over the cores.
torch.set_num_threads(int(os.environ.get("ATLAS_TORCH_THREADS", "1")))


@st.cache_data(ttl=10, show_spinner=False)  # the folders are read again at most every 10 s, not on every rerun
def model_choices() -> list[str]:
    """What the model picker offers: bundled names, then model directories in the allowed folders."""
    return bundled_models() + local_models()


def get_model(name: str) -> LoadedModel:
    """A bundled model by name, or a model directory in an allowed folder; loaded at most once per process."""
    if name in _MODELS:  # the common case, without looking at the disk
        return _MODELS[name]
    key = name if name in bundled_models() else str(Path(name).expanduser().resolve())
    with _LOCK:
        if key not in _MODELS:
            _MODELS[key] = load_model(key, restrict=True)
            # Move the long-lived objects out of the collector's sight: every later collection is cheap.
            gc.collect()
            gc.freeze()
        return _MODELS[key]


def get_trace(model_name: str, text: str, temperature: float = 1.0, causal: bool = True, ablate: tuple[tuple[int, int], ...] = (), head_temperature: tuple[tuple[int, int, float], ...] = ()) -> Trace:
    """run_trace on a registry model, cached; the trace's arrays are read-only.

    Streamlit keys a cache by the arguments as passed, defaults left out: every call goes through here with all of them,
    so get_trace(m, s, τ) and get_trace(m, s, τ, causal=True) share one entry (one forward pass, not two)."""
    # by keyword: Streamlit looks up the signature again for every positional argument
    return _trace(model_name=model_name, text=text, temperature=float(temperature), causal=bool(causal), ablate=tuple(ablate), head_temperature=tuple(head_temperature))


@st.cache_resource(max_entries=16, show_spinner=False)  # a 256-token trace is ~29 MiB
def _trace(model_name: str, text: str, temperature: float, causal: bool, ablate: tuple[tuple[int, int], ...], head_temperature: tuple[tuple[int, int, float], ...]) -> Trace:
    lm = get_model(model_name)
    iv = Interventions(temperature=temperature, causal=causal, ablate=frozenset(ablate), head_temperature=head_temperature)
    return run_trace(lm.model, lm.tokenizer, text, iv)


@st.cache_resource(max_entries=8, show_spinner=False)
def get_traces(model_name: str, texts: tuple[str, ...], temperature: float) -> list[Trace]:
    """run_traces on a registry model (several texts, one batched pass), cached; the arrays are read-only."""
    lm = get_model(model_name)
    return run_traces(lm.model, lm.tokenizer, texts, Interventions(temperature=temperature))
