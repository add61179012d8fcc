"""Minimal pairs: two sentences that differ in a word, through one model; how much each head's row for one token
changes between them.

Aligning the two sentences. Each text is cut into pieces: words (letters and digits, inner apostrophes kept, as
lessons.encoder_decoder.WORD) and single punctuation marks. A token belongs to the piece that holds its last
non-space character (tokenizer offsets); special tokens ([CLS], [SEP]) belong to none. The two lists of pieces are
lined up by a diff (difflib, ignoring upper/lower case): pieces in the unchanged runs pair up, and so do the pieces of a
changed run when both sides have as many ("big" ↔ "small"); a piece inserted or deleted pairs with nothing. The
tokens of two paired pieces pair from the end (last ↔ last: a word is followed through its last token, as on the
Context page), so a word split into more tokens on one side leaves its first tokens unpaired. Special tokens before
the text pair from the start, those after it from the end. So sentences of different lengths pair every token they
share, one to one, and the rest stand alone.

Comparing two rows. Token i's row of a head is a distribution over its sentence's tokens. On the slots of the
alignment (each pair of tokens one slot, each unpaired token a slot of its own) the two rows are distributions over the
same slots, and their total variation is TV = ½ Σ_slots |α_A − α_B| (0: the same row, 1: no weight in common).
In a decoder, token i sees tokens 0…i only: when every token up to i is the same in both sentences, every head computes
the same row from the same inputs, and no head can change, whatever follows.
"""

from __future__ import annotations

import difflib
import re
from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from transformer import Encoding, Trace

from .encoder_decoder import WORD
from .words import quote

PIECE = re.compile(WORD.pattern + r"|[^\w\s]")  # a word, or one punctuation mark
CHANGE = 0.05  # a weight that moves by less than this has not changed (the best head's verdict)


@dataclass(frozen=True)
class Piece:
    start: int  # characters start…end of the text
    end: int
    text: str


def pieces(text: str) -> list[Piece]:
    """The words and punctuation marks of a text, in order."""
    return [Piece(m.start(), m.end(), m.group()) for m in PIECE.finditer(text)]


def owners(enc: Encoding, found: list[Piece]) -> list[int | None]:
    """For each token, the number of the piece holding its last non-space character (None: a special token, or only
    whitespace)."""
    starts = [p.start for p in found]
    out = []
    for s, e in enc.offsets:
        c = e - 1
        while c >= s and enc.text[c].isspace():
            c -= 1
        k = bisect_right(starts, c) - 1
        out.append(k if c >= s and k >= 0 and found[k].start <= c < found[k].end else None)
    return out


@dataclass(frozen=True)
class Alignment:
    """Which token of sentence B stands for each token of sentence A, one to one."""

    pairs: dict[int, int]  # token of A → token of B
    first_change: int  # the first position where the two token sequences differ

    def slots(self, n_a: int, n_b: int) -> tuple[list[int | None], list[int | None]]:
        """The slots both rows are compared on: for each slot, its token of A and its token of B (None: none). Paired
        tokens first in A's order, then A's unpaired tokens, then B's."""
        paired_b = set(self.pairs.values())
        a = [*self.pairs, *(i for i in range(n_a) if i not in self.pairs)]
        b = [*self.pairs.values(), *([None] * (n_a - len(self.pairs))), *(j for j in range(n_b) if j not in paired_b)]
        return a + [None] * (len(b) - len(a)), b


def align(enc_a: Encoding, enc_b: Encoding) -> Alignment:
    """Pair the tokens of two texts through their pieces (see the module's docstring)."""
    pa, pb = pieces(enc_a.text), pieces(enc_b.text)
    oa, ob = owners(enc_a, pa), owners(enc_b, pb)
    tokens_a = [[i for i, k in enumerate(oa) if k == n] for n in range(len(pa))]
    tokens_b = [[j for j, k in enumerate(ob) if k == n] for n in range(len(pb))]
    pairs: dict[int, int] = {}
    for op, i1, i2, j1, j2 in _diff(pa, pb):
        if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
            for m, n in zip(range(i1, i2), range(j1, j2), strict=True):
                pairs.update(zip(reversed(tokens_a[m]), reversed(tokens_b[n]), strict=False))
    # tokens outside every piece ([CLS], [SEP]): those before the text pair from the start, those after from the end
    lead_a, lead_b = _leading(oa), _leading(ob)
    pairs.update(zip(lead_a, lead_b, strict=False))
    tail_a, tail_b = _leading(oa[::-1]), _leading(ob[::-1])
    pairs.update((len(oa) - 1 - i, len(ob) - 1 - j) for i, j in zip(tail_a, tail_b, strict=False))
    differ = [i for i, (x, y) in enumerate(zip(enc_a.ids, enc_b.ids, strict=False)) if x != y]
    first = differ[0] if differ else min(len(enc_a), len(enc_b))
    return Alignment(dict(sorted(pairs.items())), first)


