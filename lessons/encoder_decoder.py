"""What the "Encoder vs decoder" page computes: one sentence through an encoder (BERT: every token sees the whole
sentence) and a decoder (GPT, Llama: a token sees only itself and earlier tokens), compared word by word.

The two models split the text differently (WordPiece vs byte-level BPE), so a word is found in each model's tokens
through the character offsets the tokenizer gives: a token belongs to a word when their character spans overlap.
A word split into several tokens is followed through its last token (in a decoder the only one that has read the
whole word); the weight it gives a target word is the sum over the target's tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from transformer import Encoding, Trace
from transformer.errors import ModelLoadError
from transformer.loading import REAL_MODELS, model_type, resolve

from .words import md

WORD = re.compile(r"\w+(?:['’]\w+)*")  # letters and digits, with inner apostrophes: "didn't" is one word
ENCODER, DECODER = "minilm-l6", "smollm2-135m"  # the real models the page compares
FALLBACK_DECODER = "shakespeare-gpt"  # the bundled decoder, when SmolLM2 is not installed
EXAMPLE = "The animal didn't cross the street because it was too tired."
MAX_CHARS = 500  # the page compares at most this many characters (~125 tokens): two models, every layer's weights


def clip(text: str, n_chars: int = MAX_CHARS) -> tuple[str, bool]:
    """The text cut to at most n_chars characters, at a space when there is one; and whether it was cut."""
    if len(text) <= n_chars:
        return text, False
    head = text[:n_chars]
    space = head.rfind(" ")
    return (head[:space] if space > 0 else head), True


@dataclass(frozen=True)
class Word:
    start: int  # character span in the text
    end: int
    text: str


def words(text: str) -> list[Word]:
    """The words of a text, in order (punctuation is not a word)."""
    return [Word(m.start(), m.end(), m.group()) for m in WORD.finditer(text)]


def tokens_of(enc: Encoding, word: Word) -> list[int]:
    """Positions of the tokens whose characters overlap the word's; [] when the model cut the text before it."""
    return [i for i, (s, e) in enumerate(enc.offsets) if s < e and s < word.end and e > word.start]


def pair_tokens(enc: Encoding, text: str, word: int, target: int) -> tuple[list[int], list[int]]:
    """The tokens of the text's word number `word` and of its word number `target` (see tokens_of)."""
    ws = words(text)
    return tokens_of(enc, ws[word]), tokens_of(enc, ws[target])


def shared_words(text: str, encodings: list[Encoding]) -> list[tuple[int, str]]:
    """(number, text) of the words of `text` that every encoding holds (a model may cut the text before a word)."""
    return [(i, w.text) for i, w in enumerate(words(text)) if all(tokens_of(enc, w) for enc in encodings)]


def family(name: str) -> str | None:
    """The family of a model the app can open ("bert": an encoder; "gpt", "llama": decoders),
    without loading it; None if unknown."""
    try:
        path = resolve(name)
    except ModelLoadError:  # not installed, or not a model directory
        return None
    if name in REAL_MODELS or Path(path).suffix in (".gguf", ".zip"):
        return {".gguf": "llama", ".zip": "bert"}.get(Path(path).suffix)
    kind = model_type(Path(path))
    return {"bert": "bert", "llama": "llama", "gpt2": "gpt", "atlas-gpt": "gpt"}.get(kind or "")


def short_name(name: str) -> str:
    """A model's name for the page: a model directory's own folder name, not its whole path."""
    return Path(name).name if "/" in name or "\\" in name else name


def default_decoder(decoders: list[str], preferred: str | None) -> str:
    """The decoder offered first: `preferred` (the app's default model), else SmolLM2, else
    the bundled GPT, else the first."""
    return next((d for d in (preferred, DECODER, FALLBACK_DECODER) if d in decoders), decoders[0])


def row(tr: Trace, layer: int, head: int, position: int) -> np.ndarray:
    """The weights of one query token over every token, (T,)."""
    return tr[f"blocks.{layer}.attn.hook_pattern"][head, position]


def weight_grid(tr: Trace, n_layer: int, source: list[int], target: list[int]) -> np.ndarray:
    """grid[l, h] = Σ_{j ∈ target} α_ij of head h in layer l, i = the source word's last token: (n_layer, n_head)."""
    i = source[-1]
    return np.stack(
        [tr[f"blocks.{layer}.attn.hook_pattern"][:, i, target].sum(axis=-1) for layer in range(n_layer)]
    ).astype(np.float32)


