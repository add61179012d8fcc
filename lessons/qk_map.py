"""The query–key map: one head's queries and keys in the same 2-D picture, and how well
distance in it tracks the weights."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer import ModelConfig

from .one_head import sharing
from .pca import pca


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
    fit = pca(np.concatenate([q, k]), 2)  # on the 2T points together
    points = fit.project(np.concatenate([q, k]))  # (2T, 2)
    return QKMap(points[:T], points[T:], fit.components, fit.explained)


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


def row_rank_correlations(
    measures: dict[str, np.ndarray], weights: np.ndarray, visible: np.ndarray, min_keys: int = 3
) -> dict[str, float]:
    """For each (T, T) measure: ρ(measure_ij, α_ij) over the keys of each query that sees at least `min_keys` keys,
    averaged over those queries (NaN if none)."""
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


def family_notes(cfg: ModelConfig, head: int) -> list[str]:
    """What is particular about this model's queries and keys, in words: RoPE, keys shared by
    several query heads, no causal mask."""
    notes = []
    if cfg.pos_encoding == "rotary":
        notes.append(
            "The queries and keys are taken **after RoPE**, the ones really dotted: each is turned by an "
            "angle that grows with its position, so the same word at two positions gives two different points."
        )
    shared = sharing(cfg, head)
    if shared:
        notes.append(
            f"The keys are **shared**: {shared}. Those heads meet the very same key vectors; their maps still "
            "differ, because each has its own queries and the picture is fitted to the queries and keys together."
        )
    if not cfg.causal:
        notes.append("This encoder has no causal mask: every query sees every key, before and after it.")
    return notes
