"""lessons/cross_attention.py on the bundled translator, checked by hand: the agreement with the gold alignment, the
decoding table, one head's Q, K, V and scores, the decoder's mask, the heads' names and the page's texts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lessons import cross_attention as xa
from lessons.words import percent
from transformer import decoding
from transformer.data import phrases as td
from transformer.families.seq2seq import PARTS, Seq2SeqInterventions
from transformer.loading import BUNDLED_TRANSLATOR, get_translator
from transformer.vocabulary import SourceText

PHRASE = "the european economic area"


@pytest.fixture(scope="module")
def lt():
    return get_translator(BUNDLED_TRANSLATOR)


def translate(lt, phrase: str = PHRASE, **iv) -> decoding.TranslationTrace:
    return decoding.translate(lt.model, lt.tokenizer, phrase.split(), Seq2SeqInterventions(**iv))


def test_reference_and_agreement_by_hand(lt):
    tr = translate(lt)
    ref, gold = xa.reference(tr)
    assert ref.target == tr.output and sorted(gold) == sorted(td.reference(PHRASE.split()).alignment)
    links = {t: s for s, t in gold}  # one English word per French word in this phrase
    pattern = tr["decoder.blocks.0.cross_attn.hook_pattern"]  # (nh, T, S)
    by_hand = [np.mean([pattern[h, t].argmax() == s for t, s in links.items()]) for h in range(pattern.shape[0])]
    shown, per_head = xa.agreement(tr, gold, pattern[1])
    assert per_head.shape == (lt.cfg.n_layer, lt.cfg.n_head)
    np.testing.assert_allclose(per_head[0], by_hand, rtol=1e-6)
    assert shown == pytest.approx(by_hand[1])


def test_no_gold_outside_the_grammar_or_for_another_translation(lt):
    ref, gold = xa.reference(translate(lt, "car the big"))
    assert ref is None and gold == ()
    L, H = lt.cfg.n_layer, lt.cfg.n_head
    every_head = frozenset((part, layer, h) for part in PARTS for layer in range(L) for h in range(H))
    tr = translate(lt, ablate=every_head)
    ref, gold = xa.reference(tr)
    assert ref is not None and ref.target != tr.output and gold == ()


def test_step_rows_and_percent(lt):
    tr = translate(lt)
    rows = xa.step_rows(tr)
    assert [r["step"] for r in rows] == list(range(1, len(tr.steps) + 1))
    assert [r["writes"] for r in rows] == [*tr.output, "[EOS]"] and rows[0]["reads (last word)"] == "[BOS]"
    s = tr.steps[0]
    assert rows[0]["probability"] == s.top[0][1] and rows[0]["next best"].split(" · ")[0].split(" ")[0] == s.top[1][0]
    assert percent(0.25) == "25.0%" and percent(0.001) == "0.1%" and percent(0.00042) == "4.2e-4"


def test_cross_head_scores_are_q_times_k_over_root_d_and_tau(lt):
    tr = translate(lt, temperature=2.0)
    x = xa.cross_head(tr, 1, 3)
    T, S = len(tr.written), len(tr.source)
    assert x.q.shape == (T, lt.cfg.d_head) and x.k.shape == x.v.shape == (S, lt.cfg.d_head)
    np.testing.assert_allclose(x.scores, x.q @ x.k.T / math.sqrt(lt.cfg.d_head) / 2.0, rtol=1e-4, atol=1e-5)
    weights = np.exp(x.scores - x.scores.max(-1, keepdims=True))
    np.testing.assert_allclose(
        weights / weights.sum(-1, keepdims=True), tr["decoder.blocks.1.cross_attn.hook_pattern"][3], atol=1e-5
    )


def test_weights_mean_and_future_mask(lt):
    tr = translate(lt)
    # (L, nh, S, S)
    stack = np.stack([tr[f"encoder.blocks.{layer}.attn.hook_pattern"] for layer in range(lt.cfg.n_layer)])
    np.testing.assert_allclose(xa.weights(tr, "encoder", None, None), stack.mean(axis=(0, 1)), rtol=1e-6)
    np.testing.assert_allclose(xa.weights(tr, "encoder", 1, 2), stack[1, 2], rtol=1e-6)
    T = len(tr.decoder_input)
    np.testing.assert_array_equal(xa.future(tr, 0), np.triu(np.ones((T, T), dtype=bool), k=1))
    assert not xa.future(translate(lt, causal=False), 0).any()


def test_head_names_round_trip_and_choices(lt):
    names = xa.head_names(2, 3)
    assert len(names) == 3 * 2 * 3 and names[0] == "encoder L0 H0" and names[-1] == "cross L1 H2"
    assert xa.parse_heads(["cross L1 H2", "encoder L0 H1"]) == (("cross", 1, 2), ("encoder", 0, 1))
    assert xa.parse_heads(names) == tuple((p, lay, h) for p in PARTS for lay in range(2) for h in range(3))
    assert xa.choice(xa.MEAN_LAYERS) is None and xa.choice(xa.MEAN_HEADS) is None and xa.choice(2) == 2


def test_texts(lt):
    tr = translate(lt)
    ref, gold = xa.reference(tr)
    n_params = sum(p.numel() for p in lt.model.parameters())
    assert f"{n_params:,} parameters, {lt.cfg.n_layer} encoder + {lt.cfg.n_layer} decoder blocks" in xa.intro(lt.model)
    r = xa.reading(ref, gold, None, 2, causal=True)
    assert (
        r.where == "all layers, head 2"
        and "Same as the reference" in r.reference
        and "(all layers, head 2)" in r.others
    )
    assert xa.reading(ref, gold, 1, None, causal=False).where == "layer 1, mean of the heads"
    assert (
        "does not fit the grammar of the phrases the translator learned from"
        in xa.reading(None, (), 0, 0, causal=True).reference
    )
    other = xa.reading(ref, (), 0, 0, causal=False)  # the model wrote another translation
    assert (
        other.reference.startswith(f"The reference translation is “{ref.french_text}”")
        and other.weights_note.startswith("Mask off")
    )
    assert f"French position ({len(tr.written)}), K and V one row per English word (4)" in xa.qkv_text(tr, 1, 0)
    assert xa.step_text(tr, 1).startswith("Step 1: having written **(nothing yet)**, the decoder writes **la**")
    unknown = (("teh", ("the", "tea")), ("zzz", ()))
    src = SourceText(words=("big",), unknown=unknown, suggested=("the", "big"), n_ignored=0, n_known=1)
    assert (
        xa.unknown_words(src)
        == "Not in the translator's lexicon, so left out: `teh` (did you mean `the` / `tea`?), `zzz`."
    )
