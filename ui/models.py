"""Loaded models, held in a module-level registry shared by every session.

A client's "clear cache" request empties Streamlit's caches, not this registry, so a bundled
model is loaded once per process and never reloaded for everyone. Traces are cached per
TraceKey (model, text, interventions) in TRACES, bounded in bytes; their arrays are read-only.
A key's τ on the weights shown (TraceKey.tau) is a view of its trace (transformer.shortcuts.Tempered), made when asked.
"""

from __future__ import annotations

import gc
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, fields, is_dataclass, replace

import streamlit as st
import torch

from lessons.encoder_decoder import family
from transformer import Interventions, Trace, run_traces
from transformer.loading import (
    LoadedModel,
    bundled_models,
    is_loaded,
    local_models,
    missing_real_models,
    real_models,
    shared_model,
)
from transformer.shortcuts import Tempered, trace_from

_FROZEN: set[int] = set()  # ids of the models already moved out of the garbage collector's sight


def threads_from(text: str | None) -> int:
    """ATLAS_TORCH_THREADS: a whole number ≥ 1; 1 when unset or not such a number (a bad setting must not stop the
    server from starting). Many sessions share few cores: one torch thread each beats several fighting over them."""
    return int(text) if text is not None and text.strip().isdigit() and int(text) >= 1 else 1


torch.set_num_threads(threads_from(os.environ.get("ATLAS_TORCH_THREADS")))

# The collector looks at the young objects after every 700 more allocations than frees (Python's default), and at
# everything not frozen (get_model) after ten times ten of those. A served process allocates so much a rerun
# (widgets, protobuf messages, figures) that with 50 students it made a full collection every ~7 s, ~140 ms each
# with the GIL held for every session. After 10,000: a third as many full collections, ~40 % less time collecting
# (bench/history/class.md).
GC_THRESHOLDS = (10_000, 10, 10)
gc.set_threshold(*GC_THRESHOLDS)


@st.cache_data(ttl=10, show_spinner=False)  # the folders are read again at most every 10 s, not on every rerun
def model_choices() -> list[str]:
    """What the model picker offers: the installed real models, the bundled ones, then models in the allowed folders."""
    return real_models() + bundled_models() + local_models()


# pip commands for the real models not installed
missing_models = st.cache_data(ttl=10, show_spinner=False)(missing_real_models)


@st.cache_data(ttl=60, max_entries=64, show_spinner=False)
def model_family(name: str) -> str | None:
    """The family ("bert", "gpt" or "llama") of a model the picker offers, read from its files without loading it."""
    return family(name)


def models_of(*families: str) -> list[str]:
    """The models the picker offers whose family is one of `families`, in the picker's order."""
    return [name for name in model_choices() if model_family(name) in families]


def get_model(name: str) -> LoadedModel:
    """A bundled model by name, or a model directory in an allowed folder; loaded at most once per process."""
    if is_loaded(name):
        loaded = shared_model(name, restrict=True)
    else:  # the first session to ask waits a few seconds (SmolLM2: ~4 s): say so
        with st.spinner(f"Loading the model {name} (once for everyone on this server)…"):
            loaded = shared_model(name, restrict=True)
    if id(loaded) not in _FROZEN:
        # Move the long-lived objects out of the collector's sight: every later collection is cheap.
        _FROZEN.add(id(loaded))
        gc.collect()
        gc.freeze()
    return loaded


class TraceCache:
    """The most recently used traces (a text's, or those of a batched pass), up to `budget`
    bytes in all; shared by every session.

    Bounded by bytes, not entries: a 16-token trace is ~1 MiB and a 256-token one ~29 MiB, so a count small enough
    for long texts would keep too few short ones (with 50 students, 16 entries last about a second). A trace grows
    after it is cached (its blocks run as far as pages read it), so every look-up counts the bytes again: the total
    may pass the budget by what traces grew since the last look-up, never for longer. Not a Streamlit cache: a
    client's "clear cache" message leaves it alone.
    """

    def __init__(self, budget: int):
        self.budget, self.nbytes = budget, 0
        self._items: OrderedDict[tuple, Trace | tuple[Trace, ...]] = OrderedDict()  # oldest first
        self._making: dict[tuple, Future] = {}  # key → the result of the make() running for it
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: tuple, make: Callable[[], Trace | tuple[Trace, ...]]) -> Trace | tuple[Trace, ...]:
        """The item under `key`, made by make() if it is not cached. One make() runs per key at a time: the sessions
        that ask for a key meanwhile wait for its result (30 students pressing one preset run it once), or get its
        exception, which is not cached. A make() stopped by Streamlit (a rerun or stop, not an error) hands the key
        on: one of the sessions waiting for it makes it."""
        while True:
            with self._lock:
                item = self._items.get(key)
                if item is not None:
                    self._items.move_to_end(key)
                    self._shrink()
                    return item
                making = self._making.get(key)
                if making is None:  # this session makes it
                    making = self._making[key] = Future()
                    break
            try:
                return making.result()
            except HandedOn:
                continue
        try:
            item = make()  # outside the lock: other sessions' look-ups go on meanwhile
        except BaseException as err:
            with self._lock:
                del self._making[key]
            making.set_exception(err if isinstance(err, Exception) else HandedOn())
            raise
        with self._lock:
            del self._making[key]
            self._items[key] = item
            self._shrink()
        making.set_result(item)
        return item

    def traces(self) -> list[Trace]:
        """The single traces cached now (not the batched ones), oldest first."""
        with self._lock:
            return [item for item in self._items.values() if isinstance(item, Trace)]

    def _shrink(self) -> None:
        """Count the traces' bytes again and drop the least recently used until they fit (the newest always stays)."""
        self.nbytes = sum(map(_nbytes, self._items.values()))
        while self.nbytes > self.budget and len(self._items) > 1:
            self.nbytes -= _nbytes(self._items.popitem(last=False)[1])