def _diff(pa: list[Piece], pb: list[Piece]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes lining up two lists of pieces, upper/lower case ignored."""
    texts = [p.text.lower() for p in pa], [p.text.lower() for p in pb]
    return difflib.SequenceMatcher(None, *texts, autojunk=False).get_opcodes()


def _leading(owner: list[int | None]) -> list[int]:
    """The positions before the first token that belongs to a piece."""
    out = []
    for i, k in enumerate(owner):
        if k is not None:
            break
        out.append(i)
    return out


def rows(tr: Trace, position: int) -> np.ndarray:
    """Token `position`'s attention row in every head of every layer: (n_layer, n_head, T)."""
    return np.stack([tr[f"blocks.{layer}.attn.hook_pattern"][:, position] for layer in range(tr.cfg.n_layer)])


def on_slots(row: np.ndarray, tokens: list[int | None]) -> np.ndarray:
    """A row (…, T) spread over the slots: slot s holds the weight of token tokens[s], 0 where it has none."""
    out = np.zeros((*row.shape[:-1], len(tokens)), dtype=np.float64)
    for s, t in enumerate(tokens):
        if t is not None:
            out[..., s] = row[..., t]
    return out


def total_variation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TV = ½ Σ |a − b| over the last axis: how much weight must move to turn one distribution into the other."""
    return 0.5 * np.abs(a - b).sum(axis=-1)


@dataclass(frozen=True)
class Comparison:
    """Token `a` of sentence A and token `b` of sentence B (the same place) in every head: (n_layer, n_head) arrays."""

    a: int
    b: int
    target_a: int | None  # the target token in A and in B (None: no target, or not in B)
    target_b: int | None
    tv: np.ndarray  # total variation between the two rows, on the alignment's slots
    weight_a: np.ndarray | None  # the weight on the target: in A, in B (None without a target in both)
    weight_b: np.ndarray | None
    blind: bool  # a decoder, and every token up to `a` is the same in both: no head can change
    slots: tuple[list[int | None], list[int | None]]  # the alignment's slots: A's token and B's token of each

    @property
    def delta(self) -> np.ndarray | None:
        """|Δ weight| on the target, per head."""
        return None if self.weight_a is None else np.abs(self.weight_b - self.weight_a)

    def ranking(self) -> list[tuple[int, int]]:
        """Every head (layer, head), most changed first (by TV; ties by position)."""
        order = np.argsort(-self.tv, axis=None, kind="stable")
        return [tuple(int(x) for x in np.unravel_index(k, self.tv.shape)) for k in order]

    def best_head(self) -> tuple[int, int] | None:
        """The head that puts the most weight on the target in sentence A (None without a target)."""
        if self.weight_a is None:
            return None
        layer, head = np.unravel_index(int(np.argmax(self.weight_a)), self.weight_a.shape)
        return int(layer), int(head)


def compare(tr_a: Trace, tr_b: Trace, position: int, target: int | None = None) -> Comparison | None:
    """Token `position` of tr_a against its token in tr_b (the alignment's), in every head; None when it has none.
    target: a token of tr_a whose weight is compared too (its token in tr_b, when it has one)."""
    al = align(tr_a.encoding, tr_b.encoding)
    if position not in al.pairs:
        return None
    b = al.pairs[position]
    slots = al.slots(len(tr_a.encoding), len(tr_b.encoding))
    row_a, row_b = rows(tr_a, position), rows(tr_b, b)  # (n_layer, n_head, T_a), (…, T_b)
    tv = total_variation(on_slots(row_a, slots[0]), on_slots(row_b, slots[1]))
    target_b = al.pairs.get(target) if target is not None else None
    wa = row_a[..., target].astype(np.float64) if target_b is not None else None
    wb = row_b[..., target_b].astype(np.float64) if target_b is not None else None
    blind = tr_a.cfg.causal and tr_a.interventions.causal and position < al.first_change and b == position
    return Comparison(position, b, target if target_b is not None else None, target_b, tv, wa, wb, blind, slots)


def same_place(enc_from: Encoding, position: int, enc_to: Encoding) -> int | None:
    """The token of another tokenization of the same text that stands for token `position`: the last token of the
    same word (or punctuation mark) there, as a word is followed through its last token; a special token, the one
    at the same end. None when that model cut the text before it, or has no such special token."""
    found = pieces(enc_from.text)
    piece = owners(enc_from, found)[position]
    if piece is None:
        return align(enc_from, enc_to).pairs.get(position)
    mine = [j for j, k in enumerate(owners(enc_to, found)) if k == piece]
    return mine[-1] if mine else None


def changed_words(text_a: str, text_b: str) -> tuple[str, str]:
    """The first piece (or run of pieces) that differs between two texts, as written in each ("" where a side has
    none; both "" when they differ in nothing but spaces)."""
    pa, pb = pieces(text_a), pieces(text_b)
    for op, i1, i2, j1, j2 in _diff(pa, pb):
        if op != "equal":
            return " ".join(p.text for p in pa[i1:i2]), " ".join(p.text for p in pb[j1:j2])
        for m, n in zip(range(i1, i2), range(j1, j2), strict=True):
            if pa[m].text != pb[n].text:
                return pa[m].text, pb[n].text
    return "", ""


def slot_labels(slots: tuple[list[int | None], list[int | None]], labels_a, labels_b) -> list[str]:
    """A name for each slot: the token when both sentences have it, "a | b" for a paired token that differs, and a
    token only one sentence has with (1) or (2) after it."""
    out = []
    for i, j in zip(*slots, strict=True):
        if i is not None and j is not None:
            out.append(labels_a[i] if labels_a[i] == labels_b[j] else f"{labels_a[i]} | {labels_b[j]}")
        else:
            out.append(f"{labels_a[i]} (1)" if i is not None else f"{labels_b[j]} (2)")
    return out


def best_head_text(c: Comparison, token: str, target: str, expected: str | None = None) -> str:
    """The best head (the most weight on the target in sentence 1) with its control: the same head's weight in
    sentence 2, whether it moved by at least CHANGE, and, when the pair says which way the target's weight should go
    in sentence 2 (expected: "less" or "more"), whether it went that way (markdown; token and target are user text)."""
    layer, head = c.best_head()
    wa, wb = float(c.weight_a[layer, head]), float(c.weight_b[layer, head])
    d = wb - wa
    said = (
        f"The head that puts the most weight from {quote(token)} on {quote(target)} in sentence 1 is **layer {layer}, "
        f"head {head}**: {wa:.2f}. Its control, the same head in sentence 2: **{wb:.2f}** (Δ {d:+.2f}). "
    )
    should = f"the pair should give it {expected} weight in sentence 2" if expected else ""
    if abs(d) < CHANGE:
        said += (
            f"It moved by less than {CHANGE}: this head gives {quote(target)} the same weight in both sentences, so it "
            "does not tell them apart (it may just pick that word wherever it is)."
        )
        return said + (f" Yet {should}." if should else "")
    way = "less" if d < 0 else "more"
    said += f"It puts {way} weight on it in sentence 2: this head reads the word that differs"
    if not should:
        return said + "."
    if way == expected:
        return said + f", the way the pair expects ({should})."
    return said + f", but the wrong way: {should}. Its weight does not follow the meaning."


def ranking_text(c: Comparison) -> str:
    """The most changed head and how many heads changed at all (TV ≥ CHANGE)."""
    layer, head = c.ranking()[0]
    n = int((c.tv >= CHANGE).sum())
    return (
        f"Most changed: **layer {layer}, head {head}**, total variation {c.tv[layer, head]:.2f} (0: the same row, "
        f"1: no weight in common). {n} of {c.tv.size} heads changed by {CHANGE} or more."
    )


def blind_text(token: str, word_a: str, word_b: str) -> str:
    """Why a decoder cannot change: the word that differs comes after the token (markdown; the words are user text)."""
    which = f" ({quote(word_a)} / {quote(word_b)})" if word_a or word_b else ""
    return (
        f"The word that differs{which} comes after {quote(token)}: in this decoder no head can see it (the causal mask "
        "hides it), so every head gives the same row in both sentences"
    )


def word_token(enc: Encoding, word: str) -> int | None:
    """The last token of the first piece that is `word` (ignoring upper/lower case); None when there is none."""
    found = pieces(enc.text)
    owner = owners(enc, found)
    for n, p in enumerate(found):
        if p.text.lower() == word.lower() and n in owner:
            return len(owner) - 1 - owner[::-1].index(n)
    return None
