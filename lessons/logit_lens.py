"""The logit lens: read every layer's residual stream as if it were the last one.

A decoder predicts from the final stream with logits = N_final(x)·W_U (N = LayerNorm or RMSNorm; W_U = W_Eᵀ when
tied). Applying the same final norm and unembedding to the stream after each block shows what the model would
predict if it stopped there. At the last block this is exactly the model's own output. An encoder has no W_U.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer import Decoder, Trace

from .block_stats import block_output
from .probability import softmax
from .words import percent

LENS_POSITIONS = 32  # the lens reads at most this many positions at once …
# … and at most about this many logits per stage: 16 positions of a 49,152-token vocabulary (≈ 0.5 s for SmolLM2)
LENS_LOGITS = 2**19


def stage_names(n_layer: int) -> list[str]:
    """One name per stream the lens reads: the embedding, then the output of each block."""
    return ["embedding", *(f"after block {layer}" for layer in range(n_layer))]


def window_size(vocab_size: int) -> int:
    """How many positions the lens reads at once: LENS_POSITIONS, fewer (at least 16) for a large vocabulary."""
    return int(min(LENS_POSITIONS, max(16, LENS_LOGITS // vocab_size)))


def window(pos: int, T: int, size: int = LENS_POSITIONS) -> range:
    """All positions, or the `size` positions ending at `pos` (the last ones by default)."""
    start = max(0, min(pos - size + 1, T - size))
    return range(start, min(T, start + size))


def residual_streams(tr: Trace, positions: Sequence[int]) -> np.ndarray:
    """The residual stream at the given positions: block 0's input, then each block's output. Shape (L+1, P, d)."""
    rows = list(positions)
    return np.stack(
        [tr["blocks.0.hook_resid_pre"][rows], *(block_output(tr, layer)[rows] for layer in range(tr.cfg.n_layer))]
    )  # (L+1, P, d)


@dataclass(frozen=True)
class LogitLens:
    positions: tuple[int, ...]  # the token positions read (columns)
    # (L+1, P, V) N_final(x_l)·W_U; None unless asked for (SmolLM2: 31 × 32 × 49,152 floats = 195 MB)
    logits: np.ndarray | None
    top_ids: np.ndarray  # (L+1, P) the most probable token per stage and position
    top_probs: np.ndarray  # (L+1, P) its probability, softmax over the full vocabulary


def lens_logits(model: Decoder, x: np.ndarray) -> np.ndarray:
    """N_final(x)·W_U for streams x (…, d) → (…, V)."""
    with torch.inference_mode():
        return (model.final_norm(torch.from_numpy(np.ascontiguousarray(x))) @ model.W_U).numpy()


# (stage, position) rows unembedded at once: W_U is read once per batch
# (SmolLM2's is 113 MB), and a batch's logits stay ~50 MB
ROWS_PER_BATCH = 256


def logit_lens(model: Decoder, tr: Trace, positions: Sequence[int], keep_logits: bool = True) -> LogitLens:
    """Apply the model's final norm and unembedding to every stage's stream at
    `positions`, ROWS_PER_BATCH rows at a time."""
    streams = residual_streams(tr, positions)  # (L+1, P, d)
    S, P, d = streams.shape
    rows = streams.reshape(S * P, d)  # (S·P, d) stage by stage
    top_ids, top_probs, kept = [], [], []
    for start in range(0, len(rows), ROWS_PER_BATCH):
        z = lens_logits(model, rows[start : start + ROWS_PER_BATCH])  # (n, V)
        top_ids.append(z.argmax(axis=-1))  # softmax keeps the order of the logits
        if keep_logits:
            kept.append(z.copy())
        # p(top) = e^0 / Σ_j e^(z_j − z_max), with z shifted and exponentiated in place: two (n, V) arrays fewer to
        # make (~50 MB each), which took ~2/3 of this step
        np.exp(np.subtract(z, z.max(axis=-1, keepdims=True), out=z), out=z)
        top_probs.append(1.0 / z.sum(axis=-1, dtype=np.float64))
    logits = np.concatenate(kept).reshape(S, P, -1) if keep_logits else None
    ids, probs = np.concatenate(top_ids).reshape(S, P), np.concatenate(top_probs).reshape(S, P).astype(np.float32)
    return LogitLens(tuple(int(p) for p in positions), logits, ids, probs)


def stage_logits(model: Decoder, tr: Trace, pos: int) -> np.ndarray:
    """Every stage's logits at one position, (L+1, V)."""
    return lens_logits(model, residual_streams(tr, [pos])[:, 0])


def top_table(
    stage_logits_: np.ndarray, labels: Sequence[str], n: int, probs: np.ndarray | None = None
) -> dict[str, list[str]]:
    """{stage: ["token  p", …]}: the n most probable next tokens of every stage, softmax over the full vocabulary
    (probs: that softmax, (L+1, V), when already computed), p printed by lessons.words.percent."""
    p = softmax(stage_logits_) if probs is None else probs  # (L+1, V)
    n = min(n, p.shape[-1])
    # (L+1, n) the n largest, unordered: a full sort of 49,152 × 31 costs ~0.1 s
    part = np.argpartition(-p, n - 1, axis=-1)[:, :n]
    table = {}
    for name, row, ids in zip(stage_names(len(p) - 1), p, part, strict=True):
        ids = ids[np.lexsort((ids, -row[ids]))]  # largest first; ties: lower id first (as a stable sort)
        table[name] = [f"{labels[i]}  {percent(row[i])}" for i in ids]
    return table


@dataclass(frozen=True)
class LensColumn:
    """The lens at one position: every stage's most probable next token, its probability, and the top few as text."""

    top_ids: np.ndarray  # (L+1,)
    top_probs: np.ndarray  # (L+1,) softmax over the full vocabulary
    table: dict[str, list[str]]  # stage → ["token  p", …], the n most probable


def column(model: Decoder, tr: Trace, pos: int, labels: Sequence[str], n: int) -> LensColumn:
    """The lens at position `pos` alone (a page caches columns, so moving the chosen position recomputes one or two)."""
    z = stage_logits(model, tr, pos)  # (L+1, V)
    probs = softmax(z)  # (L+1, V)
    return LensColumn(z.argmax(axis=-1), probs.max(axis=-1).astype(np.float32), top_table(z, labels, n, probs))
