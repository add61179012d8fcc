"""A cached page computation is fixed by its arguments: it takes a hashable trace key and reads the trace itself, so
two sentences never get each other's figure and no page can hand it a trace that does not match its key."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

import ui
from figures.common import esc
from tests.apptest_utils import ROOT, array
from transformer import Interventions, run_trace
from ui.caches import context, embeddings, heads

MODEL = "shakespeare-gpt"
SENTENCES = ("The cat sat on the mat.", "ROMEO: But, soft! what light through yonder window breaks?")


def test_a_trace_key_is_hashable_frozen_and_one_key_however_it_is_written():
    key = ui.TraceKey(MODEL, SENTENCES[0])
    defaults = Interventions(temperature=1.0, head_temperature=(), causal=True, ablate=frozenset())
    spelled = ui.TraceKey(MODEL, SENTENCES[0], defaults)
    assert key == spelled and hash(key) == hash(spelled) and len({key, spelled}) == 1
    assert key.but(ablate=[(1, 0), (0, 2)]) == key.but(ablate=((0, 2), (1, 0))) != key
    assert key.but(causal=False).iv == Interventions(causal=False) and key.iv.causal  # `but` makes a new key
    assert ui.TraceKey(MODEL, SENTENCES[1]) != key
    with pytest.raises(dataclasses.FrozenInstanceError):
        key.text = SENTENCES[1]
    batch = ui.BatchKey(MODEL, SENTENCES)
    assert hash(batch) == hash(ui.BatchKey(MODEL, tuple(SENTENCES))) and batch != key


def cached(decorator: ast.expr) -> bool:
    """A cache decorator: st.cache_resource or st.cache_data, or ui.models.shared (st.cache_resource, keys hashed by
    their fields)."""
    text = ast.unparse(decorator)
    return "cache_" in text or text.startswith("shared(")


def cached_functions() -> list[tuple[str, ast.FunctionDef]]:
    """Every cached function of ui/caches/, as (file, definition)."""
    found = []
    for path in sorted((ROOT / "ui" / "caches").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(cached(d) for d in node.decorator_list):
                found.append((Path(path).name, node))
    return found


def test_no_cached_function_takes_an_unhashed_argument_or_a_trace():
    """Streamlit leaves an argument whose name starts with "_" out of the cache key; a trace passed that way made the
    result depend on what the page passed, not on the arguments. A function that reads a trace takes its key."""
    found = cached_functions()
    assert len(found) >= 30  # the pages' cached computations, all of them looked at
    readers = 0
    for file, fn in found:
        names = [a.arg for a in fn.args.args]
        assert not [n for n in names if n.startswith("_")], f"{file}:{fn.name} takes {names}"
        types = [ast.unparse(a.annotation) for a in fn.args.args if a.annotation]
        assert not [t for t in types if re.search(r"\bTrace\b", t)], f"{file}:{fn.name} takes a trace: {types}"
        if {"get_trace", "get_traces"} & {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}:
            readers += 1
            assert names[0] in ("key", "keys"), f"{file}:{fn.name} reads a trace but takes no key first"
        if re.search(r"\b(TraceKey|BatchKey)\b", " ".join(types)):  # its keys hashed by their fields
            assert [ast.unparse(d) for d in fn.decorator_list][0].startswith("shared("), f"{file}:{fn.name}"
    assert readers >= 20


def test_a_key_is_hashed_by_every_field_and_equal_keys_alike():
    """What the caches hash for a key (ui.models.key_text): the same for equal keys, however written; different when
    any field differs, down to one switched-off head or τ of one head."""
    key = ui.TraceKey(MODEL, SENTENCES[0])
    same = [ui.TraceKey(MODEL, SENTENCES[0], Interventions(temperature=1.0), 1.0), key.but(ablate=())]
    assert {ui.models.key_text(k) for k in [key, *same]} == {ui.models.key_text(key)}
    two = key.but(ablate=[(1, 0), (0, 2)])
    assert ui.models.key_text(two) == ui.models.key_text(key.but(ablate=((0, 2), (1, 0))))
    others = [
        ui.TraceKey("minilm-l6", SENTENCES[0]),
        ui.TraceKey(MODEL, SENTENCES[1]),
        dataclasses.replace(key, tau=0.5),
        key.but(temperature=0.5),
        key.but(head_temperature=((0, 1, 2.0),)),
        key.but(causal=False),
        key.but(ablate=[(0, 2)]),
        two,
        ui.BatchKey(MODEL, (SENTENCES[0],)),
    ]
    texts = [ui.models.key_text(k) for k in [key, *others]]
    assert len(set(texts)) == len(texts)


def test_a_shared_cache_computes_once_per_key_whatever_object_carries_it():
    from ui.models import shared

    calls = []

    @shared(max_entries=8)
    def length(key: ui.TraceKey) -> int:
        calls.append(key)
        return len(key.text)

    key = ui.TraceKey(MODEL, SENTENCES[0]).but(ablate=[(1, 0), (0, 2)])
    assert length(key) == length(ui.TraceKey(MODEL, SENTENCES[0]).but(ablate=[(0, 2), (1, 0)])) == len(SENTENCES[0])
    assert len(calls) == 1
    length(key.but(ablate=[(0, 2)]))
    length(dataclasses.replace(key, tau=0.5))
    assert len(calls) == 3


def chip_labels(key: ui.TraceKey) -> list[str]:
    chips = embeddings.sentence_figures(key)[0].to_dict()
    return [t.split("<br>")[0] for t in chips["data"][0]["text"]]


def test_two_sentences_never_get_each_others_figures():
    """Each sentence's figures hold its own tokens and weights (from the tokenizer and a forward pass of its own, not
    through ui), asked for in turn twice: the second round comes from the caches."""
    lm = ui.get_model(MODEL)
    keys = [ui.TraceKey(MODEL, s) for s in SENTENCES]
    tokens = [[esc(label) for label in lm.tokenizer.encode(s).labels] for s in SENTENCES]
    patterns = [run_trace(lm.model, lm.tokenizer, s)["blocks.1.attn.hook_pattern"] for s in SENTENCES]  # (nh, T, T)
    assert tokens[0] != tokens[1]
    for _ in range(2):
        for key, expected, w in zip(keys, tokens, patterns, strict=True):
            assert chip_labels(key) == expected
            fig, zmax = heads.heads_figure(key, 1, (), 4)
            z = [array(trace["z"]) for trace in fig.to_dict()["data"]]  # one map per head
            assert len(z) == len(w) and zmax == pytest.approx(w.max(), abs=1e-6)
            for h in range(len(w)):
                np.testing.assert_allclose(np.nan_to_num(z[h]), w[h], atol=1e-6)


def test_a_batched_sentence_gets_its_own_weights_whatever_its_place_in_the_batch():
    lm = ui.get_model(MODEL)
    alone = {s: run_trace(lm.model, lm.tokenizer, s)["blocks.0.attn.hook_pattern"][2, 3] for s in SENTENCES}  # (T,)
    for order in (SENTENCES, SENTENCES[::-1]):
        key = ui.BatchKey(MODEL, order)
        for n, s in enumerate(order, start=1):
            bars = context.attention_figure(key, n, 3, 0, 2).to_dict()
            np.testing.assert_allclose(array(bars["data"][0]["y"]), alone[s], atol=1e-5)  # batch vs alone: rounding
