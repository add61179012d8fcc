"""The geometry of the token embedding W_E: PCA maps, cosine similarity, nearest neighbours, a − b + c.

Plain numpy on rows of W_E (vocab, d). Also the binary counter that sinusoidal positions are compared to.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import numpy as np

from transformer.tokenizer import BYTE_DECODER, Tokenizer


@lru_cache(maxsize=8)
def merged_ids(tokenizer: Tokenizer) -> np.ndarray:
    """Ids of the tokens BPE built by merging (more than one byte, not special), in the order they were learned.

    BPE merges the most frequent pair first, so low ids among these are roughly the most frequent tokens
    of the training text: a proxy for frequency that needs no corpus.
    """
    hf = tokenizer.hf
    special = {t.content for t in hf.get_added_tokens_decoder().values()}
    ids = []
    for i in range(tokenizer.vocab_size):
        tok = hf.id_to_token(i) or ""
        n_bytes = len(tok) if all(c in BYTE_DECODER for c in tok) else len(tok.encode("utf-8"))
        if tok not in special and n_bytes > 1:
            ids.append(i)
    return np.array(ids, dtype=np.int64)


def frequent_ids(tokenizer: Tokenizer, n: int) -> np.ndarray:
    """The first n merged tokens (see `merged_ids`): a cheap stand-in for the n most frequent tokens."""
    return merged_ids(tokenizer)[:n]


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero)."""
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)  # (n, 1)
    return x / np.where(norm > 0, norm, 1.0)


def cosine_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """cos(a_i, b_j) = a_i·b_j / (|a_i| |b_j|), shape (len(a), len(b)); b defaults to a."""
    ua = unit_rows(a)
    ub = ua if b is None else unit_rows(b)
    return ua @ ub.T


def nearest(unit: np.ndarray, v: np.ndarray, k: int, exclude: Iterable[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """The k rows of `unit` (unit-length rows, e.g. unit_rows(W_E)) with the highest cosine to v, skipping `exclude`.

    Returns (ids, cosines), best first.
    """
    exclude = list(set(exclude))
    cos = unit @ unit_rows(v[None])[0]  # (V,)
    cos[exclude] = -np.inf
    k = min(k, len(cos) - len(exclude))
    top = np.argpartition(-cos, k - 1)[:k] if k > 0 else np.array([], dtype=np.int64)
    top = top[np.argsort(-cos[top], kind="stable")]
    return top, cos[top]


def analogy(unit: np.ndarray, a: int, b: int, c: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens nearest to ŵ_a − ŵ_b + ŵ_c (unit vectors, as word2vec does), excluding a, b and c. Returns (ids, cosines)."""
    # v = ŵ_a − ŵ_b + ŵ_c
    v = unit[a] - unit[b] + unit[c]  # (d,)
    return nearest(unit, v, k, exclude={a, b, c})


class NotOneToken(ValueError):
    """A text that is not exactly one token. `labels` holds the tokens it splits into (none when empty)."""

    def __init__(self, labels: tuple[str, ...]):
        super().__init__(f"{len(labels)} tokens, not one" if labels else "no text, not one token")
        self.labels = labels


def single_token_id(tokenizer: Tokenizer, text: str) -> int:
    """The id of `text` if it is exactly one token of the vocabulary, else NotOneToken."""
    enc = tokenizer.encode(text)
    if len(enc) != 1:
        raise NotOneToken(enc.labels)
    return enc.ids[0]


def binary_bits(n_pos: int, n_bits: int) -> np.ndarray:
    """bits[pos, b] = bit b of pos (b = 0 flips fastest), shape (n_pos, n_bits)."""
    pos = np.arange(n_pos)[:, None]  # (n_pos, 1)
    return ((pos >> np.arange(n_bits)) & 1).astype(np.float32)  # (n_pos, n_bits)
