"""A synthetic English → French phrase task, with the gold word alignment of every pair.

Phrases are noun phrases ("the big red car" → "la grande voiture rouge"), institutional phrases
whose word order flips ("the European economic area" → "la zone économique européenne"), and
short sentences ("the old man sees three black cats" → "le vieil homme voit trois chats noirs").
French agreement is done properly: gender and number on determiners and adjectives, elision
(l'arbre, cet hôtel, mon école), bel / nouvel / vieil before a vowel.

Every word of a phrase has one translation, so the gold alignment is a one-to-one map:
`Pair.alignment` holds (source word index, target word index) pairs. French words are tokens
separated by spaces, with the elided article as its own token ("l'" "arbre"); `french_text`
joins them back ("l'arbre").

Training and held-out data: `train_pairs(n, seed)` never contains the one English phrase in ten
that `held_out` sets aside (by a CRC-32 of its words); `test_pairs(n, seed)` draws only those,
with seed + 1. The same code translates a typed English phrase when it fits the grammar
(`reference`), which gives the page a reference translation and gold alignment for the user's
own phrases.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

from .lexicon import (
    ADJECTIVES,
    AN,
    ANIMATE,
    DETERMINERS,
    FIELDS,
    INSTITUTIONS,
    NOUNS,
    NUMBERS,
    PREPOSITIONS,
    REGIONS,
    VERBS,
    Adjective,
    Noun,
    starts_with_vowel_en,
    starts_with_vowel_fr,
)

ALL_NOUNS = NOUNS + INSTITUTIONS


@dataclass(frozen=True)
class NounPhrase:
    noun: Noun
    plural: bool
    det: str | None  # a key of DETERMINERS ("the", "a", "this", "my" …)
    number: str | None  # a key of NUMBERS
    adjectives: tuple[Adjective, ...]  # in English order


@dataclass(frozen=True)
class Phrase:
    """A noun phrase, optionally with a verb and object, optionally with a prepositional phrase."""

    subject: NounPhrase
    verb: str | None = None  # a key of VERBS (3rd person singular)
    obj: NounPhrase | None = None
    prep: str | None = None  # a key of PREPOSITIONS
    prep_obj: NounPhrase | None = None


@dataclass(frozen=True)
class Pair:
    source: tuple[str, ...]  # English words
    target: tuple[str, ...]  # French tokens
    alignment: tuple[tuple[int, int], ...]  # (source index, target index), sorted by target index

    @property
    def french_text(self) -> str:
        return french_text(self.target)


def french_text(tokens) -> str:
    """French tokens joined into text: "l'" sticks to the next word."""
    return " ".join(tokens).replace("' ", "'")


# --- realisation: a Phrase → English words, French tokens, alignment --------------------------------

Words = list[tuple[str, int]]  # (word, unit): the unit links a word with its translation


def _english_np(np: NounPhrase, unit: int) -> Words:
    det = DETERMINERS[np.det] if np.det else None
    words = []
    if det:
        words.append((det.en_pl if np.plural else det.en, unit))
    if np.number:
        words.append((np.number, unit + 1))
    words += [(a.en, unit + 2 + i) for i, a in enumerate(np.adjectives)]
    words.append((np.noun.en_pl if np.plural else np.noun.en, unit + 9))
    if np.det == "a" and starts_with_vowel_en(words[1][0]):
        words[0] = (AN, unit)  # an apple, an old man; a European …, a useful …
    return words


def _french_np(np: NounPhrase, unit: int) -> Words:
    """det num pre-adjectives noun post-adjectives; after the noun, the adjectives mirror the English order."""
    g, pl = np.noun.gender, np.plural
    pre = [(a, unit + 2 + i) for i, a in enumerate(np.adjectives) if a.pre]
    post = [(a, unit + 2 + i) for i, a in enumerate(np.adjectives) if not a.pre][::-1]
    words = [(np.noun.fr_pl if pl else np.noun.fr, unit + 9)] + [(a.form(g, pl), u) for a, u in post]
    # right to left: a word's form may depend on the word after it (bel arbre, l'arbre, cet hôtel)
    for a, u in reversed(pre):
        words.insert(0, (a.form(g, pl, starts_with_vowel_fr(words[0][0])), u))
    if np.number:
        words.insert(0, (("une" if g == "f" else "un") if np.number == "one" else NUMBERS[np.number], unit + 1))
    if np.det:
        words.insert(0, (DETERMINERS[np.det].form(g, pl, starts_with_vowel_fr(words[0][0])), unit))
    return words


def realise(p: Phrase) -> Pair:
    """English and French words of a phrase, and which word translates which."""
    en, fr = _english_np(p.subject, 0), _french_np(p.subject, 0)
    if p.verb:
        singular, plural, fr_sg, fr_pl = p.verb, *VERBS[p.verb]
        en.append((plural if p.subject.plural else singular, 10))
        fr.append((fr_pl if p.subject.plural else fr_sg, 10))
        en += _english_np(p.obj, 20)
        fr += _french_np(p.obj, 20)
    if p.prep:
        en.append((p.prep, 30))
        fr.append((PREPOSITIONS[p.prep], 30))
        en += _english_np(p.prep_obj, 40)
        fr += _french_np(p.prep_obj, 40)
    where = {u: i for i, (_, u) in enumerate(en)}
    alignment = tuple((where[u], j) for j, (_, u) in enumerate(fr))
    return Pair(tuple(w for w, _ in en), tuple(w for w, _ in fr), alignment)


# --- random phrases -----------------------------------------------------------------------------------


def _adjectives(rng: random.Random, k: int) -> tuple[Adjective, ...]:
    """k adjectives of different classes, at most one of them before the noun in French, in English order."""
    chosen: list[Adjective] = []
    while len(chosen) < k:
        a = rng.choice(ADJECTIVES)
        if all(a.rank != b.rank for b in chosen) and not (a.pre and any(b.pre for b in chosen)):
            chosen.append(a)
    return tuple(sorted(chosen, key=lambda a: a.rank))


_SINGULAR_DETERMINERS = list(DETERMINERS)
_PLURAL_DETERMINERS = [d for d, det in DETERMINERS.items() if det.en_pl]
_PLURAL_NUMBERS = [n for n in NUMBERS if n != "one"]
_PRE_ADJECTIVES = [a for a in ADJECTIVES if a.pre]
_VERBS, _PREPOSITIONS = list(VERBS), list(PREPOSITIONS)


def _determiner(rng: random.Random, plural: bool) -> str:
    return rng.choice(_PLURAL_DETERMINERS if plural else _SINGULAR_DETERMINERS)


def random_np(rng: random.Random, nouns=NOUNS, max_adjectives: int = 2) -> NounPhrase:
    noun = rng.choice(nouns)
    plural = rng.random() < 0.4
    k = rng.choice([0, 1, 1, 2, 2][: max_adjectives * 2 + 1])
    if not plural and rng.random() < 0.08:
        return NounPhrase(noun, False, None, "one", _adjectives(rng, k))  # one cat → un chat
    number = rng.choice(_PLURAL_NUMBERS) if plural and rng.random() < 0.5 else None
    det = None if number and rng.random() < 0.5 else _determiner(rng, plural)  # three cats / the three cats
    return NounPhrase(noun, plural, det, number, _adjectives(rng, k))


def institution_np(rng: random.Random) -> NounPhrase:
    """[det] [pre-adjective] region field institution: "the European economic area", "our new national bank"."""
    plural = rng.random() < 0.15
    adjectives = [rng.choice(FIELDS)]
    if rng.random() < 0.75:
        adjectives.insert(0, rng.choice(REGIONS))
    if rng.random() < 0.2:
        adjectives.insert(0, rng.choice(_PRE_ADJECTIVES))
    return NounPhrase(rng.choice(INSTITUTIONS), plural, _determiner(rng, plural), None, tuple(adjectives))


def random_phrase(rng: random.Random) -> Phrase:
    kind = rng.random()
    if kind < 0.35:
        return Phrase(random_np(rng))
    if kind < 0.55:
        return Phrase(institution_np(rng))
    subject = random_np(rng, ANIMATE)
    if kind < 0.65:
        return Phrase(
            random_np(rng, ALL_NOUNS), prep=rng.choice(_PREPOSITIONS), prep_obj=random_np(rng, NOUNS, max_adjectives=1)
        )
    if kind < 0.9:
        obj = random_np(rng, ALL_NOUNS) if rng.random() < 0.9 else institution_np(rng)
        return Phrase(subject, rng.choice(_VERBS), obj)
    obj = random_np(rng, ALL_NOUNS, max_adjectives=1)
    return Phrase(subject, rng.choice(_VERBS), obj, rng.choice(_PREPOSITIONS), random_np(rng, NOUNS, max_adjectives=1))


def make_pairs(n: int, seed: int) -> list[Pair]:
    """n random pairs; the same seed gives the same pairs."""
    rng = random.Random(seed)
    return [realise(random_phrase(rng)) for _ in range(n)]


def held_out(p: Pair) -> bool:
    """One English phrase in ten, chosen by a CRC-32 of its words, is held out: never trained on."""
    return zlib.crc32(" ".join(p.source).encode()) % 10 == 0


def train_pairs(n: int, seed: int = 0) -> list[Pair]:
    """n training pairs drawn with `seed`, none of them held out (the same phrase may come twice)."""
    rng = random.Random(seed)
    out: list[Pair] = []
    while len(out) < n:
        p = realise(random_phrase(rng))
        if not held_out(p):
            out.append(p)
    return out


def test_pairs(n: int, seed: int = 0) -> list[Pair]:
    """n distinct held-out pairs drawn with seed + 1: their English never occurs in train_pairs(…, seed)."""
    rng = random.Random(seed + 1)
    out: dict[tuple[str, ...], Pair] = {}
    while len(out) < n:
        p = realise(random_phrase(rng))
        if held_out(p):
            out.setdefault(p.source, p)
    return list(out.values())


# --- parsing a typed English phrase ------------------------------------------------------------------

_NOUN_FORMS = {n.en: (n, False) for n in ALL_NOUNS} | {n.en_pl: (n, True) for n in ALL_NOUNS}
_ADJECTIVES = {a.en: a for a in ADJECTIVES}
# English determiner word → (key, number it needs: True plural, False singular, None either)
_DETERMINERS = {
    "the": ("the", None),
    "a": ("a", False),
    AN: ("a", False),
    "this": ("this", False),
    "these": ("this", True),
}
_DETERMINERS |= {k: (k, None) for k in DETERMINERS if k not in _DETERMINERS}
_VERB_FORMS = {v: (v, False) for v in VERBS} | {pl: (v, True) for v, (pl, _, _) in VERBS.items()}


def english_words() -> list[str]:
    """Every English word the lexicon knows, sorted."""
    return sorted({*_NOUN_FORMS, *_ADJECTIVES, *_DETERMINERS, *NUMBERS, *_VERB_FORMS, *PREPOSITIONS})


def french_words() -> list[str]:
    """Every French token a translation can contain, sorted."""
    words = {w for d in DETERMINERS.values() for w in (d.ms, d.fs, d.vowel_m, d.vowel_f, d.fr_pl) if w}
    words |= {*NUMBERS.values(), "une", *PREPOSITIONS.values()}
    words |= {w for n in ALL_NOUNS for w in (n.fr, n.fr_pl)}
    words |= {w for a in ADJECTIVES for w in (a.ms, a.fs, a.mp, a.fp, a.ms_vowel)}
    words |= {w for _, sg, pl in VERBS.values() for w in (sg, pl)}
    return sorted(words)


def _parse_np(words: list[str], i: int) -> tuple[NounPhrase | None, int]:
    det = need = number = None
    if i < len(words) and words[i] in _DETERMINERS:
        det, need = _DETERMINERS[words[i]]
        i += 1
    if i < len(words) and words[i] in NUMBERS:
        number = words[i]
        i += 1
    adjectives = []
    while i < len(words) and words[i] in _ADJECTIVES:
        adjectives.append(_ADJECTIVES[words[i]])
        i += 1
    if i >= len(words) or words[i] not in _NOUN_FORMS:
        return None, i
    noun, plural = _NOUN_FORMS[words[i]]
    ok = (need is None or need == plural) and (number is None or (number == "one") != plural) and (det or number)
    ok = ok and not (det and number == "one")
    return (NounPhrase(noun, plural, det, number, tuple(adjectives)) if ok else None), i + 1


def parse(words: list[str]) -> Phrase | None:
    """The phrase `words` spell in this task's grammar, or None when they do not fit it."""
    subject, i = _parse_np(words, 0)
    if subject is None:
        return None
    verb = obj = prep = prep_obj = None
    if i < len(words) and words[i] in _VERB_FORMS:
        verb, plural = _VERB_FORMS[words[i]]
        obj, i = _parse_np(words, i + 1)
        if obj is None or plural != subject.plural:
            return None
    if i < len(words) and words[i] in PREPOSITIONS:
        prep = words[i]
        prep_obj, i = _parse_np(words, i + 1)
        if prep_obj is None:
            return None
    return Phrase(subject, verb, obj, prep, prep_obj) if i == len(words) else None


def reference(words: list[str]) -> Pair | None:
    """The rule-based translation and gold alignment of a typed phrase, when it fits the grammar."""
    p = parse(list(words))
    return None if p is None else realise(p)
