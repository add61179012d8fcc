"""The lecture's worked example of self-attention, in numpy: four words with 3-dim embeddings, NumPy seed 42.

The lecture's code: np.random.seed(42), then W_Q, W_K, W_V = three calls of np.random.randint(3, size=(3, 3)),
in that order; Q, K, V = X·W_Q, X·W_K, X·W_V; weights = softmax(Q·Kᵀ / √3) row-wise; attention = weights·V.
"""

from __future__ import annotations

import math

import numpy as np

from transformer.errors import TableError

from .probability import softmax

LECTURE_WORDS = ("word_1", "word_2", "word_3", "word_4")
LECTURE_X = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=np.float64)  # (4, 3)
LECTURE_SEED = 42
MAX_ABS = 1000.0  # the largest embedding value the page's table accepts
LECTURE_CODE = """\
import numpy as np
from scipy.special import softmax

word_1, word_2 = np.array([1, 0, 0]), np.array([0, 1, 0])
word_3, word_4 = np.array([1, 1, 0]), np.array([0, 0, 1])
X = np.array([word_1, word_2, word_3, word_4])   # (4, 3)

np.random.seed(42)
W_Q = np.random.randint(3, size=(3, 3))
W_K = np.random.randint(3, size=(3, 3))
W_V = np.random.randint(3, size=(3, 3))

Q, K, V = X @ W_Q, X @ W_K, X @ W_V               # (4, 3) each
scores = Q @ K.T                                  # (4, 4)
weights = softmax(scores / K.shape[1] ** 0.5, axis=1)
attention = weights @ V                           # (4, 3)"""
STEPS = ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "scaled", "weights", "attention")  # the matrices, in order


def lecture_weights(seed: int = LECTURE_SEED, d: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """W_Q, W_K, W_V: integers 0…2 drawn in that order from NumPy's legacy generator (what np.random.seed gives)."""
    rng = np.random.RandomState(seed)  # same numbers as np.random.seed(seed), without touching global state
    return tuple(rng.randint(3, size=(d, d)).astype(np.float64) for _ in range(3))


def lecture_example(X: np.ndarray | None = None, seed: int = LECTURE_SEED) -> dict[str, np.ndarray]:
    """Every matrix of the worked example, by name (see STEPS). X: (n_words, 3), the lecture's by default."""
    X = LECTURE_X if X is None else np.asarray(X, dtype=np.float64)  # (n, d)
    W_Q, W_K, W_V = lecture_weights(seed, X.shape[1])  # (d, d) each
    # Q = X·W_Q, K = X·W_K, V = X·W_V
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # (n, d)
    # e_ij = q_i · k_j
    scores = Q @ K.T  # (n, n)
    # ÷ √d_k
    scaled = scores / math.sqrt(K.shape[1])  # (n, n)
    # α = softmax(e / √d_k), row-wise
    weights = softmax(scaled, axis=1)  # (n, n)
    # output_i = Σ_j α_ij v_j
    attention = weights @ V  # (n, d)
    return {
        "X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "Q": Q, "K": K, "V": V, "scores": scores, "scaled": scaled,
        "weights": weights, "attention": attention,
    }


def row_name(words: tuple[str, ...], r: int) -> str:
    """Row r of the example, counted from 1 as the lecture does: "row 2: word_2"."""
    return f"row {r + 1}: {words[r]}"


def read_table(values: np.ndarray, words: list, dims: list[str]) -> tuple[np.ndarray, list[str]]:
    """(X, words) from the page's edited table: values (n, d) as floats (NaN where a cell is not a number), words as
    typed. A blank word falls back to the lecture's name; a cell that is missing or
    beyond ±MAX_ABS raises TableError."""
    values = np.asarray(values, dtype=np.float64)
    bad = [
        f"row {i + 1}, {dims[j]}"
        for i, j in zip(*np.nonzero(~np.isfinite(values) | (np.abs(values) > MAX_ABS)), strict=True)
    ]
    if bad:
        raise TableError(
            f"Every cell of X needs a number between −{MAX_ABS:g} and {MAX_ABS:g}. Check: {'; '.join(bad)}."
        )
    return values, [
        w.strip() if isinstance(w, str) and w.strip() else default
        for w, default in zip(words, LECTURE_WORDS, strict=True)
    ]


def latex_vector(v: np.ndarray) -> str:
    """A vector as LaTeX: [1, 0.5, 2]."""
    return r"\left[" + r",\ ".join(f"{x:.3g}" for x in v) + r"\right]"
