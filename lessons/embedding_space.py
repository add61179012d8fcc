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
from transformer.errors import NotOneToken
from transformer.tokenizer import BYTE_DECODER, Tokenizer

from .words import md, quote

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


def nearest(
    unit: np.ndarray | Directions, v: np.ndarray, k: int, exclude: Iterable[int] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """The k rows of `unit` (unit-length rows, e.g. unit_rows(W_E), or a Directions) with the
    highest cosine to v, skipping `exclude`.

    Returns (ids, cosines), best first.
    """
    exclude = list(set(exclude))
    cos = unit.cosines(v) if isinstance(unit, Directions) else unit @ unit_rows(v[None])[0]  # (V,)
    cos[exclude] = -np.inf
    k = min(k, len(cos) - len(exclude))
    top = np.argpartition(-cos, k - 1)[:k] if k > 0 else np.array([], dtype=np.int64)
    top = top[np.argsort(-cos[top], kind="stable")]
    return top, cos[top]


def analogy_vector(unit: np.ndarray | Directions, a: int, b: int, c: int) -> np.ndarray:
    """v = ŵ_a − ŵ_b + ŵ_c: unit vectors, as word2vec does. Shape (d,)."""
    row = unit.unit if isinstance(unit, Directions) else unit.__getitem__
    return row(a) - row(b) + row(c)  # (d,)


def analogy(
    unit: np.ndarray | Directions, a: int, b: int, c: int, k: int, exclude: Iterable[int] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """Tokens nearest to ŵ_a − ŵ_b + ŵ_c, excluding a, b, c and `exclude` (their other spellings: `variant_ids`).
    Returns (ids, cosines)."""
    return nearest(unit, analogy_vector(unit, a, b, c), k, exclude={a, b, c, *exclude})


SPACE_MARKS = "␣Ġ▁ "  # a leading space as labels show it (␣), as byte-level BPE (Ġ) and SentencePiece (▁) write it


def word_key(label: str) -> str:
    """A token's word without its leading space mark, in lower case: "␣Paris" → "paris"."""
    return label.lstrip(SPACE_MARKS).lower()


def variants(word: str) -> set[str]:
    """The lower-case spellings that count as the same word: itself, its plural in -s and -es, its singular."""
    w = word.strip().lower()
    forms = {w, w + "s", w + "es", w.removesuffix("s"), w.removesuffix("es")}
    return {f for f in forms if f.strip()}


def variant_ids(labels: Sequence[str], words: Iterable[str]) -> list[int]:
    """Every vocabulary token that spells one of `words` in any case, with or without a leading space, in the plural or
    the singular ("Paris", "␣Paris", "␣paris", "␣PARIS"): an analogy that answers one of its own words, respelt, has
    found nothing."""
    wanted = set().union(*(variants(w) for w in words))
    return [i for i, label in enumerate(labels) if word_key(label) in wanted]


def expected_rank(
    unit: np.ndarray | Directions, v: np.ndarray, expected: Iterable[int], exclude: Iterable[int]
) -> int | None:
    """The rank (1 = nearest) of the expected answer among the tokens not excluded: 1 + how many of them have a higher
    cosine to v than the best of `expected` (its spellings). None when no spelling is left to rank."""
    cos = unit.cosines(v) if isinstance(unit, Directions) else unit @ unit_rows(v[None])[0]  # (V,)
    cos[list(set(exclude))] = -np.inf
    targets = [i for i in expected if np.isfinite(cos[i])]
    if not targets:
        return None
    return 1 + int((cos > cos[targets].max()).sum())


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


# a, b, c and the expected answer: word2vec's classic, one for small vocabularies, capitals (one that fails on SmolLM2)
ANALOGIES = (
    ("king", "man", "woman", "queen"),
    ("king", "he", "she", "queen"),
    ("Berlin", "Germany", "France", "Paris"),
    ("Paris", "France", "Italy", "Rome"),
)


def analogy_words(tokenizer: Tokenizer) -> tuple[str, str, str, str]:
    """The first of the first two ANALOGIES whose words are each one token of this vocabulary (inside a sentence);
    else the second: a, b, c and the expected answer."""
    space = " " if tokenizer.byte_level else ""
    for words in ANALOGIES[:2]:
        if all(len(word_pieces(tokenizer, space + w)[0]) == 1 for w in words[:3]):
            return words
    return ANALOGIES[1]


def analogy_state(words: Sequence[str]) -> dict[str, str]:
    """The analogy boxes' session values for a, b, c and the expected answer (a preset, or a model's defaults)."""
    return {f"tokens_analogy_{name}": w for name, w in zip(("a", "b", "c", "expected"), words, strict=True)}


def analogy_verdict(words: Sequence[str], top: str, expected: str, rank: int | None, k: int) -> tuple[str, str]:
    """Whether a − b + c gave the expected answer, from the ranking shown: (kind "success", "warning" or "info",
    markdown). It works only when the expected answer is the nearest token (other spellings of a, b and c left out);
    k: how many tokens the chart lists."""
    nearest_ = f"The nearest token to {md(f'{words[0]} − {words[1]} + {words[2]}')} is **{md(top)}**"
    if not expected.strip():
        return "info", f"{nearest_}. Type an expected answer to check the analogy."
    want = quote(expected.strip(), 40)
    if rank is None:
        return "info", f"{nearest_}. No token of this vocabulary spells {want} as one token: nothing to rank."
    if rank == 1:
        return "success", f"{nearest_}, the expected {want}: the analogy **works** here (rank 1)."
    where = f"rank **{rank}**" + ("" if rank <= k else f", not in the top {k} listed")
    return "warning", f"{nearest_}; the expected {want} is {where}: the analogy **does not work** here."


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


def read_words(
    tokenizer: Tokenizer, texts: dict[str, str], space: bool
) -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
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


# --- The Tokens & embeddings page's words for one tokenizer ---


@dataclass(frozen=True)
class Reading:
    """What the Tokens & embeddings page says about one tokenizer:
    byte-level BPE (GPT-2, SmolLM2) or WordPiece (BERT)."""

    intro: str  # the page's opening paragraph: what a tokenizer and an embedding are
    chips: str  # section 1: how to read the token chips, and this tokenizer's own habits
    map: str  # section 3: what the PCA map shows, and what "frequent" means in this vocabulary
    analogy: str  # section 6: what a − b + c is, with this vocabulary's default words
    bank: str  # section 7: one vector for every sense of "bank"


def reading(tokenizer: Tokenizer, d_model: int, words: tuple[str, str, str]) -> Reading:
    """The Tokens & embeddings page's texts for this tokenizer, a model of width
    d_model, and its default analogy words."""
    bpe = tokenizer.byte_level
    how = (
        "byte-pair encoding, BPE): common words are one piece, "
        'rare words are split into several ("prejudice" may become "pre" + "judice")'
    )
    kind = (
        "A token like `<F0>` holds one byte of a character that needs several (an emoji, "
        "an Arabic letter): byte-level BPE can write *any* text, even characters it never saw."
    )
    frequent = (
        "the first tokens BPE learned beyond the single bytes: "
        "BPE merges the most common pair first, so a low id is a good sign of a frequent token"
    )
    if not bpe:
        how = (
            "WordPiece, BERT's tokenizer): common words are one piece, "
            'rare words are split into several, and a piece that continues a word starts with "##"'
        )
        kind = (
            "This WordPiece vocabulary lowercases the text and strips accents; a piece that continues a word "
            "starts with ## (no ␣: a new word is simply a new piece). It adds **[CLS]** at the start and **[SEP]** "
            "at the end of every sentence, and a character it does not know becomes **[UNK]** (🐻 → [UNK])."
        )
        frequent = (
            "the first words of the WordPiece vocabulary after its single characters: "
            "BERT's vocabulary lists them roughly from most to least frequent"
        )
    intro = (
        "A transformer never sees letters. A **tokenizer** first cuts the text into **tokens**: "
        f"pieces from a fixed vocabulary learned from the training text ({how}). "
        "Each token has a number, its **id**. Then an **embedding matrix** $W_E$ turns every id "
        "into a vector of numbers — one row of $W_E$ per vocabulary token, learned during training."
    )
    chips = (
        "Each chip is one token: its text on top (␣ marks a space, ↵ a new line) "
        f"and its id below. Hover a chip to see which characters of your text it covers. {kind}"
    )
    map_text = (
        f"Each token is a point in {d_model} dimensions. **PCA** finds the few "
        "directions along which the vectors spread the most, and we draw the points along those. "
        "The grey cloud is the vocabulary's frequent tokens; red are your sentence's. "
        "In a trained model, tokens used alike tend to land near each other (the word2vec idea). "
        f'"Frequent" here means {frequent} (a proxy; we do not recount the training text).'
    )
    defaults = (
        "*king − man + woman*"
        if words[1] == "man"
        else "*king − he + she*, because *woman* is two tokens in this small vocabulary"
    )
    analogy = (
        "In word2vec, differences between vectors can carry meaning: *king − man + woman* lands near *queen*. "
        f"Here the defaults are {defaults}. Type three words, each one token of this vocabulary; we add and "
        "subtract their (unit-length) vectors and list the nearest tokens, leaving out a, b and c themselves."
    )
    return Reading(intro, chips, map_text, analogy, _bank_words(tokenizer))


def _bank_words(tokenizer: Tokenizer) -> str:
    """Why one row of W_E cannot hold every sense of "bank", with the tokens this vocabulary spells it with."""
    bank, presets = (
        word_pieces(tokenizer, " bank" if tokenizer.byte_level else "bank")[1],
        'identical in the presets "River bank" and "Money bank"',
    )
    in_vocab = (
        f"In this vocabulary {bank[0]} is a single token, so every sense shares one row of $W_E$: its row is {presets}."
    )
    if len(bank) > 1:
        in_vocab = (
            f"This small vocabulary splits ␣bank into {' + '.join(bank)}, "
            f"but the point stands: each piece has one row, {presets}."
        )
    return (
        "The lookup gives every token **one** vector, whatever the sentence. But words have many senses: "
        "the *bank* of a river, a *bank* that lends money, *banking* a shot in basketball. "
        f"{in_vocab} A static embedding has to average the senses. Telling them apart is the job of **attention**, "
        "which mixes in the surrounding tokens; see the page *Context changes meaning*."
    )


def analogy_note(model_name: str, words: tuple[str, str, str], answer: str | None) -> str:
    """The honest note under the analogy: what a small model's embeddings can hold, or what a large one gave for the
    default words (answer: the nearest token to a − b + c; None for the small model,
    or when a word is not one token)."""
    if answer is None:
        note = (
            "this is a small model trained on about a million characters of Shakespeare. "
            "Its embedding space holds only rough relations (spelling, word class, a few frequent pairs); "
        )
        note += (
            "the famous analogies need large models trained on billions of words, "
            "and even there they work less often than the examples suggest."
        )
    else:
        note = (
            f"{model_name} learned its embeddings from billions of words, so classic analogies "
            f"often work when every word is one token ({words[0]} − {words[1]} + {words[2]} gives "
        )
        note += f"{answer} here). They still work less often than the examples suggest: try a few of your own."
    return f"An honest note: {note}"
