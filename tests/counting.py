"""What a model runs while a test watches: for the tests that a shortcut or a page's move needs no forward pass."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def block_calls(model) -> Iterator[list[tuple[int, int]]]:
    """Records (layer, tokens in its input) for every block call while inside, from any thread (a page's script too)."""
    calls = []
    hooks = [
        block.register_forward_pre_hook(lambda b, args: calls.append((b.layer, args[0].shape[1])))
        for block in model.blocks
    ]
    try:
        yield calls
    finally:
        for hook in hooks:
            hook.remove()
