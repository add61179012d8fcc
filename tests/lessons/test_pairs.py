"""Minimal pairs (lessons/pairs.py): the tokens of two sentences paired through their words, each head's change for
one token against the patterns the traces recorded, and a decoder's rows exactly unchanged when the word that differs
comes after the token (SmolLM2), while an encoder's change (MiniLM)."""

from __future__ import annotations

import numpy as np
import pytest

from lessons import pairs
from transformer import run_trace
from transformer.loading import missing_real_models, shared_model

pytestmark = pytest.mark.skipif(bool(missing_real_models()), reason="the real models are not installed")

BIG = "The trophy doesn't fit in the suitcase because it is too big."
SMALL = "The trophy doesn't fit in the suitcase because it is too small."
CAT, BIG_CAT = "The cat sat on the mat.", "The big cat sat on the mat."


@pytest.fixture(scope="module")
def smol():
    return shared_model("smollm2-135m")


@pytest.fixture(scope="module")
def mini():
    return shared_model("minilm-l6")


def traced(lm, *texts):
    return [run_trace(lm.model, lm.tokenizer, t) for t in texts]


def pattern(tr) -> np.ndarray:
    """Every layer's recorded weights, (n_layer, n_head, T, T), float64."""
    return np.stack([tr[f"blocks.{la}.attn.hook_pattern"] for la in range(tr.cfg.n_layer)]).astype(np.float64)


def test_a_changed_word_pairs_every_token_with_its_own_place(smol, mini):
    for lm in (smol, mini):
        a, b = lm.tokenizer.encode(BIG), lm.tokenizer.encode(SMALL)
        assert len(a) == len(b)
        al = pairs.align(a, b)
        assert al.pairs == {i: i for i in range(len(a))}  # [CLS] and [SEP] too
        differ = [i for i in range(len(a)) if a.ids[i] != b.ids[i]]
        assert len(differ) == 1 and al.first_change == differ[0]
        assert a.labels[differ[0]].lstrip("␣") == "big" and b.labels[differ[0]].lstrip("␣") == "small"


def test_an_inserted_word_stands_alone_and_the_rest_pair_in_order(smol, mini):
    for lm in (smol, mini):
        a, b = lm.tokenizer.encode(CAT), lm.tokenizer.encode(BIG_CAT)
        big = [j for j, label in enumerate(b.labels) if label.lstrip("␣") == "big"]
        assert len(big) == 1 and len(b) == len(a) + 1
        # by hand: every token of A pairs with the token of B at the same place, those after "big" one further on
        expected = {i: (i if i < big[0] else i + 1) for i in range(len(a))}
        assert pairs.align(a, b).pairs == expected
        assert pairs.align(a, b).first_change == big[0]
        assert [a.labels[i] == b.labels[j] for i, j in expected.items()] == [True] * len(a)


def test_a_word_split_differently_pairs_from_its_last_token(smol):
    a, b = smol.tokenizer.encode("I love bears."), smol.tokenizer.encode("Bears won the game.")
    assert a.labels == ("I", "␣love", "␣bears", ".") and b.labels[:2] == ("B", "ears")
    # "bears" ↔ "Bears" (upper/lower case ignored): last token with last token; "." with "."
    assert pairs.align(a, b).pairs == {2: 1, 3: len(b) - 1}


def test_the_same_place_in_another_models_tokens(smol, mini):
    """A word's token in one model → the word's last token in the other (suit + case → suitcase; doesn + 't →
    doesn + ' + t)."""
    a, b = smol.tokenizer.encode(BIG), mini.tokenizer.encode(BIG)
    words = {"␣suit": "suitcase", "case": "suitcase", "␣doesn": "t", "'t": "t", "␣it": "it", ".": "."}
    for i, label in enumerate(a.labels):
        j = pairs.same_place(a, i, b)
        assert b.labels[j] == words.get(label, label.lstrip("␣").lower())  # MiniLM is uncased
    assert pairs.same_place(b, 0, a) is None and pairs.same_place(b, len(b) - 1, a) is None  # [CLS], [SEP]
    assert pairs.same_place(b, b.labels.index("suitcase"), a) == a.labels.index("case")
    assert pairs.word_token(a, "IT") == a.labels.index("␣it") and pairs.word_token(a, "absent") is None
    assert pairs.word_token(b, "doesn't") == b.labels.index("t")  # doesn + ' + t: its last token


