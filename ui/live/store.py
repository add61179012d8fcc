"""Where live classes are kept: the ClassStore protocol and its in-memory backend (one process, the default).

A store knows nothing of teachers, secrets or questions (ui/live/classroom.py holds those rules); it keeps, per class
code, one record of string fields with a version number, named tables of string fields (the questions, the answers),
heartbeat groups (who follows, who explores) and rate counters. Every key of a class expires together, `ttl` seconds
after the last touch. A store also carries the news that a class changed (`notify`) to every process that `listen`s,
so that the students' pages can open the teacher's move at once. ui/live/redis_store.py is the same store for several
processes or machines.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

VERSION = "version"  # the record's field that write() increments


class ClassStore(Protocol):
    def create(self, code: str, fields: dict[str, str], ttl: float) -> bool:
        """Make the record of `code` with `fields` and version 0, expiring in ttl s; False if it exists already."""

    def read(self, code: str) -> dict[str, str]:
        """The record of `code` ({} when there is none, or it expired)."""

    def write(self, code: str, fields: dict[str, str]) -> int:
        """Set `fields` in the record and increment its version; the new version, or 0 if there is no record."""

    def touch(self, code: str, ttl: float) -> None:
        """Every key of `code` now expires ttl seconds from now."""

    def delete(self, code: str) -> None:
        """Remove the class: its record, tables and heartbeats."""

    def put(self, code: str, table: str, name: str, value: str) -> bool:
        """Set `name` = value in the class's table (False, nothing stored, if the class does not exist)."""

    def table(self, code: str, table: str) -> dict[str, str]:
        """Every name → value of a class's table."""

    def beat(self, code: str, group: str, member: str, at: float) -> None:
        """`member` of the class is in `group` at time `at` (and no longer in any other group)."""

    def count(self, code: str, group: str, since: float) -> int:
        """How many members of `group` beat at or after `since`."""

    def hit(self, key: str, window: float, n: int = 1) -> int:
        """Add n to the counter `key` (n = 0: read it); the counter's total since its first hit, which starts a
        window of `window` seconds, after which it starts again from 0."""

    def notify(self, code: str) -> None:
        """Tell every listener, in every process of this store, that the class `code` changed."""

    def listen(self, callback: Callable[[str], None]) -> None:
        """From now on call callback(code) (on any thread) whenever a class changes; it must return quickly."""


GROUPS = ("follow", "explore")  # the heartbeat groups
TABLES = ("questions", "answers")  # the tables a class has
MAX_COUNTERS = 10_000


@dataclass
class _Class:
    record: dict[str, str]
    expires: float
    tables: dict[str, dict[str, str]] = field(default_factory=dict)
    beats: dict[str, dict[str, float]] = field(default_factory=lambda: {g: {} for g in GROUPS})


class MemoryStore:
    """Every class in this process's memory, under one lock: the teacher and the students must share the process
    (one Streamlit process, `make run-one`, or a single worker)."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self.clock = clock
        self._classes: dict[str, _Class] = {}
        self._counters: dict[str, tuple[int, float]] = {}  # key → (count, window's end)
        self._listeners: list[Callable[[str], None]] = []
        self._lock = threading.Lock()

    def _live(self, code: str) -> _Class | None:
        c = self._classes.get(code)
        if c is not None and c.expires <= self.clock():
            del self._classes[code]
            return None
        return c

    def create(self, code: str, fields: dict[str, str], ttl: float) -> bool:
        with self._lock:
            if self._live(code) is not None:
                return False
            self._classes[code] = _Class({**fields, VERSION: "0"}, self.clock() + ttl)
            return True

    def read(self, code: str) -> dict[str, str]:
        with self._lock:
            c = self._live(code)
            return dict(c.record) if c else {}

    def write(self, code: str, fields: dict[str, str]) -> int:
        with self._lock:
            c = self._live(code)
            if c is None:
                return 0
            version = int(c.record[VERSION]) + 1
            c.record.update(fields, **{VERSION: str(version)})
            return version

    def touch(self, code: str, ttl: float) -> None:
        with self._lock:
            c = self._live(code)
            if c is not None:
                c.expires = self.clock() + ttl

    def delete(self, code: str) -> None:
        with self._lock:
            self._classes.pop(code, None)

    def put(self, code: str, table: str, name: str, value: str) -> bool:
        with self._lock:
            c = self._live(code)
            assert table in TABLES, table
            if c is None:
                return False
            c.tables.setdefault(table, {})[name] = value
            return True

    def table(self, code: str, table: str) -> dict[str, str]:
        with self._lock:
            c = self._live(code)
            return dict(c.tables.get(table, {})) if c else {}

    def beat(self, code: str, group: str, member: str, at: float) -> None:
        with self._lock:
            c = self._live(code)
            if c is not None:
                for members in c.beats.values():
                    members.pop(member, None)
                c.beats[group][member] = at

    def count(self, code: str, group: str, since: float) -> int:
        with self._lock:
            c = self._live(code)
            return sum(at >= since for at in c.beats[group].values()) if c else 0

    def hit(self, key: str, window: float, n: int = 1) -> int:
        with self._lock:
            now = self.clock()
            if len(self._counters) > MAX_COUNTERS:  # forget the windows that have ended
                self._counters = {k: v for k, v in self._counters.items() if v[1] > now}
            count, end = self._counters.get(key, (0, 0.0))
            if end <= now:
                count, end = 0, now + window
            if n:
                self._counters[key] = (count + n, end)
            return count + n

    def notify(self, code: str) -> None:
        for callback in list(self._listeners):
            callback(code)

    def listen(self, callback: Callable[[str], None]) -> None:
        self._listeners.append(callback)
