"""One word in several sentences: where it is, its vector after every block, how alike those vectors are.

The vector followed through the model is, at "layer" 0, the token embedding W_E[id] (no position, no
context: the same in every sentence for the same token), then the residual stream after each block,
blocks.{l}.hook_resid_post. Plain numpy; nothing draws.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from transformer import Encoding, Trace

from .block_stats import n_layers
from .embedding_space import unit_rows
from .pca import pca


class WordNotFound(ValueError):
    """The word is not in the (possibly cut) text."""


@dataclass(frozen=True)
class WordMatch:
    start: int  # characters start…end of the text hold the word
    end: int
    tokens: tuple[int, ...]  # positions of the tokens that cover those characters
    n_found: int  # how many times the word occurs in the text; this is the first

    @property
    def position(self) -> int:
        """The word's last token: with the causal mask it is the first position that has seen the whole word."""
        return self.tokens[-1]


def word_pattern(word: str, forms: bool) -> re.Pattern:
    """A case-insensitive whole-word pattern; forms=True also matches longer words that start with it (bear → bears)."""
    tail = r"\w*" if forms else ""
    return re.compile(r"(?<!\w)" + re.escape(word) + tail + r"(?!\w)", re.IGNORECASE)


def find_word(enc: Encoding, word: str, forms: bool = False) -> WordMatch:
    """The first occurrence of `word` in the encoded text and the tokens that cover it (WordNotFound if absent)."""
    word = word.strip()
    if not word:
        raise WordNotFound("no word given")
    found = list(word_pattern(word, forms).finditer(enc.text))
    if not found:
        raise WordNotFound(f"{word!r} is not in the text")
    start, end = found[0].span()
    # a token covers the word when their character ranges overlap
    tokens = tuple(p for p, (s, e) in enumerate(enc.offsets) if s < end and e > start)
    return WordMatch(start, end, tokens, len(found))


def stage_labels(n_layer: int) -> list[str]:
    """Names of the vectors `word_vectors` returns, in order."""
    return ["embedding W_E[id]", *(f"after block {layer}" for layer in range(n_layer))]


def word_vectors(tr: Trace, position: int) -> np.ndarray:
    """The token at `position`: W_E[id] (= hook_embed), then blocks.{l}.hook_resid_post for every block. Shape (n_layer + 1, d)."""
    names = ["hook_embed", *(f"blocks.{layer}.hook_resid_post" for layer in range(n_layers(tr)))]
    return np.stack([tr[name][position] for name in names])


def cosine_by_layer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a_l, b_l) = a_l·b_l / (‖a_l‖ ‖b_l‖) for each layer l; a, b: (n_layer + 1, d) → (n_layer + 1,)."""
    return np.sum(unit_rows(a) * unit_rows(b), axis=-1)


def trajectories(vectors: np.ndarray, unit: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every sentence's vectors in the first two principal components of all of them together.

    vectors: (n_sentences, n_layer + 1, d); unit=True scales each vector to length 1 first (then distance
    reflects direction, as cosine does). Returns (coordinates (n_sentences, n_layer + 1, 2), explained variance (2,)).
    """
    n, stages, d = vectors.shape
    flat = np.asarray(vectors, dtype=np.float64).reshape(n * stages, d)  # (n·stages, d)
    if unit:
        flat = unit_rows(flat).astype(np.float64)
    fit = pca(flat, 2)
    return fit.project(flat).reshape(n, stages, 2), fit.explained
