"""The logit lens: read every layer's residual stream as if it were the last one.

The model predicts from the final stream with logits = LN_final(x)·W_U (W_U = W_Eᵀ when tied). Applying the
same final LayerNorm and unembedding to the stream after each block shows what the model would
predict if it stopped there. At the last block this is exactly the model's own output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer import GPT, Trace

from .probability import softmax


def stage_names(n_layer: int) -> list[str]:
    """One name per stream the lens reads: the embedding, then the output of each block."""
    return ["embedding", *(f"after block {layer}" for layer in range(n_layer))]


def residual_streams(tr: Trace, positions: Sequence[int]) -> np.ndarray:
    """The residual stream at the given positions: embed + pos (block 0's input), then each block's output. Shape (L+1, P, d)."""
    n_layer = sum(1 for name in tr.cache if name.endswith(".hook_resid_post"))
    names = ["blocks.0.hook_resid_pre", *(f"blocks.{layer}.hook_resid_post" for layer in range(n_layer))]
    return np.stack([tr[n][list(positions)] for n in names])  # (L+1, P, d)


@dataclass(frozen=True)
class LogitLens:
    positions: tuple[int, ...]  # the token positions read (columns)
    logits: np.ndarray  # (L+1, P, V) LN_final(x_l)·W_U
    top_ids: np.ndarray  # (L+1, P) the most probable token per stage and position
    top_probs: np.ndarray  # (L+1, P) its probability, softmax over the full vocabulary


def logit_lens(model: GPT, tr: Trace, positions: Sequence[int]) -> LogitLens:
    """Apply the model's final LayerNorm and unembedding to every stage's stream at `positions`."""
    x = torch.from_numpy(residual_streams(tr, positions))  # (L+1, P, d)
    with torch.inference_mode():
        # logits = LN_final(x)·W_U
        logits = (model.ln_final(x) @ model.W_U).numpy()  # (L+1, P, V)
    top_ids = logits.argmax(axis=-1)  # (L+1, P): softmax keeps the order of the logits
    top_probs = np.stack([softmax(stage).max(axis=-1) for stage in logits]).astype(np.float32)  # (L+1, P), one stage's (P, V) at a time
    return LogitLens(tuple(int(p) for p in positions), logits, top_ids, top_probs)
