"""lessons.one_head, probability, next_token and padding: masks, masked softmax, one head's steps and what each family
calls them, next-token tops with and without the causal mask, padded batches and their check."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lessons import padding
from lessons.next_token import next_token_probs, top_tokens
from lessons.one_head import (
    WHY_CAUSAL,
    Changes,
    changes,
    changes_note,
    encoder_future_note,
    future_table,
    head_steps,
    mask_reading,
    position_words,
    reading,
    sharing,
    top_rows,
    weighted_values,
)
from lessons.padding import pad_id, padded_forward
from lessons.probability import entropy_bits, masked_softmax
from tests.conftest import SENTENCES
from transformer import Interventions, ModelConfig, TraceInputError, run_trace
from transformer.shortcuts import Tempered

LLAMA = ModelConfig(family="llama", n_head=9, n_kv_head=3, d_model=72, pos_encoding="rotary", activation="silu")
BERT = ModelConfig(family="bert", pos_encoding="learned", activation="gelu", has_lm_head=False, n_layer=6)


def lower_triangle(T: int) -> np.ndarray:
    """Independent reference: the causal mask, True where key j ≤ query i. Shape (T, T)."""
    return np.arange(T)[None, :] <= np.arange(T)[:, None]


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
    mask = lower_triangle(7)
    want = np_softmax(np.where(mask, scores, -np.inf))
    got = masked_softmax(scores, mask)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert (got[~mask] == 0).all()
    np.testing.assert_allclose(got.sum(axis=-1), 1, rtol=1e-6)
    np.testing.assert_allclose(
        masked_softmax(scores, mask, temperature=2.0),
        np_softmax(np.where(mask, scores / 2, -np.inf)),
        rtol=1e-6,
        atol=1e-7,
    )
    # huge scores do not overflow; a row that sees nothing attends to nothing (as the model does)
    assert np.isfinite(masked_softmax(scores * 1e4, mask)).all()
    none = np.zeros((2, 3), dtype=bool)
    none[0] = True
    np.testing.assert_array_equal(masked_softmax(np.ones((2, 3)), none)[1], 0)


def test_entropy():
    np.testing.assert_allclose(entropy_bits(np.full(8, 1 / 8)), 3.0)  # log2 8
    assert entropy_bits(np.eye(4)).tolist() == [0, 0, 0, 0]


def test_head_steps_are_the_trace_tensors(tiny_model, tokenizer):
    tr = run_trace(tiny_model, tokenizer, "the cat and the dog", Interventions(temperature=0.7))
    a = "blocks.1.attn."
    s = head_steps(tr, 1, 2)
    for got, name in ((s.q, "hook_q"), (s.k, "hook_k"), (s.v, "hook_v"), (s.z, "hook_z")):
        np.testing.assert_array_equal(got, tr[a + name][:, 2])
    for got, name in (
        (s.raw, "hook_scores_raw"),
        (s.scaled, "hook_scores_scaled"),
        (s.masked, "hook_scores_masked"),
        (s.weights, "hook_pattern"),
    ):
        np.testing.assert_array_equal(got, tr[a + name][2])
    np.testing.assert_array_equal(s.x, tr["blocks.1.ln1.hook_normalized"])
    np.testing.assert_array_equal(s.visible, lower_triangle(len(tr.encoding)))
    assert s.tau == pytest.approx(0.7) and s.divisor == pytest.approx(np.sqrt(tiny_model.cfg.d_head))
    # the weighted sum of values is the head's output
    T = len(tr.encoding)
    np.testing.assert_allclose(
        weighted_values(s.weights[T - 1], s.v).sum(axis=0), tr[a + "hook_z"][T - 1, 2], atol=1e-6
    )


def test_head_steps_of_tau_on_the_weights_shown(tiny_model, tokenizer):
    """A Tempered view: the weights at τ, τ in the formula, and Z from those weights (the model ran at τ = 1)."""
    view = Tempered(run_trace(tiny_model, tokenizer, "the cat and the dog"), 0.5)
    alone = run_trace(tiny_model, tokenizer, "the cat and the dog", Interventions(head_temperature=((1, None, 0.5),)))
    a = "blocks.1.attn."
    s = head_steps(view, 1, 2)
    assert s.tau == 0.5
    for got, name in ((s.scaled, "hook_scores_scaled"), (s.weights, "hook_pattern"), (s.raw, "hook_scores_raw")):
        np.testing.assert_array_equal(got, alone[a + name][2])
    np.testing.assert_array_equal(s.q, alone[a + "hook_q"][:, 2])
    np.testing.assert_allclose(s.z, alone[a + "hook_z"][:, 2], rtol=1e-5, atol=1e-7)  # weights·V: the head's at τ
    assert not np.allclose(s.z, view[a + "hook_z"][:, 2], atol=1e-4)  # not the model's own Z at τ = 1
    unscaled = head_steps(view, 1, 2, scale=False)  # τ still divides the raw scores
    np.testing.assert_allclose(unscaled.scaled, alone[a + "hook_scores_raw"][2] / 0.5, rtol=1e-6)


def test_head_steps_without_scaling_is_softmax_of_raw_scores(tiny_model, tokenizer):
    for tau in (1.0, 2.0):
        tr = run_trace(tiny_model, tokenizer, SENTENCES[0], Interventions(temperature=tau))
        s = head_steps(tr, 0, 1, scale=False)
        raw = tr["blocks.0.attn.hook_scores_raw"][1].astype(np.float64)
        mask = lower_triangle(len(tr.encoding))
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
    np.testing.assert_allclose(
        next_token_probs(tr["logits"], ids), [probs[i, ids[i + 1]] for i in range(len(ids) - 1)], rtol=1e-6
    )


def test_next_token_probs_of_one_token_is_empty(tiny_model, tokenizer):
    tr = run_trace(tiny_model, tokenizer, "I")  # found by the fuzzer: one token has no next token (was an IndexError)
    assert len(tr.encoding) == 1 and next_token_probs(tr["logits"], tr.encoding.ids).shape == (0,)


@pytest.mark.parametrize("causal", [True, False])
def test_padded_batch_real_tokens_equal_unpadded(tiny_model, tokenizer, causal):
    texts = [SENTENCES[0], SENTENCES[1], SENTENCES[4]]  # different lengths
    iv = Interventions(causal=causal, temperature=1.3)
    batch = padded_forward(tiny_model, tokenizer, texts, iv)
    lengths = [len(e) for e in batch.encodings]
    assert (
        len(set(lengths)) == 3
        and batch.ids.shape == (3, max(lengths))
        and batch["logits"].shape[:2] == (3, max(lengths))
    )
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
    np.testing.assert_allclose(
        causal["logits"][short, :n], run_trace(tiny_model, tokenizer, texts[short])["logits"], atol=1e-5
    )


def test_padded_forward_keep_and_bad_text(tiny_model, tokenizer):
    batch = padded_forward(tiny_model, tokenizer, ["a b", "c"], keep=["logits"])
    assert set(batch.cache) == {"logits"} and not batch["logits"].flags.writeable
    with pytest.raises(TraceInputError):
        padded_forward(tiny_model, tokenizer, ["fine", "   "])


def test_sharing_and_reading_name_each_familys_parts(tiny_cfg):
    assert (
        sharing(LLAMA, 7) == "query head 7 reads key/value head 2, shared with heads 6 and 8"
        and sharing(tiny_cfg, 1) == ""
    )
    r = reading(LLAMA, 13, 7)
    assert (
        r.x_title == "X = RMSNorm 1 output, layer 13"
        and r.qkv_titles == ("Q after RoPE, head 7", "K after RoPE, K/V head 2", "V, K/V head 2")
    )
    assert "RoPE" in r.qkv_note and "shared with heads 6 and 8" in r.qkv_note and r"\le i" in r.mask_latex
    r = reading(BERT, 0, 1)
    assert (
        r.x_title == "X = the stream entering layer 0"
        and "embeddings' LayerNorm" in r.x_text
        and "no causal mask" in r.mask_latex
    )
    r = reading(tiny_cfg, 2, 3, mask_on=False)
    assert (
        r.x_title == "X = LN1 output, layer 2"
        and r.qkv_titles[0] == "Q, head 3"
        and not r.qkv_note
        and "no mask" in r.mask_latex
    )


def printed(text: str) -> float:
    """Independent reading of a printed probability: "12.3%" → 0.123, "2.7e-7" → 2.7e-7."""
    return float(text.removesuffix("%")) / (100 if text.endswith("%") else 1)


def test_future_table_and_changes_against_softmax(tiny_model, tokenizer):
    with_mask, without = (
        run_trace(tiny_model, tokenizer, SENTENCES[0]),
        run_trace(tiny_model, tokenizer, SENTENCES[0], Interventions(causal=False)),
    )
    ids, T = with_mask.encoding.ids, len(with_mask.encoding)
    p = {m: np_softmax(t["logits"]) for m, t in (("with", with_mask), ("without", without))}  # (T, V) each
    rows = future_table(with_mask, without, tokenizer.vocab_labels(), T)
    assert [r["token"] for r in rows] == list(with_mask.encoding.labels)
    for i, row in enumerate(rows[:-1]):
        for m in p:
            want = p[m][i, ids[i + 1]]
            if want >= 0.001:  # a percentage with one decimal
                assert row[f"p(actual) {m} mask"] == f"{100 * want:.1f}%"
            else:  # two significant digits in scientific notation
                assert printed(row[f"p(actual) {m} mask"]) == pytest.approx(want, rel=0.051)
            assert row[f"top-3 {m} mask"].startswith(tokenizer.vocab_labels()[int(p[m][i].argmax())] + " ")
    assert rows[-1]["p(actual) with mask"] == rows[-1]["as printed"] == "—"  # the last token has no next token
    long = top_rows(rows[:4])  # the top-3 lists, one row per (position, mask), in that order
    assert (
        [(r["position"], r["token"], r["mask"]) for r in long]
        == [(i, rows[i]["token"], m) for i in range(4) for m in ("with", "without")]
    )
    assert [r["top-3"] for r in long] == [rows[i][f"top-3 {m} mask"] for i in range(4) for m in ("with", "without")]
    # the counts are those of the printed numbers, row by row
    signs = [np.sign(printed(r["p(actual) without mask"]) - printed(r["p(actual) with mask"])) for r in rows[:-1]]
    assert [r["as printed"] for r in rows[:-1]] == [{1: "higher", -1: "lower", 0: "same"}[x] for x in signs]
    c = changes(with_mask, without)
    assert (c.top1, c.rose, c.fell, c.n, c.T) == (
        int((p["with"].argmax(-1) != p["without"].argmax(-1)).sum()), signs.count(1), signs.count(-1), T - 1, T
    )


class Logits(dict):
    """A stand-in for a trace: its logits and an encoding with ids."""

    def __init__(self, logits, ids):
        super().__init__(logits=np.asarray(logits, dtype=np.float32))
        self.encoding = type("Encoding", (), {"ids": ids})()


def test_changes_count_only_what_the_printed_numbers_show():
    # two tokens (ids 0, 1), the text 0 0 0 0: p(next = 0) at positions 0–2, with the mask and without
    with_p, without_p = [0.12341, 2.7e-7, 0.5], [0.12349, 3.0e-5, 0.4]  # prints the same, higher, lower
    logit = lambda ps: [[np.log(p), np.log(1 - p)] for p in [*ps, 0.5]]  # noqa: E731
    c = changes(Logits(logit(with_p), [0, 0, 0, 0]), Logits(logit(without_p), [0, 0, 0, 0]))
    assert (c.rose, c.fell, c.n, c.T) == (1, 1, 3, 4)  # 12.3% → 12.3% is no rise, 2.7e-7 → 3.0e-5 is one
    note = changes_note(c, 8)
    assert "more likely at **1 of 3** positions, less likely at **1**, and printed the same at 1" in note
    assert "the table shows the first 3" in note and "did **not** help" in note  # 1 up, 1 down: no help


def test_changes_note_says_when_nothing_changed_and_when_the_future_helped():
    none = changes_note(Changes(top1=0, rose=0, fell=0, n=4, T=5), 8)
    assert none.startswith("The most likely next token changed at **none of the 5** positions.")
    assert "more likely at **0 of 4** positions, less likely at **0**, and printed the same at 4" in none
    assert "did **not** help" in none
    helped = changes_note(Changes(top1=2, rose=3, fell=1, n=4, T=5), 2)
    assert helped.startswith("The most likely next token changed at **2 of 5** positions.")
    assert "more likely at **3 of 4**" in helped and "the table shows the first 2" in helped
    assert "did **not** help" not in helped


def test_padding_check_compares_each_text_with_itself_alone(tiny_model, tokenizer):
    texts = [SENTENCES[0], SENTENCES[1]]
    assert (
        padding.final_output(tiny_model.cfg) == "logits"
        and padding.final_output(BERT) == "blocks.5.ln2.hook_normalized"
    )
    for causal, use_pad in ((True, True), (False, True), (False, False)):
        iv = Interventions(causal=causal)
        batch = padded_forward(tiny_model, tokenizer, texts, iv, use_pad, keep=["logits", padding.MASK_NAME])
        chk = padding.check(batch, "logits", [run_trace(tiny_model, tokenizer, t, iv)["logits"] for t in texts])
        n = chk.lengths[1]
        assert chk.padded_labels(1)[n:] == ["[pad]"] * (chk.real.shape[1] - n)
        # padding keys hidden exactly when the mask is on
        np.testing.assert_array_equal(chk.visible[1][:, n:], not use_pad)
        assert chk.differences[0] <= 1e-5 and (chk.differences[1] <= 1e-5) == use_pad
        assert padding.verdict(use_pad, causal)[0] == ("success" if use_pad else "warning")


# ---- the Masking page's words ----


def test_mask_reading_for_a_decoder_and_an_encoder():
    dec = mask_reading("smollm2-135m", True, 49152)
    assert "uses two masks" in dec.intro and dec.causal[0] == dec.before_after[0] == "markdown"
    assert (
        WHY_CAUSAL in dec.causal[1]
        and "all 49,152 tokens" in dec.unmasked
        and "only the padding mask then guards" in dec.encoder_style_help
    )
    enc = mask_reading("minilm-l6", False, 30522)
    assert "**minilm-l6 is an encoder**" in enc.intro and enc.causal[0] == enc.before_after[0] == "info"
    assert (
        "the mask a decoder uses; in training a decoder predicts" in enc.causal[1]
        and enc.encoder_style_help == "minilm-l6 is an encoder: it has no causal mask at all."
    )


def test_position_words_and_future_notes_by_hand():
    # a decoder's row 1 sees positions 0–1 (weights 0.25 + 0.75 = 1) and hides position 2 (weight 0)
    w = np.array([[1.0, 0, 0], [0.25, 0.75, 0], [0.2, 0.3, 0.5]])
    seen, note = position_words(w, 1, decoder=True)
    assert (
        seen
        == "**Position 1** may see **2** tokens, positions 0–1; **1** later token is hidden. The text it may see:"
    )
    assert note == "Weight on the hidden (later) tokens: 0, exactly. The visible ones share 1.0000."
    # an encoder's row 1 puts 0.3 on the later position 2; rows 0 and 1 put 0.3 + 0.5 = 0.8 and
    # 0.3 on later tokens: 55 % on average
    e = np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3], [0.4, 0.4, 0.2]])
    seen, note = position_words(e, 1, decoder=False)
    assert (
        seen.startswith("**Position 1** sees all **3** tokens. In a decoder it may see **2** tokens")
        and note == "Weight on later tokens: 0.3000 (a decoder's: exactly 0)."
    )
    assert "Layer 2, head 1 puts on average **55.0%** of a row's weight" in encoder_future_note("minilm-l6", e, 2, 1)


def test_padding_words(tiny_model, tokenizer):
    assert (
        padding.mask_latex(True).endswith(r"M = M^{\mathrm{causal}} + M^{\mathrm{pad}}")
        and padding.mask_latex(False).endswith(r"\qquad M = M^{\mathrm{pad}}")
    )
    texts = ["the king and the queen", "a"]
    batch = padded_forward(tiny_model, tokenizer, texts, keep=["logits", padding.MASK_NAME])
    chk = padding.check(batch, "logits", [run_trace(tiny_model, tokenizer, t)["logits"] for t in texts])
    n_a, n_b = (len(tokenizer.encode(t)) for t in texts)  # the longer text sets the batch's length
    assert n_b == 1 and n_a - n_b > 1
    assert padding.shorter_note(chk, 1).startswith(f"Sentence B has 1 token and {n_a - 1} padding positions.")
    assert "compare its logits (the model's output for every real token) with those" in padding.shorter_note(chk, 1)
