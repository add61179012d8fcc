"""The synthetic English → French task: lexicon coverage, French grammar, gold alignments, held-out split, parsing."""

from __future__ import annotations

from collections import Counter

import pytest

from transformer.data import lexicon as lx
from transformer.data import phrases as td

SAMPLE = td.make_pairs(3000, seed=7)

# (English, French tokens, gold alignment as (source, target) pairs)
EXAMPLES = [
    ("the european economic area", "la zone économique européenne", [(0, 0), (3, 1), (2, 2), (1, 3)]),
    ("a european central bank", "une banque centrale européenne", [(0, 0), (3, 1), (2, 2), (1, 3)]),
    ("the big red car", "la grande voiture rouge", [(0, 0), (1, 1), (3, 2), (2, 3)]),
    ("an old man", "un vieil homme", [(0, 0), (1, 1), (2, 2)]),
    ("the old woman", "la vieille femme", [(0, 0), (1, 1), (2, 2)]),
    ("the tree", "l' arbre", [(0, 0), (1, 1)]),
    ("the new hotel", "le nouvel hôtel", [(0, 0), (1, 1), (2, 2)]),
    ("this hotel", "cet hôtel", [(0, 0), (1, 1)]),
    ("this house", "cette maison", [(0, 0), (1, 1)]),
    ("my school", "mon école", [(0, 0), (1, 1)]),
    ("her dog", "son chien", [(0, 0), (1, 1)]),
    ("these two white houses", "ces deux maisons blanches", [(0, 0), (1, 1), (3, 2), (2, 3)]),
    ("one green apple", "une pomme verte", [(0, 0), (2, 1), (1, 2)]),
    ("three beautiful horses", "trois beaux chevaux", [(0, 0), (1, 1), (2, 2)]),
    ("the cats see the dog", "les chats voient le chien", [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]),
    ("the red italian car", "la voiture italienne rouge", [(0, 0), (3, 1), (2, 2), (1, 3)]),
    ("a cat under the table", "un chat sous la table", [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]),
    ("the brown shoes", "les chaussures marron", [(0, 0), (2, 1), (1, 2)]),
]


def forms_of(word: str) -> set[str]:
    """Every French token an English word can become."""
    out: set[str] = set()
    for n in td.ALL_NOUNS:
        if word in (n.en, n.en_pl):
            out |= {n.fr, n.fr_pl}
    for a in lx.ADJECTIVES:
        if word == a.en:
            out |= {a.ms, a.fs, a.mp, a.fp, a.ms_vowel}
    for d in lx.DETERMINERS.values():
        if word in (d.en, d.en_pl) or (d.en == "a" and word == lx.AN):
            out |= {d.ms, d.fs, d.vowel_m, d.vowel_f, d.fr_pl} - {None}
    if word in lx.NUMBERS:
        out |= {lx.NUMBERS[word], "une"} if word == "one" else {lx.NUMBERS[word]}
    for v, (pl, sg_fr, pl_fr) in lx.VERBS.items():
        if word in (v, pl):
            out |= {sg_fr, pl_fr}
    if word in lx.PREPOSITIONS:
        out.add(lx.PREPOSITIONS[word])
    return out


def test_lexicon_is_big_enough():
    assert len(lx.NOUNS) + len(lx.INSTITUTIONS) >= 150 and all(n.gender in "mf" for n in td.ALL_NOUNS)
    assert len(lx.ADJECTIVES) >= 60
    post = [a for a in lx.ADJECTIVES if not a.pre]
    assert len(post) >= 40 and sum(a.pre for a in lx.ADJECTIVES) >= 10
    assert sum(len({a.ms, a.fs, a.mp, a.fp}) == 4 for a in post) >= 15  # four forms: they agree in gender and number
    assert len(lx.COLOURS) >= 10 and len(lx.NUMBERS) >= 10 and len(lx.VERBS) >= 5 and len(lx.DETERMINERS) >= 5
    assert len(lx.REGIONS) >= 10 and len(lx.FIELDS) >= 10 and len(lx.INSTITUTIONS) >= 20


