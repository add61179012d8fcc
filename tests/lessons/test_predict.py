"""lessons.one_head, probability, next_token and padding: masks, masked softmax, one head's steps, next-token tops, padded batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lessons.next_token import next_token_probs, top_tokens
from lessons.one_head import causal_mask, head_steps, weighted_values
from lessons.padding import pad_id, padded_forward
from lessons.probability import entropy_bits, masked_softmax
from tests.conftest import SENTENCES
from transformer import Interventions, TraceInputError, run_trace


def np_softmax(x: np.ndarray) -> np.ndarray:
    """Independent reference: a row-wise softmax in float64; −∞ entries get 0."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_top_tokens_is_softmax_over_the_full_vocabulary():
    logits = np.random.default_rng(0).normal(size=500).astype(np.float32)
    for tau in (1.0, 0.5, 3.0):
        p, ids = torch.softmax(torch.tensor(logits) / tau, dim=-1).topk(5)
        got = top_tokens(logits, 5, temperature=tau)
        assert [i for i, _ in got] == ids.tolist()
        np.testing.assert_allclose([q for _, q in got], p.numpy(), rtol=1e-6)
    # normalised over all 500 tokens, not over the 5 shown
    assert sum(q for _, q in top_tokens(logits, 5)) < 0.5
    assert len(top_tokens(logits[:3], 10)) == 3


def test_masked_softmax_matches_a_masked_reference():
    rng = np.random.default_rng(1)
    scores = rng.normal(scale=4, size=(7, 7)).astype(np.float32)
    mask = causal_mask(7)
    want = np_softmax(np.where(mask, scores, -np.inf))
    got = masked_softmax(scores, mask)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert (got[~mask] == 0).all()
    np.testing.assert_allclose(got.sum(axis=-1), 1, rtol=1e-6)
    np.testing.assert_allclose(masked_softmax(scores, mask, temperature=2.0), np_softmax(np.where(mask, scores / 2, -np.inf)), rtol=1e-6, atol=1e-7)
    # huge scores do not overflow; a row that sees nothing attends to nothing (as the model does)
    assert np.isfinite(masked_softmax(scores * 1e4, mask)).all()
    none = np.zeros((2, 3), dtype=bool)
    none[0] = True
    np.testing.assert_array_equal(masked_softmax(np.ones((2, 3)), none)[1], 0)


def test_entropy_and_causal_mask():
    np.testing.assert_allclose(entropy_bits(np.full(8, 1 / 8)), 3.0)  # log2 8
    assert entropy_bits(np.eye(4)).tolist() == [0, 0, 0, 0]
    np.testing.assert_array_equal(causal_mask(4), np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=bool))


def test_head_steps_are_the_trace_tensors(tiny_model, tokenizer):
    tr = run_trace(tiny_model, tokenizer, "the cat and the dog", Interventions(temperature=0.7))
    a = "blocks.1.attn."
    s = head_steps(tr, 1, 2)
    for got, name in ((s.q, "hook_q"), (s.k, "hook_k"), (s.v, "hook_v"), (s.z, "hook_z")):
        np.testing.assert_array_equal(got, tr[a + name][:, 2])
    for got, name in ((s.raw, "hook_scores_raw"), (s.scaled, "hook_scores_scaled"), (s.masked, "hook_scores_masked"), (s.weights, "hook_pattern")):
        np.testing.assert_array_equal(got, tr[a + name][2])
    np.testing.assert_array_equal(s.x, tr["blocks.1.ln1.hook_normalized"])
    np.testing.assert_array_equal(s.visible, causal_mask(len(tr.encoding)))
    assert s.tau == pytest.approx(0.7) and s.divisor == pytest.approx(np.sqrt(tiny_model.cfg.d_head))
    # the weighted sum of values is the head's output
    T = len(tr.encoding)
    np.testing.assert_allclose(weighted_values(s.weights[T - 1], s.v).sum(axis=0), tr[a + "hook_z"][T - 1, 2], atol=1e-6)


