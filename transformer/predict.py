"""Small computations the attention pages show: masks, masked softmax, next-token tops, padded batches.

Everything here works on a trace's numpy arrays or runs the model itself; nothing draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from . import GPT, NO_INTERVENTIONS, Interventions
from .tokenizer import END_OF_TEXT, Encoding, Tokenizer
from .trace import Trace, encode_for_model, pad_right


def causal_mask(T: int) -> np.ndarray:
    """M[i, j] = True where query i may look at key j, i.e. j ≤ i. Shape (T, T)."""
    return np.tril(np.ones((T, T), dtype=bool))


def softmax_weights(scores: np.ndarray, mask: np.ndarray | None = None, temperature: float = 1.0) -> np.ndarray:
    """Row-wise α_ij = exp(e_ij/τ) / Σ_j' exp(e_ij'/τ) over the keys the mask allows (True = may attend).

    Masked keys get weight exactly 0; a row with no visible key gets all zeros (as the model does).
    """
    e = np.asarray(scores, dtype=np.float64) / temperature  # (…, T, T)
    visible = np.ones(e.shape, dtype=bool) if mask is None else np.broadcast_to(mask, e.shape)
    e = np.where(visible, e, -np.inf)
    top = e.max(axis=-1, keepdims=True)
    # subtract the row maximum so exp never overflows; rows with nothing visible stay at 0
    w = np.exp(e - np.where(np.isfinite(top), top, 0.0))  # (…, T, T)
    total = w.sum(axis=-1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0).astype(np.float32)


def entropy(weights: np.ndarray) -> np.ndarray:
    """H = −Σ_j α_j ln α_j per row, in nats: 0 = all weight on one token, ln n = spread evenly over n."""
    p = np.asarray(weights, dtype=np.float64)
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)


def weighted_values(weights_row: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The terms α_ij · v_j of z_i = Σ_j α_ij v_j, one row per key j. weights_row (T,), v (T, hs) → (T, hs)."""
    return (np.asarray(weights_row, dtype=np.float32)[:, None] * np.asarray(v, dtype=np.float32)).astype(np.float32)


@dataclass(frozen=True)
class HeadSteps:
    """Every step of one head's attention, for one text (T tokens, hs = d_head)."""

    x: np.ndarray  # (T, d) the attention's input: LayerNorm 1 of the residual stream
    q: np.ndarray  # (T, hs)
    k: np.ndarray  # (T, hs)
    v: np.ndarray  # (T, hs)
    raw: np.ndarray  # (T, T) Q·Kᵀ
    scaled: np.ndarray  # (T, T) raw / divisor / τ
    masked: np.ndarray  # (T, T) scaled, −∞ where the mask hides a key
    weights: np.ndarray  # (T, T) softmax rows
    z: np.ndarray  # (T, hs) weights·V
    visible: np.ndarray  # (T, T) bool, True = may attend
    divisor: float  # √d_k, or 1 when the scaling is switched off
    tau: float  # the head's attention temperature


def head_steps(tr: Trace, layer: int, head: int, scale: bool = True) -> HeadSteps:
    """One head's steps from a trace. scale=False recomputes them without ÷√d_k: softmax(mask(Q·Kᵀ / τ)) and its weights·V."""
    a = f"blocks.{layer}.attn."
    q, k, v = (tr[a + n][:, head] for n in ("hook_q", "hook_k", "hook_v"))  # (T, hs) each
    raw, masked = tr[a + "hook_scores_raw"][head], tr[a + "hook_scores_masked"][head]  # (T, T)
    visible = ~np.isneginf(masked)
    taus = tr.interventions.temperatures(layer, tr[a + "hook_q"].shape[1])
    tau = 1.0 if taus is None else float(taus[head])
    x = tr[f"blocks.{layer}.ln1.hook_normalized"]  # (T, d)
    if scale:
        scaled, weights, z = tr[a + "hook_scores_scaled"][head], tr[a + "hook_pattern"][head], tr[a + "hook_z"][:, head]
    else:
        # without the scaling: e_ij = q_i·k_j / τ, then the mask and softmax as usual
        scaled = (raw / np.float32(tau)).astype(np.float32)  # (T, T)
        masked = np.where(visible, scaled, -np.inf).astype(np.float32)  # (T, T)
        weights = softmax_weights(raw, visible, temperature=tau)  # (T, T)
        # z_i = Σ_j α_ij v_j
        z = (weights @ v).astype(np.float32)  # (T, hs)
    divisor = float(np.sqrt(q.shape[1])) if scale else 1.0
    return HeadSteps(x, q, k, v, raw, scaled, masked, weights, z, visible, divisor, tau)


def top_tokens(logits_row: np.ndarray, k: int, temperature: float = 1.0) -> list[tuple[int, float]]:
    """The k most likely next tokens as (id, probability), softmax(logits / T) over the FULL vocabulary."""
    logits = torch.tensor(np.asarray(logits_row, dtype=np.float32))  # (V,)
    probs = torch.softmax(logits / temperature, dim=-1)  # (V,)
    p, ids = probs.topk(min(k, probs.numel()))
    return [(int(i), float(q)) for i, q in zip(ids, p, strict=True)]


def next_token_probs(logits: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    """p(token ids[i+1] | tokens ≤ i) for each position i < T−1, softmax over the full vocabulary: how likely the model found the actual next token."""
    x = np.asarray(logits[:-1], dtype=np.float64)  # (T−1, V)
    top = x.max(axis=-1)
    # p = exp(x_next − max) / Σ exp(x − max)
    picked = x[np.arange(len(x)), np.asarray(ids[1:], dtype=np.intp)]  # (T−1,); integers even when T = 1
    return (np.exp(picked - top) / np.exp(x - top[:, None]).sum(axis=-1)).astype(np.float32)


@dataclass(frozen=True)
class PaddedBatch:
    """Texts padded on the right to one length and run as one batch."""

    encodings: tuple[Encoding, ...]  # each text's own tokens (cut to the context)
    ids: np.ndarray  # (B, T) token ids, padding = pad_id
    attention_mask: np.ndarray  # (B, T) bool, True = real token
    pad_id: int
    cache: dict[str, np.ndarray]  # name → read-only float32 array WITH the batch axis, e.g. logits (B, T, V)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cache[name]


def pad_id(tokenizer: Tokenizer) -> int:
    """The id used for padding: the end-of-text token when the vocabulary has one, else 0."""
    i = tokenizer.hf.token_to_id(END_OF_TEXT)
    return 0 if i is None else int(i)


def padded_forward(
    model: GPT, tokenizer: Tokenizer, texts: Sequence[str], interventions: Interventions = NO_INTERVENTIONS, use_padding_mask: bool = True, keep: Sequence[str] | None = None
) -> PaddedBatch:
    """Run several texts as one batch, right-padded to the longest; the padding mask hides the pad keys.

    keep: the recorded names to return (None = all). Raises TraceInputError for an empty or whitespace-only text.
    """
    encs, pid = tuple(encode_for_model(tokenizer, t, model.cfg.n_ctx)[0] for t in texts), pad_id(tokenizer)
    ids, real = pad_right(encs, pid)  # (B, T) each
    rec: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        attn_mask = torch.as_tensor(real) if use_padding_mask else None
        model(torch.as_tensor(ids), attention_mask=attn_mask, interventions=interventions, rec=rec)
    cache = {}
    for name, t in rec.items():
        if keep is not None and name not in keep:
            continue
        arr = t.float().numpy()
        arr.flags.writeable = False
        cache[name] = arr
    return PaddedBatch(encs, ids, real, pid, cache)
