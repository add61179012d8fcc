"""The next token: the most likely ones, and how likely the model found the token that actually came next."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .probability import softmax


def top_tokens(logits_row: np.ndarray, k: int, temperature: float = 1.0) -> list[tuple[int, float]]:
    """The k most likely next tokens as (id, probability), softmax(logits / T) over the FULL vocabulary."""
    probs = softmax(np.asarray(logits_row, dtype=np.float64) / temperature)  # (V,)
    ids = np.argsort(-probs, kind="stable")[:k]
    return [(int(i), float(probs[i])) for i in ids]


def next_token_probs(logits: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    """p(token ids[i+1] | tokens ≤ i) for each position i < T−1, softmax over the full vocabulary:
    how likely the model found the actual next token."""
    p = softmax(np.asarray(logits[:-1], dtype=np.float64))  # (T−1, V)
    # (T−1,); integers even when T = 1
    return p[np.arange(len(p)), np.asarray(ids[1:], dtype=np.intp)].astype(np.float32)