def test_every_english_word_has_one_class():
    """No English form is both, say, a noun and an adjective: the translation of every word is unambiguous."""
    words = Counter()
    for n in td.ALL_NOUNS:
        words.update({n.en, n.en_pl})
    words.update(a.en for a in lx.ADJECTIVES)
    words.update([*lx.NUMBERS, *lx.PREPOSITIONS, *lx.VERBS, *(pl for pl, _, _ in lx.VERBS.values())])
    words.update({"the", "a", "an", "this", "these", "my", "your", "our", "their", "his", "her"})
    assert [w for w, c in words.items() if c > 1] == []
    assert sorted(words) == td.english_words()


@pytest.mark.parametrize("en,fr,alignment", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_reference_translations(en, fr, alignment):
    pair = td.reference(en.split())
    assert pair is not None
    assert pair.target == tuple(fr.split())
    assert sorted(pair.alignment) == sorted(alignment)


def test_french_text_glues_the_elided_article():
    assert td.reference("the tree".split()).french_text == "l'arbre"
    assert td.french_text(("l'", "homme", "voit", "l'", "éléphant")) == "l'homme voit l'éléphant"


def test_english_a_or_an():
    assert td.realise(td.parse("an apple".split())).source == ("an", "apple")
    assert td.realise(td.parse("a apple".split())).source == ("an", "apple")  # the reference corrects it
    assert td.realise(td.parse("a european bank".split())).source[0] == "a"


def test_alignment_is_one_to_one_and_links_translations():
    for p in SAMPLE:
        assert len(p.source) == len(p.target) == len(p.alignment)
        assert sorted(s for s, _ in p.alignment) == list(range(len(p.source)))
        assert [t for _, t in p.alignment] == list(range(len(p.target)))
        for s, t in p.alignment:
            assert p.target[t] in forms_of(p.source[s]), (p, s, t)


def test_generator_covers_reordering_agreement_and_sentences():
    flipped = [p for p in SAMPLE if any(s != t for s, t in p.alignment)]
    assert len(flipped) > len(SAMPLE) / 3
    institutions = {n.en for n in lx.INSTITUTIONS} | {n.en_pl for n in lx.INSTITUTIONS}
    assert sum(p.source[-1] in institutions and len(p.source) >= 4 for p in SAMPLE) > 100
    assert (
        sum(any(w in lx.VERBS or w in {pl for pl, _, _ in lx.VERBS.values()} for w in p.source) for p in SAMPLE)
        > 500
    )
    targets = Counter(w for p in SAMPLE for w in p.target)
    assert all(targets[w] > 10 for w in ("l'", "cet", "mon", "une", "les", "la", "le"))
    assert max(len(p.source) for p in SAMPLE) <= 16


def test_same_seed_same_pairs():
    assert td.make_pairs(50, 3) == td.make_pairs(50, 3)
    assert td.make_pairs(50, 3) != td.make_pairs(50, 4)


def test_held_out_split():
    train, test = td.train_pairs(5000, 0), td.test_pairs(300, 0)
    assert not any(td.held_out(p) for p in train)
    assert all(td.held_out(p) for p in test) and len({p.source for p in test}) == 300
    assert not {p.source for p in train} & {p.source for p in test}
    assert 0.05 < sum(td.held_out(p) for p in SAMPLE) / len(SAMPLE) < 0.15  # one phrase in ten


def test_parse_inverts_the_generator():
    for p in SAMPLE:
        assert td.reference(list(p.source)) == p


@pytest.mark.parametrize(
    "en",
    [
        "cat the", "the cats sees the dog", "a cats", "these cat", "two cat", "one cats", "the one cat", "cats",
        "the cat the dog", "the big", "", "the cat with",
    ],
)
def test_phrases_outside_the_grammar_have_no_reference(en):
    assert td.reference(en.split()) is None


def test_vocabularies_cover_the_data():
    en, fr = set(td.english_words()), set(td.french_words())
    assert all(set(p.source) <= en and set(p.target) <= fr for p in SAMPLE)
