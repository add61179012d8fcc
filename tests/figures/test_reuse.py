"""Figures built once per input (figures/reuse.py): equal arguments give the figure built before, any difference a new
one; arguments that cannot be compared build every time; the kept figures stay within their budget."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

import figures
from figures import attention as fa
from figures import reuse
from figures.common import grouped_bars
from figures.softmax import temperature_curves

FIGURES = Path(figures.__file__).parent


@pytest.fixture(autouse=True)
def empty(monkeypatch):
    monkeypatch.setattr(reuse, "KEPT", reuse.Figures())


def counted():
    """A figure function that counts its builds (each build a new object)."""
    built = []

    def bars_of(values, labels, *, title=""):
        built.append(1)
        return object()

    return reuse.reused(bars_of), built


def test_equal_arguments_give_the_figure_built_before():
    weights = np.array([[1.0, 0.0], [0.25, 0.75]], dtype=np.float32)
    first = fa.weights_heatmap(weights, ["a", "b"], None, "α")
    again = fa.weights_heatmap(weights.copy(), list("ab"), None, "α")  # equal values, new objects
    assert again is first
    assert fa.weights_heatmap(weights, ["a", "c"], None, "α") is not first  # a label differs
    assert fa.weights_heatmap(weights * 0.5, ["a", "b"], None, "α") is not first  # a number differs
    assert fa.weights_heatmap(weights, ["a", "b"], None, "α", values=False) is not first  # a keyword differs


def test_every_difference_of_value_type_or_order_builds_anew(monkeypatch):
    build, built = counted()
    a = np.arange(4, dtype=np.float32)
    calls = [
        (a, ["x"]),
        (a.copy(), ["x"]),  # equal: kept
        (a.astype(np.float64), ["x"]),  # same numbers, another dtype
        (a.reshape(2, 2), ["x"]),  # same bytes, another shape
        (a, ("x",)),  # a tuple, not a list
        (a, [1]),
        (a, [1.0]),  # 1.0 == 1, but not the same argument
        (a, [True]),
    ]
    for values, labels in calls:
        build(values, labels)
    assert len(built) == len(calls) - 1
    build({"b": a, "c": a}, ["x"])
    build({"c": a, "b": a}, ["x"])  # a dict's order is a legend's order
    assert len(built) == len(calls) + 1
    build(a, ["x"], title="t")
    build(a, ["x"], title="t")
    assert len(built) == len(calls) + 2


def test_a_page_function_gives_the_same_figure_for_a_recomputed_input():
    """What a rerun does: the page computes its arrays again, equal to last time's."""
    taus = np.geomspace(0.05, 5.0, 120)
    entropy, top = np.log2(taus + 1), 1 / (taus + 1)
    first = temperature_curves(taus, entropy, top, 1.0, 0.5, 0.5, 1.585)
    assert temperature_curves(taus.copy(), entropy.copy(), top.copy(), 1.0, 0.5, 0.5, 1.585) is first
    assert temperature_curves(taus, entropy, top, 0.95, 0.5, 0.5, 1.585) is not first
    bars = {"softmax(s)": np.array([0.1, 0.2, 0.7])}
    assert grouped_bars(dict(bars), ["s1", "s2", "s3"], title="w") is grouped_bars(bars, ["s1", "s2", "s3"], title="w")


def test_arguments_that_cannot_be_compared_build_every_time(monkeypatch):
    build, built = counted()
    thing = object()
    build(thing, ["x"])
    build(thing, ["x"])
    assert len(built) == 2 and len(reuse.KEPT) == 0
    big = np.zeros(reuse.MAX_ARRAY_BYTES // 4 + 1, dtype=np.float32)  # one float more than MAX_ARRAY_BYTES
    build(big, ["x"])
    build(big, ["x"])
    vocabulary = [f"token {i}" for i in range(reuse.MAX_ITEMS + 1)]  # one label more than MAX_ITEMS
    build(np.zeros(3), vocabulary)
    build(np.zeros(3), vocabulary)
    assert len(built) == 6 and len(reuse.KEPT) == 0
    build(np.zeros(3), vocabulary[1:])  # as many labels as MAX_ITEMS allows: kept
    build(np.zeros(3), vocabulary[1:])
    assert len(built) == 7 and len(reuse.KEPT) == 1


def test_the_least_recently_used_go_first_past_the_budget(monkeypatch):
    build, built = counted()
    one = 3 * 1024 * 4 // 3 + reuse.FIGURE_BYTES  # what a figure of a 3 KiB array counts
    monkeypatch.setattr(reuse, "KEPT", reuse.Figures(budget=3 * one))
    arrays = [np.full(768, i, dtype=np.float32) for i in range(4)]  # 3 KiB each
    for a in arrays[:3]:
        build(a, [])
    build(arrays[0], [])  # used again: now the most recent
    build(arrays[3], [])  # over the budget: drops arrays[1], the least recently used
    assert len(reuse.KEPT) == 3 and reuse.KEPT.nbytes == 3 * one
    n = len(built)
    build(arrays[0], [])
    build(arrays[2], [])
    assert len(built) == n  # still kept
    build(arrays[1], [])
    assert len(built) == n + 1  # built again


def figure_functions() -> list[tuple[str, str, list[str]]]:
    """(module, name, its parameters' annotations) of every public function in figures/ that returns a figure."""
    found = []
    for path in sorted(FIGURES.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if (
                isinstance(node, ast.FunctionDef)
                and not node.name.startswith("_")
                and node.returns is not None
                and ast.unparse(node.returns) in ("go.Figure", "Spec")
            ):
                params = [ast.unparse(a.annotation) for a in [*node.args.args, *node.args.kwonlyargs] if a.annotation]
                found.append((path.stem, node.name, params))
    return found


def test_every_figure_function_of_plain_values_is_reused():
    """A figure function is reused unless it takes an object compared by identity only (a Trace, an Encoding: its
    callers keep its figure in ui/caches) or is common.figure, which every other one calls."""
    import importlib

    functions = figure_functions()
    assert len(functions) > 60
    for module, name, params in functions:
        fn = getattr(importlib.import_module(f"figures.{module}"), name)
        plain = not any(p in ("Trace", "Encoding") for p in params) and (module, name) != ("common", "figure")
        assert hasattr(fn, "__wrapped__") == plain, f"figures.{module}.{name}"
        if plain:
            assert inspect.signature(fn) == inspect.signature(fn.__wrapped__)
