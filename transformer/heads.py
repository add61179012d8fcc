"""Many heads at once: names, averages, thumbnails, the W_O projection, head ablation, the query–key map.

Everything works on a trace's numpy arrays (or reads the model's weights); nothing draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import GPT
from .predict import softmax_weights
from .trace import Trace


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
    p = softmax_weights(before_logits).astype(np.float64)  # (V,)
    q = softmax_weights(after_logits).astype(np.float64)  # (V,)
    top_p, top_q = np.argsort(-p, kind="stable")[:k], np.argsort(-q, kind="stable")[:k]
    ids = np.concatenate([top_p, top_q[~np.isin(top_q, top_p)]])  # (≤ 2k,)
    return NextTokenChange(ids, p[ids], q[ids], float(0.5 * np.abs(p - q).sum()))


@dataclass(frozen=True)
class QKMap:
    """One head's queries and keys projected together onto their first two principal axes."""

    q2: np.ndarray  # (T, 2) the queries in the map
    k2: np.ndarray  # (T, 2) the keys in the map
    axes: np.ndarray  # (2, hs) the two directions (unit vectors); a point is (x − mean of the 2T points)·axesᵀ
    explained: np.ndarray  # (2,) share of the points' variance each axis keeps


def qk_map(q: np.ndarray, k: np.ndarray) -> QKMap:
    """PCA of the stacked [Q; K] (2T, hs): centre the points, keep the two directions of largest spread."""
    T = q.shape[0]
    m = np.concatenate([q, k]).astype(np.float64)  # (2T, hs)
    c = m - m.mean(axis=0)  # (2T, hs)
    # (M − μ)ᵀ(M − μ) = V S² Vᵀ: its eigenvectors are the principal axes, S² the spread along each.
    # (the SVD of this small hs × hs matrix is fast; that of the tall 2T × hs one can stall on busy threads)
    _, var, vt = np.linalg.svd(c.T @ c)
    axes = vt[:2]  # (2, hs)
    points = c @ axes.T  # (2T, 2)
    explained = var[:2] / var.sum() if var.sum() > 0 else np.zeros(2)
    return QKMap(points[:T], points[T:], axes, explained)


def row_ranks(x: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Ranks 0, 1, … of the kept cells of each row of x (R, n); tied values share their average rank; NaN elsewhere."""
    v = np.where(keep, x, np.inf).astype(np.float64)  # (R, n) cells not kept sort last
    order = np.argsort(v, axis=1, kind="stable")
    s = np.take_along_axis(v, order, axis=1)  # each row sorted
    new = np.ones(s.shape, dtype=bool)
    new[:, 1:] = s[:, 1:] != s[:, :-1]  # a run of equal values starts here
    group = np.cumsum(new) - 1  # (R·n,) run ids, row after row
    pos = np.broadcast_to(np.arange(s.shape[1]), s.shape).reshape(-1)  # place within the row
    mean_pos = (np.bincount(group, weights=pos) / np.bincount(group))[group]  # ties share their average place
    out = np.empty(s.shape)
    np.put_along_axis(out, order, mean_pos.reshape(s.shape), axis=1)
    return np.where(keep, out, np.nan)


def row_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson's correlation of each row of a and b (R, n) over the cells that are not NaN; NaN for a constant row."""
    a, b = a - np.nanmean(a, axis=1, keepdims=True), b - np.nanmean(b, axis=1, keepdims=True)
    # r = Σ a·b / √(Σ a² · Σ b²)
    den = np.sqrt(np.nansum(a * a, axis=1) * np.nansum(b * b, axis=1))
    return np.divide(np.nansum(a * b, axis=1), den, out=np.full(len(a), np.nan), where=den > 0)


def row_rank_correlations(measures: dict[str, np.ndarray], weights: np.ndarray, visible: np.ndarray, min_keys: int = 3) -> dict[str, float]:
    """For each (T, T) measure: ρ(measure_ij, α_ij) over the keys of each query that sees at least `min_keys` keys, averaged over those queries (NaN if none)."""
    rows = visible.sum(axis=1) >= min_keys
    if not rows.any():
        return {name: float("nan") for name in measures}
    keep = visible[rows]
    by_weight = row_ranks(weights[rows], keep)
    out = {}
    for name, m in measures.items():
        rho = row_corr(row_ranks(m[rows], keep), by_weight)  # (rows,)
        out[name] = float(np.nanmean(rho)) if np.isfinite(rho).any() else float("nan")
    return out


def distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """‖a_i − b_j‖ for every pair, (n, m), from ‖a‖² + ‖b‖² − 2 a·b."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    sq = (a * a).sum(axis=1)[:, None] + (b * b).sum(axis=1)[None, :] - 2 * a @ b.T  # (n, m)
    return np.sqrt(np.clip(sq, 0, None))


def map_measures(m: QKMap) -> dict[str, np.ndarray]:
    """Query × key measures read off the 2-D map, each (T, T): distance and dot product of the points."""
    return {"distance": distances(m.q2, m.k2), "dot": m.q2 @ m.k2.T}
