"""Principal component analysis: the few directions along which a set of vectors spreads the most."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PCA:
    mean: np.ndarray  # (d,)
    components: np.ndarray  # (k, d) orthonormal rows, largest variance first
    explained: np.ndarray  # (k,) fraction of the total variance along each component

    def project(self, x: np.ndarray) -> np.ndarray:
        """Coordinates of the rows of x along the components, (n, k)."""
        return ((x - self.mean) @ self.components.T).astype(np.float32)


def pca(x: np.ndarray, k: int) -> PCA:
    """Principal components of the rows of x (n, d): eigenvectors of their covariance matrix.

    Many points (n ≥ d): eigh of the d×d covariance, far faster than an SVD of the n×d data. Fewer points than
    dimensions: the SVD of the n×d data, far faster than the d×d covariance. Each component's sign is fixed so
    that its largest-magnitude entry is positive, so the map does not flip between runs.
    """
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(axis=0)  # (d,)
    xc = x - mean  # (n, d)
    n, d = xc.shape
    if k <= n < d:
        # X − mean = U S Vᵀ: the rows of Vᵀ are the covariance's eigenvectors, S² / (n − 1) its eigenvalues
        _, s, vt = np.linalg.svd(xc, full_matrices=False)  # (n,), (n, d): largest first
        var = s**2 / max(n - 1, 1)
    else:
        # C = (X − mean)ᵀ(X − mean) / (n − 1); its eigenvectors are the directions of largest variance
        cov = xc.T @ xc / max(n - 1, 1)  # (d, d)
        var, vec = np.linalg.eigh(cov)  # ascending
        var, vt = np.clip(var[::-1], 0, None), vec[:, ::-1].T  # (d,), (d, d): largest first, one component per row
    vt = vt[:k]
    sign = np.sign(vt[np.arange(len(vt)), np.abs(vt).argmax(axis=1)])  # (k,)
    explained = var[:k] / var.sum() if var.sum() > 0 else np.zeros(len(vt))
    return PCA(mean, vt * sign[:, None], explained)