def test_the_change_of_every_head_equals_the_recorded_patterns(mini):
    """Same length: TV = ½ Σ_j |α_A[i, j] − α_B[i, j]|, written out on the patterns; the target's weights, the
    ranking, the best head (most weight on the target in A) and its control (the same head's weight in B)."""
    ta, tb = traced(mini, BIG, SMALL)
    it, trophy = ta.encoding.labels.index("it"), ta.encoding.labels.index("trophy")
    pa, pb = pattern(ta)[:, :, it], pattern(tb)[:, :, it]  # (n_layer, n_head, T)
    c = pairs.compare(ta, tb, it, trophy)
    tv = 0.5 * np.abs(pa - pb).sum(axis=-1)
    np.testing.assert_allclose(c.tv, tv, rtol=0, atol=1e-12)
    assert not c.blind and tv.max() > 0.1  # the encoder's rows do change
    np.testing.assert_array_equal(c.weight_a, pa[..., trophy])
    np.testing.assert_array_equal(c.weight_b, pb[..., trophy])
    np.testing.assert_allclose(c.delta, np.abs(pb[..., trophy] - pa[..., trophy]))
    heads = [(la, h) for la in range(tv.shape[0]) for h in range(tv.shape[1])]
    assert c.ranking() == sorted(heads, key=lambda lh: -tv[lh])
    best = max(heads, key=lambda lh: pa[lh][trophy])
    assert c.best_head() == best
    said = pairs.best_head_text(c, "it", "trophy")
    assert f"layer {best[0]}, head {best[1]}" in said and f"**{pb[best][trophy]:.2f}**" in said


def test_an_inserted_word_counts_in_the_total_variation(smol):
    """Different lengths: the slots pair the shared tokens; "big", in B alone, counts with its whole weight. The
    decoder's row for "." sees "big", so it changes."""
    ta, tb = traced(smol, CAT, BIG_CAT)
    dot_a, dot_b = len(ta.encoding) - 1, len(tb.encoding) - 1
    pa, pb = pattern(ta)[:, :, dot_a], pattern(tb)[:, :, dot_b]
    big = tb.encoding.labels.index("␣big")
    shared = sum(np.abs(pa[..., i] - pb[..., i if i < big else i + 1]) for i in range(len(ta.encoding)))
    tv = 0.5 * (shared + pb[..., big])
    c = pairs.compare(ta, tb, dot_a)
    assert (c.a, c.b, c.blind, c.weight_a, c.best_head()) == (dot_a, dot_b, False, None, None)
    np.testing.assert_allclose(c.tv, tv, rtol=0, atol=1e-12)
    assert tv.max() > 0.05


def test_a_decoder_cannot_change_before_the_word_that_differs_and_an_encoder_can(smol, mini):
    """SmolLM2: the row of "it" is exactly the same in every head of every layer (bit for bit in the recorded
    patterns), TV exactly 0; "big" itself and the token after it do change. MiniLM: "it" changes."""
    ta, tb = traced(smol, BIG, SMALL)
    it = ta.encoding.labels.index("␣it")
    c = pairs.compare(ta, tb, it, ta.encoding.labels.index("␣trophy"))
    assert c.blind and c.b == it
    assert np.array_equal(pattern(ta)[:, :, it], pattern(tb)[:, :, it])  # recorded: identical rows
    assert np.count_nonzero(c.tv) == 0 and np.count_nonzero(c.delta) == 0
    for later in (ta.encoding.labels.index("␣big"), len(ta.encoding) - 1):
        seen = pairs.compare(ta, tb, later)
        assert not seen.blind and seen.tv.max() > 0.01
    ma, mb = traced(mini, BIG, SMALL)
    enc = pairs.compare(ma, mb, pairs.same_place(ta.encoding, it, ma.encoding))
    assert not enc.blind and enc.tv.max() > 0.1
    word_a, word_b = pairs.changed_words(BIG, SMALL)
    assert (word_a, word_b) == ("big", "small")
    assert "comes after «␣it»" in pairs.blind_text("␣it", word_a, word_b)


def test_the_verdicts_follow_the_numbers():
    """The best head's sentence says when its control did not move (|Δ| < CHANGE), and which way it moved."""

    def made(wa: float, wb: float) -> pairs.Comparison:
        w_a, w_b = np.array([[0.1, wa]]), np.array([[0.1, wb]])
        slots = ([0, 1], [0, 1])
        return pairs.Comparison(1, 1, 0, 0, np.abs(w_a - w_b), w_a, w_b, False, slots)

    same, less, more = made(0.7, 0.69), made(0.7, 0.2), made(0.3, 0.6)
    assert "less than 0.05" in pairs.best_head_text(same, "it", "trophy")
    assert "does not tell them apart" in pairs.best_head_text(same, "it", "trophy")
    assert "less weight" in pairs.best_head_text(less, "it", "trophy")
    assert "more weight" in pairs.best_head_text(more, "it", "trophy") and "(Δ +0.30)" in pairs.best_head_text(
        more, "it", "trophy"
    )
    # a pair that says which way the target's weight should go in sentence 2: the verdict checks the direction
    assert "Yet the pair should give it less weight" in pairs.best_head_text(same, "it", "trophy", "less")
    assert "the way the pair expects" in pairs.best_head_text(less, "it", "trophy", "less")
    assert "the wrong way" in pairs.best_head_text(more, "it", "trophy", "less")
    assert "the wrong way" not in pairs.best_head_text(more, "it", "trophy", "more")
    assert "0 of 2 heads changed" in pairs.ranking_text(made(0.7, 0.7))
    assert "1 of 2 heads changed" in pairs.ranking_text(less)
    assert "\\<b\\>" in pairs.best_head_text(same, "<b>", "x")  # user text escaped for markdown