def test_head_steps_without_scaling_is_softmax_of_raw_scores(tiny_model, tokenizer):
    for tau in (1.0, 2.0):
        tr = run_trace(tiny_model, tokenizer, SENTENCES[0], Interventions(temperature=tau))
        s = head_steps(tr, 0, 1, scale=False)
        raw = tr["blocks.0.attn.hook_scores_raw"][1].astype(np.float64)
        mask = causal_mask(len(tr.encoding))
        want = np_softmax(np.where(mask, raw / tau, -np.inf))
        np.testing.assert_allclose(s.weights, want, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(s.z, want @ tr["blocks.0.attn.hook_v"][:, 1], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(s.scaled, raw / tau, rtol=1e-6)
        assert np.isneginf(s.masked[~mask]).all() and s.divisor == 1.0
        # and it really differs from the scaled head
        assert not np.allclose(s.weights, tr["blocks.0.attn.hook_pattern"][1], atol=1e-3)


def test_next_token_probs(tiny_model, tokenizer):
    tr = run_trace(tiny_model, tokenizer, SENTENCES[2])
    ids = tr.encoding.ids
    probs = torch.softmax(torch.tensor(tr["logits"]), dim=-1).numpy()
    np.testing.assert_allclose(next_token_probs(tr["logits"], ids), [probs[i, ids[i + 1]] for i in range(len(ids) - 1)], rtol=1e-6)


def test_next_token_probs_of_one_token_is_empty(tiny_model, tokenizer):
    tr = run_trace(tiny_model, tokenizer, "I")  # found by the fuzzer: one token has no next token (was an IndexError)
    assert len(tr.encoding) == 1 and next_token_probs(tr["logits"], tr.encoding.ids).shape == (0,)


@pytest.mark.parametrize("causal", [True, False])
def test_padded_batch_real_tokens_equal_unpadded(tiny_model, tokenizer, causal):
    texts = [SENTENCES[0], SENTENCES[1], SENTENCES[4]]  # different lengths
    iv = Interventions(causal=causal, temperature=1.3)
    batch = padded_forward(tiny_model, tokenizer, texts, iv)
    lengths = [len(e) for e in batch.encodings]
    assert len(set(lengths)) == 3 and batch.ids.shape == (3, max(lengths)) and batch["logits"].shape[:2] == (3, max(lengths))
    for b, text in enumerate(texts):
        alone = run_trace(tiny_model, tokenizer, text, iv)
        np.testing.assert_allclose(batch["logits"][b, : lengths[b]], alone["logits"], atol=1e-5)
        np.testing.assert_array_equal(batch.attention_mask[b], np.arange(max(lengths)) < lengths[b])
        assert (batch.ids[b, lengths[b] :] == pad_id(tokenizer)).all()
        # padding keys are −∞ for every query and head
        assert np.isneginf(batch["blocks.0.attn.hook_scores_masked"][b][:, :, lengths[b] :]).all()


def test_padding_mask_matters_without_the_causal_mask(tiny_model, tokenizer):
    texts = [SENTENCES[0], SENTENCES[1]]
    short = 1
    n = len(tokenizer.encode(texts[short]))
    alone = run_trace(tiny_model, tokenizer, texts[short], Interventions(causal=False))["logits"]
    leaky = padded_forward(tiny_model, tokenizer, texts, Interventions(causal=False), use_padding_mask=False)
    assert np.abs(leaky["logits"][short, :n] - alone).max() > 1e-3
    # with the causal mask, right padding is hidden anyway
    causal = padded_forward(tiny_model, tokenizer, texts, use_padding_mask=False)
    np.testing.assert_allclose(causal["logits"][short, :n], run_trace(tiny_model, tokenizer, texts[short])["logits"], atol=1e-5)


def test_padded_forward_keep_and_bad_text(tiny_model, tokenizer):
    batch = padded_forward(tiny_model, tokenizer, ["a b", "c"], keep=["logits"])
    assert set(batch.cache) == {"logits"} and not batch["logits"].flags.writeable
    with pytest.raises(TraceInputError):
        padded_forward(tiny_model, tokenizer, ["fine", "   "])
