"""Softmax experiments in numpy: temperature, entropy, and why attention divides by √d_k."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .probability import entropy_bits, softmax

MAX_SCORES = 64  # longest score vector the lab accepts
MAX_ABS_SCORE = 1e6  # larger scores only overflow, they teach nothing more
D_KS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)  # key sizes of the √d_k experiment


class ScoreInputError(ValueError):
    """A score vector that cannot be used; the message says why, in words for the user."""


def parse_scores(text: str) -> np.ndarray:
    """Text "2, 4, 5" → array([2., 4., 5.]); commas, semicolons or spaces separate the numbers."""
    parts = [p for p in re.split(r"[,;\s]+", str(text).strip()) if p]
    if not parts:
        raise ScoreInputError("Type a few numbers separated by commas, e.g. 2, 4, 5.")
    if len(parts) > MAX_SCORES:
        raise ScoreInputError(f"That is {len(parts):,} numbers; use at most {MAX_SCORES}.")
    values = []
    for i, p in enumerate(parts, start=1):
        try:
            v = float(p)
        except ValueError:
            raise ScoreInputError(f"Entry {i} is not a number. Type numbers separated by commas, e.g. 2, 4, 5.") from None
        if not math.isfinite(v):
            raise ScoreInputError(f"Entry {i} is not a finite number (infinite or NaN); use ordinary numbers such as 2.5 or -1.")
        if abs(v) > MAX_ABS_SCORE:
            raise ScoreInputError(f"Entry {i} is too large: keep every score between −{MAX_ABS_SCORE:,.0f} and {MAX_ABS_SCORE:,.0f}.")
        values.append(v)
    return np.array(values)


def softmax_t(scores: np.ndarray, temperature: float = 1.0, scale: float = 1.0) -> np.ndarray:
    """softmax(scale · s / τ): τ < 1 sharpens, τ > 1 flattens."""
    return softmax(scale * np.asarray(scores, dtype=np.float64) / temperature)


def temperature_sweep(scores: np.ndarray, taus: np.ndarray, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Entropy (bits) and top probability of softmax(scale · s / τ) for every τ in `taus`."""
    p = softmax(scale * np.asarray(scores, dtype=np.float64)[None, :] / np.asarray(taus, dtype=np.float64)[:, None])  # (n_tau, n)
    return entropy_bits(p), p.max(axis=-1)


def worked_softmax(z: np.ndarray) -> dict[str, np.ndarray | float]:
    """The softmax of z spelled out: shift m (0 unless e^z would overflow), e^(z − m), their sum, the weights."""
    z = np.asarray(z, dtype=np.float64)
    m = float(z.max()) if z.max() > 700 else 0.0  # e^710 overflows float64
    e = np.exp(z - m)
    return {"z": z, "shift": m, "exp": e, "sum": float(e.sum()), "weights": e / e.sum()}


@dataclass(frozen=True)
class DkExperiment:
    """Random q and k with unit-variance entries, for each key size d_k; n_queries queries against n_keys keys each."""

    d_ks: np.ndarray  # (n_d,)
    scores: np.ndarray  # (n_d, n_queries, n_keys) raw q·k
    std_raw: np.ndarray  # (n_d,) spread of q·k: grows like √d_k
    std_scaled: np.ndarray  # (n_d,) spread of q·k / √d_k: stays ≈ 1
    top_raw: np.ndarray  # (n_d,) mean largest softmax weight of a row of raw scores
    top_scaled: np.ndarray  # (n_d,) the same with ÷√d_k

    def example(self, i: int, query: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """One query's softmax over its keys at d_k = d_ks[i]: (without ÷√d_k, with)."""
        s = self.scores[i, query]  # (n_keys,)
        return softmax(s), softmax(s / math.sqrt(self.d_ks[i]))


def sqrt_dk_experiment(d_ks: tuple[int, ...] = D_KS, n_queries: int = 256, n_keys: int = 8, seed: int = 0) -> DkExperiment:
    """Dot products of random unit-variance vectors as d_k grows, with and without the division by √d_k."""
    rng = np.random.default_rng(seed)
    scores = np.empty((len(d_ks), n_queries, n_keys))
    for i, d in enumerate(d_ks):
        q = rng.standard_normal((n_queries, 1, d))  # (n_queries, 1, d_k)
        k = rng.standard_normal((n_queries, n_keys, d))  # (n_queries, n_keys, d_k)
        # e_j = q · k_j
        scores[i] = (q * k).sum(-1)  # (n_queries, n_keys)
    root = np.sqrt(np.asarray(d_ks, dtype=np.float64))[:, None, None]  # (n_d, 1, 1)
    return DkExperiment(
        d_ks=np.asarray(d_ks),
        scores=scores,
        std_raw=scores.std(axis=(1, 2)),
        std_scaled=(scores / root).std(axis=(1, 2)),
        top_raw=softmax(scores).max(-1).mean(-1),
        top_scaled=softmax(scores / root).max(-1).mean(-1),
    )
