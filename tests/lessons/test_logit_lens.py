"""lessons.logit_lens: the final LayerNorm and W_U applied to every stage's residual stream."""

from __future__ import annotations

import numpy as np
import pytest

from lessons.logit_lens import (
    column,
    logit_lens,
    residual_streams,
    stage_logits,
    stage_names,
    top_table,
    window,
    window_size,
)
from lessons.words import percent
from tests.conftest import SENTENCES, small_model
from transformer import Interventions, run_trace
from transformer.loading import load_model


def np_softmax(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_lens(model, x: np.ndarray) -> np.ndarray:
    """Independent reference in numpy: LN(x) = (x − μ)/√(σ² + ε)·w + b, then ·W_U (W_Eᵀ when tied)."""
    x = np.asarray(x, dtype=np.float64)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    ln = model.ln_final
    y = (x - mu) / np.sqrt(var + ln.eps) * ln.w.double().numpy() + ln.b.double().numpy()
    W_U = model.W_E.T if model.cfg.tie_embeddings else model.W_U_untied
    return y @ W_U.double().numpy()


@pytest.mark.parametrize("text", SENTENCES)
def test_last_stage_is_the_model_output(tiny_model, tokenizer, text):
    tr = run_trace(tiny_model, tokenizer, text)
    T = len(tr.encoding)
    lz = logit_lens(tiny_model, tr, range(T))
    np.testing.assert_allclose(np_softmax(lz.logits[-1]), np_softmax(tr["logits"]), atol=1e-5)
    np.testing.assert_allclose(lz.logits[-1], tr["logits"], atol=1e-4)
    assert lz.logits.shape == (tiny_model.cfg.n_layer + 1, T, tokenizer.vocab_size)


def test_last_stage_is_the_bundled_model_output():
    lm = load_model("shakespeare-gpt")
    tr = run_trace(lm.model, lm.tokenizer, "the cat and the dog", Interventions(temperature=0.5))
    lz = logit_lens(lm.model, tr, range(len(tr.encoding)))
    np.testing.assert_allclose(np_softmax(lz.logits[-1]), np_softmax(tr["logits"]), atol=1e-5)
    np.testing.assert_allclose(lz.top_probs[-1], np_softmax(tr["logits"]).max(-1), atol=1e-5)


def test_every_stage_equals_a_numpy_reference(tiny_model, tokenizer):
    tr = run_trace(tiny_model, tokenizer, "the cat and the dog")
    T, L = len(tr.encoding), tiny_model.cfg.n_layer
    streams = residual_streams(tr, range(T))
    np.testing.assert_allclose(streams[0], tr["hook_embed"] + tr["hook_pos_embed"], rtol=1e-6, atol=1e-6)
    for layer in range(L):
        np.testing.assert_array_equal(streams[layer + 1], tr[f"blocks.{layer}.hook_resid_post"])
    lz = logit_lens(tiny_model, tr, range(T))
    want = np_lens(tiny_model, streams)  # (L+1, T, V)
    np.testing.assert_allclose(lz.logits, want, rtol=1e-4, atol=1e-4)
    p = np_softmax(want)
    np.testing.assert_array_equal(lz.top_ids, p.argmax(-1))
    np.testing.assert_allclose(lz.top_probs, p.max(-1), rtol=1e-5)
    # the stages really differ (the lens is not just the output repeated)
    assert not np.allclose(lz.logits[0], lz.logits[-1])


def test_a_subset_of_positions_and_repeated_tokens(tiny_model, tokenizer):
    tr = run_trace(tiny_model, tokenizer, "the cat and the dog and the cat")
    T = len(tr.encoding)
    full = logit_lens(tiny_model, tr, range(T))
    some = logit_lens(tiny_model, tr, [T - 1, 0, 3])
    assert some.positions == (T - 1, 0, 3)
    np.testing.assert_allclose(some.logits, full.logits[:, [T - 1, 0, 3]], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(some.top_ids, full.top_ids[:, [T - 1, 0, 3]])


def test_stage_names():
    assert stage_names(2) == ["embedding", "after block 0", "after block 1"]


def test_without_logits_the_tops_are_the_same(tiny_model, tokenizer):
    tr = run_trace(tiny_model, tokenizer, "the cat and the dog")
    full, lean = logit_lens(tiny_model, tr, range(3)), logit_lens(tiny_model, tr, range(3), keep_logits=False)
    assert lean.logits is None
    np.testing.assert_array_equal(lean.top_ids, full.top_ids)
    np.testing.assert_allclose(lean.top_probs, full.top_probs, rtol=1e-6)
    np.testing.assert_allclose(stage_logits(tiny_model, tr, 2), full.logits[:, 2], rtol=1e-5, atol=1e-6)


def test_rmsnorm_lens_of_a_llama(tokenizer):
    """The final norm of a Llama is RMSNorm: x/√(mean(x²) + ε)·w, no mean subtracted, no bias."""
    model = small_model("llama", tokenizer, 2, seed=8)
    tr = run_trace(model, tokenizer, "the cat and the dog")
    T = len(tr.encoding)
    x = residual_streams(tr, range(T)).astype(np.float64)  # (L+1, T, d)
    # no position vector: the stream starts at the token embedding
    np.testing.assert_array_equal(x[0], tr["hook_embed"])
    y = x / np.sqrt((x**2).mean(-1, keepdims=True) + model.ln_final.eps) * model.ln_final.w.double().numpy()
    want = y @ model.W_E.T.double().numpy()  # tied unembedding
    lz = logit_lens(model, tr, range(T))
    np.testing.assert_allclose(lz.logits, want, rtol=1e-4, atol=1e-4)
    # the last stage is the model's output
    np.testing.assert_allclose(lz.logits[-1], tr["logits"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(lz.top_probs, np_softmax(want).max(-1), rtol=1e-5)


def test_top_table_and_window(tiny_model, tokenizer):
    tr = run_trace(tiny_model, tokenizer, "the cat and the dog")
    z = stage_logits(tiny_model, tr, 1)  # (L+1, V)
    labels = tokenizer.vocab_labels()
    table = top_table(z, labels, 3)
    assert list(table) == stage_names(tiny_model.cfg.n_layer)
    for row, stage in zip(z, table.values(), strict=True):
        p = np_softmax(row)
        top = np.argsort(-p)[:3]
        assert stage == [f"{labels[i]}  {percent(p[i])}" for i in top]
    assert window_size(1024) == 32 and window_size(49_152) == 16 and window_size(10**6) == 16
    assert (
        window(255, 256, 16) == range(240, 256)
        and window(255, 256) == range(224, 256)
        and window(100, 256) == range(69, 101)
        and window(5, 256) == range(0, 32)
        and window(3, 10) == range(0, 10)
    )


def test_a_column_is_the_lens_at_one_position(tiny_model, tokenizer):
    tr = run_trace(tiny_model, tokenizer, "the cat and the dog")
    full = logit_lens(tiny_model, tr, range(len(tr.encoding)))
    labels = tokenizer.vocab_labels()
    for pos in (0, 3):
        col = column(tiny_model, tr, pos, labels, 4)
        np.testing.assert_array_equal(col.top_ids, full.top_ids[:, pos])
        np.testing.assert_allclose(col.top_probs, full.top_probs[:, pos], rtol=1e-5)
        assert col.table == top_table(full.logits[:, pos], labels, 4)
