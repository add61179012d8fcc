"""Figures built once per input: a figure function called again with the same arguments returns the figure it built.

A page builds its figures on every run, though most runs change few of them: a control of one section, τ moved back,
a tab or an expander opened, a student's page following the teacher. A figure is never changed once built
(common.Spec: shared figures are read-only), so the one built before serves, and its description (ui/a11y.py, made
once per figure object) comes with it.

Arguments are compared by value: arrays by dtype, shape and bytes; lists, tuples and dicts item by item (a dict's
order counts: it orders a legend); numbers, strings, None by type and value. A call with anything else (a Trace), or
with more than MAX_ARRAY_BYTES of arrays or MAX_ITEMS numbers and strings outside arrays (a vocabulary's labels:
comparing them would cost more than the figure), is built as before and not kept. At most BUDGET_BYTES of figures
are kept per process, the least recently used dropped first; a figure is counted as its arrays' bytes (base64 in the
figure: 4/3 of them) plus FIGURE_BYTES for the rest.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

MAX_ARRAY_BYTES = 1 << 20  # a 512 × 512 float32 map: larger inputs are rare, and their figures large
MAX_ITEMS = 4096  # the labels of a 256-token sentence are 256; the logit lens's, 31 stages × 64 tokens
BUDGET_BYTES = 64 << 20
FIGURE_BYTES = 16 << 10  # labels, layout and hover text of a typical figure
SCALARS = (str, int, float, bool, complex, type(None))


def value_key(value, left: list[int]) -> tuple | None:
    """A hashable stand-in for `value`, equal for equal values, or None when `value` cannot be compared by value or
    goes past what is `left` to compare ([array bytes, other items], each met taken from it)."""
    if isinstance(value, SCALARS):
        left[1] -= 1
        return (type(value), value) if left[1] >= 0 else None
    if isinstance(value, np.ndarray):
        left[0] -= value.nbytes
        if left[0] < 0:
            return None
        if value.dtype.hasobject:  # e.g. labels held as Python strings
            items = value_key(value.tolist(), left)
            return None if items is None else ("objects", value.shape, items)
        data = np.ascontiguousarray(value).tobytes()
        return "array", value.dtype.str, value.shape, hashlib.blake2b(data, digest_size=16).digest()
    if isinstance(value, np.generic):
        return "scalar", value.dtype.str, value.item()
    if isinstance(value, dict):
        value = [part for item in value.items() for part in item]  # keys and values in the dict's order
        kind = dict
    elif isinstance(value, list | tuple):
        kind = type(value)
    else:
        return None
    if len(value) > left[1]:  # too many to compare: give up before looking
        return None
    keys = []
    for v in value:
        key = value_key(v, left)
        if key is None:
            return None
        keys.append(key)
    return kind, tuple(keys)


class Figures:
    """The figures kept: call key → (figure, bytes counted), least recently used first; thread-safe."""

    def __init__(self, budget: int = BUDGET_BYTES):
        self.budget, self.nbytes = budget, 0
        self._items: OrderedDict[tuple, tuple[object, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple):
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: tuple, fig, nbytes: int) -> None:
        with self._lock:
            if key in self._items:
                return
            self._items[key] = fig, nbytes
            self.nbytes += nbytes
            while self.nbytes > self.budget:
                _, (_, dropped) = self._items.popitem(last=False)
                self.nbytes -= dropped

    def __len__(self) -> int:
        return len(self._items)


KEPT = Figures()


def reused(build: Callable) -> Callable:
    """`build` (a figure function), returning the figure it built before for equal arguments (see the module)."""

    @functools.wraps(build)
    def figure(*args, **kwargs):
        left = [MAX_ARRAY_BYTES, MAX_ITEMS]
        key = value_key((args, sorted(kwargs.items())), left)
        if key is None:
            return build(*args, **kwargs)
        key = build, key
        fig = KEPT.get(key)
        if fig is None:
            fig = build(*args, **kwargs)
            KEPT.put(key, fig, (MAX_ARRAY_BYTES - left[0]) * 4 // 3 + FIGURE_BYTES)
        return fig

    return figure