def best_head(grid: np.ndarray) -> tuple[int, int, float]:
    """(layer, head, weight) of the largest cell."""
    layer, head = np.unravel_index(int(np.argmax(grid)), grid.shape)
    return int(layer), int(head), float(grid[layer, head])


def best_head_control(grid: np.ndarray, n_target: int, n_visible: int, word: str, target: str) -> str:
    """The best head's weight on the target with two controls: the median head's, and what attention spread evenly
    over the n_visible tokens the word can see would give the target's n_target tokens (n_target / n_visible). A
    best head picked out of many finds some weight by chance; one near these is no evidence (markdown)."""
    layer, head, w = best_head(grid)
    median, even = float(np.median(grid)), n_target / max(n_visible, 1)
    said = (
        f"Controls for layer {layer}, head {head} ({w:.2f}): the median of the {grid.size} heads puts **{median:.2f}** "
        f"on “{md(target)}”; spread evenly over the {n_visible} tokens “{md(word)}” can see, it would get "
        f"**{even:.2f}**. "
    )
    if w < 2 * max(even, median):
        return said + "The best head is less than twice that: no head singles the target out."
    return said + (
        "This head stands out. Whether it follows the meaning, not a position or a kind of word, a second sentence "
        "tests (Compare with a second sentence, below)."
    )


def special_positions(enc: Encoding) -> list[int]:
    """Positions of the tokens the tokenizer adds ([CLS], [SEP]): they hold no characters of the text."""
    return [i for i, (s, e) in enumerate(enc.offsets) if s == e and enc.tokens[i].startswith("[")]


@dataclass(frozen=True)
class Sinks:
    """Per layer, the share of attention on the sink tokens, averaged over heads and query rows."""

    positions: list[int]  # the sink tokens
    rows: list[int]  # the query rows averaged over
    share: np.ndarray  # (n_layer,) the model's share
    even: float  # the share if every row spread its weight evenly over the tokens it may see


def sinks(tr: Trace, n_layer: int, causal: bool) -> Sinks | None:
    """Encoder: the weight on [CLS] and [SEP], from the rows of the text's own tokens. Decoder: the weight on the first
    token, from every later row (the first row can only look at itself). None when there is no such row."""
    T = len(tr.encoding)
    if causal:
        positions, rows = [0], list(range(1, T))
    else:
        positions = special_positions(tr.encoding)
        rows = [i for i in range(T) if i not in positions]
    if not rows or not positions:
        return None
    share = np.array(
        [
            tr[f"blocks.{layer}.attn.hook_pattern"][:, rows][:, :, positions].sum(axis=-1).mean()
            for layer in range(n_layer)
        ],
        dtype=np.float32,
    )
    seen = [(i + 1) if causal else T for i in rows]  # tokens row i may look at
    even = float(
        np.mean([len([p for p in positions if not causal or p <= i]) / n for i, n in zip(rows, seen, strict=True)])
    )
    return Sinks(positions, rows, share, even)


# --- the page's texts ---


def tokens_text(word: str) -> str:
    """How a word is found in two models' different tokens, and followed."""
    return (
        "The two models cut the text into different tokens (WordPiece vs byte-level pieces). "
        f"The word “{md(word)}” is found in each through the characters every token covers; "
        "a word split into several tokens is followed through its **last** token, and the weight it gives the "
        "target is the sum over all the target's tokens. Temperature τ from the sidebar applies to both models."
    )


def row_text(row: np.ndarray, position: int, target: list[int], target_word: str, causal: bool) -> str:
    """The weight that the word's token (at `position`) puts on the target's tokens, and on the tokens after it."""
    later = float(row[position + 1 :].sum())
    return f"On “{md(target_word)}”: {row[target].sum():.3f}. On tokens after the word: {later:.3f}" + (
        " (a decoder cannot look ahead)." if causal else "."
    )


def sinks_text(models: list[tuple[str, bool]], sinks: list[Sinks]) -> str:
    """Each model's share of attention on its sink tokens; models: (name, causal) each."""
    says = {
        False: "the text's tokens put on average {:.0%} of their attention on [CLS] and [SEP]",
        True: "the later tokens put on average {:.0%} on the first token",
    }
    lines = [
        (
            f"In {md(short_name(name))} {says[causal].format(s.share.mean())} (most in layer "
            f"{int(s.share.argmax())}: {s.share.max():.0%}); spread evenly it would be {s.even:.0%}."
        )
        for (name, causal), s in zip(models, sinks, strict=True)
    ]
    return (
        "Many heads have nothing useful to look at and park their "
        "weight on a token that carries little: an **attention sink**. "
    ) + " ".join(lines)