class HandedOn(Exception):
    """The make() a session waited for was stopped by Streamlit, not failed: the session makes the item itself."""


def _nbytes(item: Trace | tuple[Trace, ...]) -> int:
    """Bytes held by a cached trace, or by the traces of one batched pass."""
    return item.nbytes if isinstance(item, Trace) else sum(trace.nbytes for trace in item)


TRACES = TraceCache(budget=256 * 2**20)


@dataclass(frozen=True)
class TraceKey:
    """What fixes a trace: the model, the text, the changes to its forward pass, and the attention temperature τ on
    every head's weights shown (a view of that forward pass: Tempered). Hashable, so a cached function takes the key
    and reads the trace itself with get_trace(key): its arguments alone fix its result."""

    model: str
    text: str
    iv: Interventions = Interventions()
    tau: float = 1.0  # τ on the weights shown; the forward pass runs under iv (1: the trace as it ran)

    def but(self, **changes) -> TraceKey:
        """The same model, text and τ on the weights with some interventions changed: key.but(causal=False),
        key.but(ablate=pairs)."""
        if "ablate" in changes:
            changes["ablate"] = frozenset(changes["ablate"])  # in any order: one key
        return replace(self, iv=replace(self.iv, **changes))

    @property
    def untempered(self) -> TraceKey:
        """The key of the forward pass alone (τ = 1 on the weights): for what τ on the weights does not change."""
        return replace(self, tau=1.0)


@dataclass(frozen=True)
class BatchKey:
    """What fixes the traces of several texts run in one batched pass (get_traces), and τ on their weights shown."""

    model: str
    texts: tuple[str, ...]
    iv: Interventions = Interventions()
    tau: float = 1.0  # as TraceKey's

    @property
    def untempered(self) -> BatchKey:
        return replace(self, tau=1.0)


def key_fields(value):
    """A key (TraceKey, BatchKey) as plain values: its type and each field, dataclasses field by field, a frozenset
    sorted. Equal for equal keys, different for different ones."""
    if is_dataclass(value):
        return type(value).__name__, *(key_fields(getattr(value, f.name)) for f in fields(value))
    if isinstance(value, frozenset):
        return "frozenset", *sorted(value)
    return value


def key_text(key) -> str:
    """What Streamlit's caches hash for a key (KEY_HASH): its plain values written out. Streamlit's own hashing of a
    dataclass (through dataclasses.asdict, and a frozenset through pickle) costs ~0.3 ms a call, of one string ~0.05
    ms; a page calls several cached functions with its key on every run."""
    return repr(key_fields(key))


KEY_HASH = {TraceKey: key_text, BatchKey: key_text}


# Entries of a shared cache whose results are small (KiB) but cost forward passes or a full unembedding to make (the
# logit lens: ~1 s of CPU per SmolLM2 sentence): enough for a class's sentences, which a cache of 16 or 32 entries
# would keep evicting (a class of 50, each typing a sentence; the presets).
CLASS_SENTENCES = 256


def shared(max_entries: int):
    """st.cache_resource for a page's computation (ui/caches): at most max_entries results, shared by every session,
    no spinner, and keys hashed by their fields (key_text)."""
    return st.cache_resource(max_entries=max_entries, show_spinner=False, hash_funcs=KEY_HASH)


def get_trace(key: TraceKey) -> Trace | Tempered:
    """run_trace on a registry model, cached in TRACES; the trace's arrays are read-only. With key.tau ≠ 1, the
    cached trace seen with that τ on every head's weights (a view, made anew: no forward pass)."""
    if key.tau != 1:
        return Tempered(get_trace(key.untempered), key.tau)
    return TRACES.get(key, lambda: make_trace(key.model, key.text, key.iv))


def make_trace(model_name: str, text: str, iv: Interventions) -> Trace:
    """run_trace on a registry model, made from a trace in TRACES that shares blocks with it, if any: the same text
    under interventions that change only later layers, or a decoder's text that begins with the same tokens
    (transformer.shortcuts). The numbers of a fresh run either way."""
    lm = get_model(model_name)
    return trace_from(lm.model, lm.tokenizer, text, iv, TRACES.traces())


# Threads for forward passes that do not need each other (Masking: the model with and without its causal mask). Torch
# lets go of the GIL inside its matrix products, so two forwards on two cores take about the time of one.
_FORWARDS = ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 1) - 1), thread_name_prefix="atlas-forward")


def together(*calls: Callable[[], object]) -> list:
    """Each call's result, in order: the first on this thread, the others at the same time on _FORWARDS. The calls
    must not touch Streamlit (they run outside the script's thread); an exception in any of them is raised here."""
    others = [_FORWARDS.submit(call) for call in calls[1:]]
    first = calls[0]()
    return [first, *(f.result() for f in others)]


def get_traces(key: BatchKey) -> list[Trace] | list[Tempered]:
    """run_traces on a registry model (several texts, one batched pass), cached in TRACES beside the single traces
    (their numbers differ from run_trace's by float rounding, so under a key of their own); the arrays are read-only.
    With key.tau ≠ 1, each seen with that τ on its weights (as get_trace)."""
    if key.tau != 1:
        return [Tempered(tr, key.tau) for tr in get_traces(key.untempered)]

    def make() -> tuple[Trace, ...]:
        lm = get_model(key.model)
        return tuple(run_traces(lm.model, lm.tokenizer, key.texts, key.iv))

    return list(TRACES.get(key, make))
