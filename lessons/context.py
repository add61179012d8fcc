"""One word in several sentences: where it is, its vector after every block, how alike those vectors are.

The vector followed through the model is, at "layer" 0, the token embedding W_E[id] (no position, no
context: the same in every sentence for the same token), then what each block hands on: the residual stream
blocks.{l}.hook_resid_post (pre-norm) or its LN2 (BERT's post-norm blocks). Plain numpy; nothing draws.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from transformer import Encoding, ModelConfig, Trace
from transformer.errors import WordNotFound

from .block_stats import block_output
from .embedding_space import unit_rows
from .pca import pca


@dataclass(frozen=True)
class WordMatch:
    start: int  # characters start…end of the text hold the word
    end: int
    tokens: tuple[int, ...]  # positions of the tokens that cover those characters
    n_found: int  # how many times the word occurs in the text; this is the first

    @property
    def position(self) -> int:
        """The word's last token: in a decoder (causal mask) the first position that has seen the whole word; in an
        encoder every token of the word sees the whole sentence, so the last is as good as any."""
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
    """The token at `position`: W_E[id] (= hook_embed), then every block's output
    (block_stats.block_output). Shape (n_layer + 1, d)."""
    return np.stack(
        [tr["hook_embed"][position], *(block_output(tr, layer)[position] for layer in range(tr.cfg.n_layer))]
    )


def cosine_by_layer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a_l, b_l) = a_l·b_l / (‖a_l‖ ‖b_l‖) for each layer l; a, b: (n_layer + 1, d) → (n_layer + 1,)."""
    return np.sum(unit_rows(a) * unit_rows(b), axis=-1)


