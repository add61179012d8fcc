"""Many heads at once: names, averages, thumbnails, the W_O projection, head ablation.

Everything works on a trace's numpy arrays (or reads the model's weights); nothing draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer import GPT, Trace

from .probability import softmax


def head_name(layer: int, head: int) -> str:
    """(layer, head) → "L.H", the name a head goes by on the pages."""
    return f"{layer}.{head}"


def parse_head(name: str) -> tuple[int, int]:
    """ "L.H" → (layer, head)."""
    layer, head = name.split(".")
    return int(layer), int(head)


def all_heads(n_layer: int, n_head: int) -> list[str]:
    """Every head of the model as "L.H", layer by layer."""
    return [head_name(layer, head) for layer in range(n_layer) for head in range(n_head)]


def visible_keys(tr: Trace, layer: int) -> np.ndarray:
    """(nh, T, T) bool: True where query i may look at key j (the score is not −∞)."""
    return ~np.isneginf(tr[f"blocks.{layer}.attn.hook_scores_masked"])


def mean_pattern(tr: Trace, layer: int | None) -> np.ndarray:
    """The attention weights averaged over the heads of `layer`, or over every layer and head when None. Shape (T, T)."""
    n_layer = sum(1 for name in tr.cache if name.endswith(".attn.hook_pattern"))
    layers = range(n_layer) if layer is None else [layer]
    stacked = np.stack([tr[f"blocks.{lay}.attn.hook_pattern"] for lay in layers])  # (n_layers, nh, T, T)
    return stacked.mean(axis=(0, 1))  # (T, T)


def first_token_share(weights: np.ndarray) -> np.ndarray:
    """Mean weight each head puts on the first token, over queries 1…T−1 (query 0 can see only itself).

    weights (nh, T, T) → (nh,); NaN when there is a single token.
    """
    if weights.shape[-1] < 2:
        return np.full(weights.shape[0], np.nan)
    return weights[:, 1:, 0].mean(axis=1)


def shown_max(weights: np.ndarray, visible: np.ndarray, hide_first: bool) -> float:
    """The largest weight a view shows (the first-token column left out when hidden): the top of its colour scale; 1 if nothing is shown."""
    shown = np.asarray(visible, dtype=bool).copy()
    if hide_first:
        shown[..., 0] = False
    top = float(np.max(weights, where=shown, initial=0.0))
    return top if top > 0 else 1.0


def pool(weights: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """Shrink (…, T, T) maps to at most size × size by averaging b × b blocks (NaN cells left out).

    Returns (pooled (…, n, n), b) with b = ⌈T / size⌉ and n = ⌈T / b⌉; b = 1 returns the maps unchanged.
    """
    T = weights.shape[-1]
    b = -(-T // size)
    if b == 1:
        return np.asarray(weights, dtype=np.float32), 1
    n = -(-T // b)
    lead = weights.shape[:-2]
    padded = np.full((*lead, n * b, n * b), np.nan)
    padded[..., :T, :T] = weights
    blocks = padded.reshape(*lead, n, b, n, b)
    count = (~np.isnan(blocks)).sum(axis=(-3, -1))  # (…, n, n) cells that hold a number
    total = np.nansum(blocks, axis=(-3, -1))  # (…, n, n)
    out = np.divide(total, count, out=np.full(count.shape, np.nan), where=count > 0)  # block mean
    return out.astype(np.float32), b


def line_pairs(weights: np.ndarray, visible: np.ndarray, threshold: float, token: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (query i, key j, weight) pairs with α_ij ≥ threshold; with `token`, only pairs where it is the query or the key."""
    keep = visible & (weights >= threshold)  # (T, T)
    if token is not None:
        touches = np.zeros_like(keep)
        touches[token, :] = touches[:, token] = True
        keep &= touches
    i, j = np.nonzero(keep)
    return i, j, weights[i, j]


def strongest_keys(weights: np.ndarray, visible: np.ndarray, top_k: int, min_weight: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every query i, its top_k keys by weight (among keys it may see, weight ≥ min_weight), as (i, j, weight)."""
    w = np.where(visible, weights, -np.inf)  # (T, T)
    order = np.argsort(-w, axis=1, kind="stable")[:, :top_k]  # (T, top_k) keys by falling weight
    i = np.repeat(np.arange(w.shape[0]), order.shape[1])
    j = order.reshape(-1)
    keep = np.isfinite(w[i, j]) & (w[i, j] >= min_weight)
    return i[keep], j[keep], weights[i[keep], j[keep]]


def out_projection(model: GPT, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """W_O of `layer` as one matrix (nh·hs, d), rows head by head, and b_O (d,)."""
    attn = model.blocks[layer].attn
    nh, hs, d = attn.W_O.shape
    return attn.W_O.detach().reshape(nh * hs, d).numpy().copy(), attn.b_O.detach().numpy().copy()


@dataclass(frozen=True)
class NextTokenChange:
    """Next-token probabilities at the last position, before and after switching heads off."""

    ids: np.ndarray  # token ids: the top k before, then any new ones in the top k after
    before: np.ndarray  # p(id) with every head on
    after: np.ndarray  # p(id) with the chosen heads off
    moved: float  # total variation ½ Σ_v |p_v − p'_v| over the full vocabulary: the share of probability that moved


def next_token_change(before_logits: np.ndarray, after_logits: np.ndarray, k: int) -> NextTokenChange:
    """Compare softmax(logits) over the full vocabulary before and after; list the top k of each."""
    p = softmax(before_logits)  # (V,)
    q = softmax(after_logits)  # (V,)
    top_p, top_q = np.argsort(-p, kind="stable")[:k], np.argsort(-q, kind="stable")[:k]
    ids = np.concatenate([top_p, top_q[~np.isin(top_q, top_p)]])  # (≤ 2k,)
    return NextTokenChange(ids, p[ids], q[ids], float(0.5 * np.abs(p - q).sum()))
