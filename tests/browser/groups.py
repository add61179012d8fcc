"""Worker groups for the browser tests: the cases of one page run on one worker (one load of the page serves them),
different pages on different workers (tests/conftest.py: pytest-xdist's --dist loadgroup)."""

from __future__ import annotations

import pytest


def by_group(cases: list, ids: list[str], groups: list[str]) -> list:
    """pytest.param of each case (a value, or a tuple of values), with its id, in the worker group named beside it."""
    return [
        pytest.param(*(case if isinstance(case, tuple) else (case,)), id=i, marks=pytest.mark.xdist_group(g))
        for case, i, g in zip(cases, ids, groups, strict=True)
    ]