def pair_cosines(vectors: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Every pair (a, b) of sentences, and cos of their vectors at every layer,
    (n_pairs, n_layer + 1); vectors (n, n_layer + 1, d)."""
    pairs = list(combinations(range(len(vectors)), 2))
    return pairs, np.stack([cosine_by_layer(vectors[a], vectors[b]) for a, b in pairs])


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


def match_row(number: int, text: str, enc: Encoding, m: WordMatch | None) -> dict:
    """One table row: the sentence, the word as written, its tokens, the token followed, its
    position and id (— when absent)."""
    if m is None:
        return {
            "sentence": number,
            "text": text[:200],
            "word": "—",
            "tokens": "—",
            "followed token": "—",
            "position": None,
            "id": None,
        }
    tokens = " + ".join(enc.labels[p] for p in m.tokens)
    return {
        "sentence": number,
        "text": text[:200],
        "word": enc.text[m.start : m.end],
        "tokens": tokens,
        "followed token": enc.labels[m.position],
        "position": m.position,
        "id": enc.ids[m.position],
    }


# --- The Context page's words for one model ---


@dataclass(frozen=True)
class Reading:
    """What the Context page says about one model: how its first block's input is built, which token of a split word it
    follows and why, what the first point of the cosine lines is, and which tokens a word's token may look at."""

    latex: str  # x^(0), x^(1), x^(l+1) and cos(a, b)
    followed: str  # the caption under the word: which token of a split word is followed
    similarity: str  # section 1: what the cosine lines show
    looks: str  # section 3: what the attention bars show


def reading(cfg: ModelConfig, byte_level: bool) -> Reading:
    """The Context page's texts for this model (GPT, Llama or BERT) and its tokenizer (byte-level BPE or WordPiece)."""
    first = {
        "gpt": r"\mathrm{Block}_0\big(x^{(0)} + PE_t\big)",
        "llama": r"\mathrm{Block}_0\big(x^{(0)}\big)",
        "bert": r"\mathrm{Block}_0\big(\mathrm{LN}(x^{(0)} + PE_t + T_{A})\big)",
    }[cfg.family]
    stream = (
        rf"x^{{(0)}} = W_E[\mathrm{{id}}], \quad x^{{(1)}} = {first}, "
        r"\quad x^{(l+1)} = \mathrm{Block}_l\big(x^{(l)}\big)"
    )
    latex = (
        r"\begin{gathered}"
        + stream
        + r", \\ \cos(a, b) = \frac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}\end{gathered}"
    )  # two lines: one is wider than a 1024 px page
    why = "with the causal mask that is the first position that has read the whole word."
    if not cfg.causal:
        why = (
            "this model is an encoder (no causal mask), so every token of the word has read the whole sentence, "
            "both sides, from the first block on: the last is as good as any."
        )
    split = "*Bears* → B + ears" if byte_level else "*didn't* → didn + ' + t"
    followed = f"A word may be split into several tokens ({split}). The page follows its **last** token: {why}"
    before = {
        "gpt": ", before the position vector is added",
        "llama": " (no position vector is ever added in this model: RoPE turns queries and keys inside attention)",
        "bert": ", before the position and token-type vectors and the embedding LayerNorm",
    }[cfg.family]
    similarity = (
        "For every pair of sentences, the cosine similarity of the word's vectors: 1 = same direction, "
        f"0 = unrelated. The first point is the token's embedding row W_E[id]{before}: it has no context at all. "
        f"Every later point is what a block hands on{', after its LayerNorm' if cfg.post_norm else ''}, "
        "where position and context have been mixed in."
    )
    sides = "which tokens it gathers information from" + (
        "" if cfg.causal else ", on both sides: an encoder's tokens see the whole sentence"
    )
    looks = (
        "The attention weights of the word's token in each sentence, "
        f"from the sidebar's layer and head: {sides}. Different neighbours, different vector."
    )
    return Reading(latex, followed, similarity, looks)


def tokens_note(ids: set[int]) -> str:
    """Whether the sentences spell the word with the same token
    (then the embeddings start identical) or with different ones."""
    if len(ids) == 1:
        return (
            f"Every sentence uses the **same token** (id {next(iter(ids))}), "
            "so the embeddings are identical: cos = 1 at the start. Watch it fall as context flows in."
        )
    return (
        f"The sentences use **different tokens** here (ids {', '.join(map(str, sorted(ids)))}; "
        "see the table), so even the embeddings differ and cos < 1 from the start."
    )


DRIFT = 0.05  # |Δ cos| between the embedding and the last block below this: no clear change


def cosine_note(cos: np.ndarray, names: list[str]) -> str:
    """What the cosine lines show, from the numbers printed: the cosines (n_pairs, n_layer + 1) averaged over the pairs
    at the embedding and after the last block, whether they fell (the vectors moved apart), hardly moved (|Δ| < DRIFT)
    or rose (reversed); and, with several pairs (named by `names`), the least and the most alike after the last
    block."""
    start, end = round(float(cos[:, 0].mean()), 3), round(float(cos[:, -1].mean()), 3)
    delta = round(end - start, 3)  # of the numbers as printed
    text = f"Averaged over the pairs: cos = {start:.3f} at the embedding, {end:.3f} after the last block"
    if delta <= -DRIFT:
        text += f": the vectors **moved apart** as context flowed in (cos fell by {-delta:.3f})."
    elif delta >= DRIFT:
        text += f": **reversed**, the vectors grew more alike (cos rose by {delta:.3f}); context did not part them."
    else:
        text += (
            f": **no clear change** (|Δ cos| = {abs(delta):.3f}, below {DRIFT}): context did not set the vectors "
            "apart here."
        )
    if len(names) > 1:
        lo, hi = int(cos[:, -1].argmin()), int(cos[:, -1].argmax())
        text += (
            f" After the last block the least alike pair is {names[lo]} ({cos[lo, -1]:.3f}), "
            f"the most alike {names[hi]} ({cos[hi, -1]:.3f})."
        )
    return text


def spread_note(explained: np.ndarray, n_vectors: int) -> str:
    """How much of the spread of n_vectors vectors the two principal components drawn hold; explained (2,)."""
    return (
        f"These two directions hold {100 * explained.sum():.1f}% of the spread of the {n_vectors} vectors; "
        "points that look close may still differ in the hidden directions."
    )
