"""Softmax and entropy: the one definition of each that the lessons use (the engine's forward pass uses torch's)."""

from __future__ import annotations

import numpy as np


def softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    """softmax(z)_i = exp(z_i) / Σ_j exp(z_j), float64.

    Computed as exp(z_i − max z) so that nothing overflows; −∞ gets weight exactly 0, and a row that is all −∞
    (nothing visible) gets all zeros, as the model's attention does.
    """
    z = np.asarray(z, dtype=np.float64)
    top = z.max(axis=axis, keepdims=True)
    e = np.exp(z - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def masked_softmax(scores: np.ndarray, mask: np.ndarray | None = None, temperature: float = 1.0) -> np.ndarray:
    """Row-wise α_ij = exp(e_ij/τ) / Σ_j' exp(e_ij'/τ) over the keys the mask allows (True = may attend), float32.

    Masked keys get weight exactly 0; a row with no visible key gets all zeros.
    """
    e = np.asarray(scores, dtype=np.float64) / temperature  # (…, T, T)
    if mask is not None:
        e = np.where(np.broadcast_to(mask, e.shape), e, -np.inf)
    return softmax(e).astype(np.float32)


def entropy_bits(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """H(p) = −Σ p_i log₂ p_i in bits (0·log 0 = 0): 0 for one-hot, log₂ n for uniform over n."""
    p = np.asarray(p, dtype=np.float64)
    return np.sum(p * -np.log2(np.where(p > 0, p, 1.0)), axis=axis)  # each term ≥ 0, so a one-hot row gives 0, not −0
