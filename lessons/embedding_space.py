"""The geometry of the token embedding W_E: PCA maps, cosine similarity, nearest neighbours, a − b + c; and the
position vectors the embedding is added to (sinusoids, their similarity, the binary counter they are compared to).

Plain numpy on rows of W_E (vocab, d). Works for byte-level BPE (GPT-2, Llama) and WordPiece (BERT) vocabularies.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from transformer import sinusoidal_encoding
from transformer.tokenizer import BYTE_DECODER, Tokenizer

SPECIAL = re.compile(r"^\[[^\]]*\]$")  # WordPiece's [PAD], [CLS], [unused17] …


@lru_cache(maxsize=8)
def merged_ids(tokenizer: Tokenizer) -> np.ndarray:
    """Ids of the vocabulary's multi-character tokens (not special), in vocabulary order: a proxy for frequency.

    Byte-level BPE: the tokens built by merging (more than one byte), in the order they were learned; BPE merges
    the most frequent pair first, so low ids are roughly the most frequent tokens of the training text.
    WordPiece (BERT): the words and word pieces of more than one character ("##ing" counts its 3 letters), which
    BERT's vocabulary lists after the single characters roughly from most to least frequent.
    """
    hf = tokenizer.hf
    special = {t.content for t in hf.get_added_tokens_decoder().values()}
    ids = []
    for i in range(tokenizer.vocab_size):
        tok = hf.id_to_token(i) or ""
        if tok in special:
            continue
        if tokenizer.byte_level:
            size = len(tok) if all(c in BYTE_DECODER for c in tok) else len(tok.encode("utf-8"))
        else:
            size = 0 if SPECIAL.match(tok) else len(tok.removeprefix("##"))
        if size > 1:
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


@dataclass(frozen=True)
class Directions:
    """The rows of W (V, d) compared by direction, without a unit-length copy of W (SmolLM2's W_E is 113 MB)."""

    W: np.ndarray  # (V, d)
    norms: np.ndarray  # (V,) ‖W_i‖, 1 where a row is zero

    def unit(self, i: int) -> np.ndarray:
        """Row i scaled to length 1, (d,)."""
        return self.W[i] / self.norms[i]

    def cosines(self, v: np.ndarray) -> np.ndarray:
        """cos(W_i, v) for every row, (V,): (W·v̂)_i / ‖W_i‖."""
        return (self.W @ unit_rows(v[None])[0]) / self.norms


def directions(W: np.ndarray) -> Directions:
    norms = np.linalg.norm(W, axis=-1)  # (V,)
    return Directions(W, np.where(norms > 0, norms, 1.0).astype(np.float32))


def cosine_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """cos(a_i, b_j) = a_i·b_j / (|a_i| |b_j|), shape (len(a), len(b)); b defaults to a."""
    ua = unit_rows(a)
    ub = ua if b is None else unit_rows(b)
    return ua @ ub.T


def nearest(unit: np.ndarray | Directions, v: np.ndarray, k: int, exclude: Iterable[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """The k rows of `unit` (unit-length rows, e.g. unit_rows(W_E), or a Directions) with the highest cosine to v, skipping `exclude`.

    Returns (ids, cosines), best first.
    """
    exclude = list(set(exclude))
    cos = unit.cosines(v) if isinstance(unit, Directions) else unit @ unit_rows(v[None])[0]  # (V,)
    cos[exclude] = -np.inf
    k = min(k, len(cos) - len(exclude))
    top = np.argpartition(-cos, k - 1)[:k] if k > 0 else np.array([], dtype=np.int64)
    top = top[np.argsort(-cos[top], kind="stable")]
    return top, cos[top]


def analogy(unit: np.ndarray | Directions, a: int, b: int, c: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens nearest to ŵ_a − ŵ_b + ŵ_c (unit vectors, as word2vec does), excluding a, b and c. Returns (ids, cosines)."""
    row = unit.unit if isinstance(unit, Directions) else unit.__getitem__
    # v = ŵ_a − ŵ_b + ŵ_c
    v = row(a) - row(b) + row(c)  # (d,)
    return nearest(unit, v, k, exclude={a, b, c})


class NotOneToken(ValueError):
    """A text that is not exactly one token. `labels` holds the tokens it splits into (none when empty)."""

    def __init__(self, labels: tuple[str, ...]):
        super().__init__(f"{len(labels)} tokens, not one" if labels else "no text, not one token")
        self.labels = labels


def word_pieces(tokenizer: Tokenizer, text: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """(ids, labels) of `text` alone: without the [CLS] … [SEP] an encoder's tokenizer adds around a sentence."""
    enc = tokenizer.hf.encode(text, add_special_tokens=False)
    return tuple(enc.ids), tuple(tokenizer.label(t) for t in enc.tokens)


def single_token_id(tokenizer: Tokenizer, text: str) -> int:
    """The id of `text` if it is exactly one token of the vocabulary, else NotOneToken."""
    ids, labels = word_pieces(tokenizer, text)
    if len(ids) != 1:
        raise NotOneToken(labels)
    return ids[0]


ANALOGIES = (("king", "man", "woman"), ("king", "he", "she"))  # word2vec's classic, and one for small vocabularies


def analogy_words(tokenizer: Tokenizer) -> tuple[str, str, str]:
    """The first of ANALOGIES whose words are each one token of this vocabulary (inside a sentence); else the last."""
    space = " " if tokenizer.byte_level else ""
    for words in ANALOGIES:
        if all(len(word_pieces(tokenizer, space + w)[0]) == 1 for w in words):
            return words
    return ANALOGIES[-1]


# --- Position vectors ---


def binary_bits(n_pos: int, n_bits: int) -> np.ndarray:
    """bits[pos, b] = bit b of pos (b = 0 flips fastest), shape (n_pos, n_bits)."""
    pos = np.arange(n_pos)[:, None]  # (n_pos, 1)
    return ((pos >> np.arange(n_bits)) & 1).astype(np.float32)  # (n_pos, n_bits)


def counter_bits(n_pos: int) -> np.ndarray:
    """The binary counter of positions 0 … n_pos − 1 with just enough bits, (n_pos, ⌈log₂ n_pos⌉)."""
    return binary_bits(n_pos, max(1, math.ceil(math.log2(n_pos))))


def position_similarity(pe: np.ndarray) -> np.ndarray:
    """PE_i · PE_j for every pair of positions, (n_pos, n_pos)."""
    return pe @ pe.T


def wavelengths(dims: Sequence[int], d: int) -> list[float]:
    """Positions per full wave of each dimension: λ = 2π · 10000^(2i/d) for the pair i = dim // 2."""
    return [2 * math.pi * 10000 ** (2 * (dim // 2) / d) for dim in dims]


def sinusoid_difference(W_pos: np.ndarray) -> float:
    """The largest |W_pos − PE| over a position table (n_ctx, d): 0 when the table is the sinusoidal formula."""
    return float(np.abs(np.asarray(W_pos) - sinusoidal_encoding(*W_pos.shape).numpy()).max())


def mean_length(x: np.ndarray) -> float:
    """The average length ‖x_t‖ of the rows of x (T, d)."""
    return float(np.linalg.norm(np.asarray(x, dtype=np.float64), axis=-1).mean())


def read_words(tokenizer: Tokenizer, texts: dict[str, str], space: bool) -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
    """Each named text as one token id (with a leading space when `space`); and the texts that are not one token,
    with the pieces they split into (none for an empty text)."""
    ids, bad = {}, {}
    for name, text in texts.items():
        try:
            if not text.strip():
                raise NotOneToken(())
            ids[name] = single_token_id(tokenizer, " " * space + text.strip())
        except NotOneToken as err:
            bad[name] = err.labels
    return ids, bad
