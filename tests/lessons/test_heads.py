"""lessons.heads: names, averages, pooling, line pairs, W_O, ablation, the query–key map — each
against an independent computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from lessons import heads, qk_map
from tests.conftest import SENTENCES, small_model
from transformer import Interventions, ModelConfig
from transformer.tokenizer import Encoding
from transformer.trace import run_trace

TEXT = SENTENCES[5]  # the longest sentence


def spearman(x, y) -> float:
    """Reference ρ: pandas' average ranks, then Pearson's correlation."""
    return pd.Series(x).rank().corr(pd.Series(y).rank())


@pytest.fixture(scope="module")
def tr(tiny_model, tokenizer):
    return run_trace(tiny_model, tokenizer, TEXT)


def test_head_names_round_trip():
    names = heads.all_heads(3, 4)
    assert names[:5] == ["0.0", "0.1", "0.2", "0.3", "1.0"] and len(names) == 12
    assert [heads.parse_head(n) for n in names] == [(lay, h) for lay in range(3) for h in range(4)]
    assert heads.head_name(2, 3) == "2.3"


def test_visible_keys_is_the_causal_mask(tr, tiny_cfg):
    T = len(tr.encoding)
    vis = heads.visible_keys(tr, 1)
    assert vis.shape == (tiny_cfg.n_head, T, T)
    assert (vis == np.tril(np.ones((T, T), dtype=bool))).all()


def test_mean_pattern(tr, tiny_cfg):
    stacked = np.stack([tr[f"blocks.{lay}.attn.hook_pattern"] for lay in range(tiny_cfg.n_layer)]).astype(np.float64)
    np.testing.assert_allclose(heads.mean_pattern(tr, 1), stacked[1].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(
        heads.mean_pattern(tr, None), stacked.reshape(-1, *stacked.shape[2:]).mean(axis=0), rtol=1e-6
    )
    # an average of rows summing to 1 sums to 1
    np.testing.assert_allclose(heads.mean_pattern(tr, None).sum(axis=1), 1, rtol=1e-5)


def test_sink_share(tr):
    w = tr["blocks.0.attn.hook_pattern"]
    T = w.shape[-1]
    # a decoder: the first token, rows 1…T−1
    want = [np.mean([w[h, i, 0] for i in range(1, T)]) for h in range(w.shape[0])]
    np.testing.assert_allclose(heads.sink_share(w, (0,), True), want, rtol=1e-6)
    assert np.isnan(heads.sink_share(np.ones((2, 1, 1)), (0,), True)).all()  # one token: no row can choose
    # an encoder: [CLS] + [SEP], every row
    want = [np.mean([w[h, i, 0] + w[h, i, T - 1] for i in range(T)]) for h in range(w.shape[0])]
    np.testing.assert_allclose(heads.sink_share(w, (0, T - 1), False), want, rtol=1e-6)


def test_shown_max():
    w = np.array([[1.0, 0.0, 0.0], [0.7, 0.3, 0.0], [0.2, 0.5, 0.3]])
    vis = np.tril(np.ones((3, 3), dtype=bool))
    assert heads.shown_max(w, vis, ()) == heads.shown_max(w, vis, False) == 1.0
    assert heads.shown_max(w, vis, (0,)) == heads.shown_max(w, vis, True) == 0.5  # the first column left out
    assert heads.shown_max(w, np.ones((3, 3), dtype=bool), (0, 1)) == 0.3  # two sink columns left out
    assert heads.shown_max(w[:1, :1], vis[:1, :1], (0,)) == 1.0  # nothing shown: a usable scale
    assert heads.hidden_weight(w[2], (0, 2)) == pytest.approx((0.5, 0.5))


def test_pool_is_a_block_mean_without_nan():
    rng = np.random.default_rng(0)
    w = rng.random((37, 37))
    w[np.triu_indices(37, 1)] = np.nan
    same, b = heads.pool(w, 40)
    assert b == 1
    np.testing.assert_array_equal(same, w.astype(np.float32))
    small, b = heads.pool(w, 8)  # b = ⌈37/8⌉ = 5 → ⌈37/5⌉ = 8 blocks, the last one 2 wide
    assert b == 5 and small.shape == (8, 8)
    stacked, _ = heads.pool(np.stack([w, w[::-1]]), 8)  # a stack of maps is pooled map by map
    np.testing.assert_array_equal(stacked[0], small)
    np.testing.assert_array_equal(stacked[1], heads.pool(w[::-1], 8)[0])
    for r in range(8):
        for c in range(8):
            cells = w[5 * r : 5 * r + 5, 5 * c : 5 * c + 5]
            if np.isnan(cells).all():
                assert np.isnan(small[r, c])
            else:
                np.testing.assert_allclose(small[r, c], np.nanmean(cells), rtol=1e-6)


def test_line_pairs(tr):
    w = tr["blocks.2.attn.hook_pattern"][1]
    vis = heads.visible_keys(tr, 2)[1]
    i, j, lw = heads.line_pairs(w, vis, 0.1)
    want = {(a, b) for a in range(len(w)) for b in range(a + 1) if w[a, b] >= 0.1}
    assert set(zip(i.tolist(), j.tolist(), strict=True)) == want and len(i) == len(want)
    np.testing.assert_array_equal(lw, w[i, j])
    i, j, _ = heads.line_pairs(w, vis, 0.0, token=4)
    assert (
        set(zip(i.tolist(), j.tolist(), strict=True))
        == {(4, b) for b in range(5)} | {(a, 4) for a in range(4, len(w))}
    )


def test_strongest_keys(tr):
    w = tr["blocks.1.attn.hook_pattern"][3]
    vis = heads.visible_keys(tr, 1)[3]
    i, j, kw = heads.strongest_keys(w, vis, 3)
    for a in range(len(w)):
        keys = sorted(range(a + 1), key=lambda b: -w[a, b])[:3]
        assert j[i == a].tolist() == keys
    np.testing.assert_array_equal(kw, w[i, j])
    i, j, kw = heads.strongest_keys(w, vis, 5, min_weight=0.2)
    assert (kw >= 0.2).all() and (j <= i).all()
    assert len(kw) == sum(min(5, sum(w[a, b] >= 0.2 for b in range(a + 1))) for a in range(len(w)))


def test_out_projection_gives_attn_out(tiny_model, tr, tiny_cfg):
    W_O, b_O = heads.out_projection(tiny_model, 1)
    nh, hs, d = tiny_cfg.n_head, tiny_cfg.d_head, tiny_cfg.d_model
    assert W_O.shape == (nh * hs, d) and b_O.shape == (d,)
    concat = tr["blocks.1.attn.hook_concat"]
    np.testing.assert_array_equal(concat, tr["blocks.1.attn.hook_z"].reshape(len(concat), -1))
    np.testing.assert_allclose(concat @ W_O + b_O, tr["blocks.1.hook_attn_out"], rtol=1e-4, atol=1e-5)
    # head h's block of rows gives its share z_h·W_O[h]
    np.testing.assert_allclose(
        tr["blocks.1.attn.hook_z"][:, 2] @ W_O[2 * hs : 3 * hs],
        tr["blocks.1.attn.hook_result"][:, 2],
        rtol=1e-4,
        atol=1e-5,
    )


def test_next_token_change_equals_the_engine_ablation(tiny_model, tokenizer, tr):
    off = frozenset({(0, 1), (2, 3)})
    after = run_trace(tiny_model, tokenizer, TEXT, Interventions(ablate=off))
    change = heads.next_token_change(tr["logits"][-1], after["logits"][-1], 5)
    p = torch.softmax(torch.tensor(tr["logits"][-1], dtype=torch.float64), -1).numpy()
    q = torch.softmax(torch.tensor(after["logits"][-1], dtype=torch.float64), -1).numpy()
    top_p, top_q = list(np.argsort(-p)[:5]), list(np.argsort(-q)[:5])
    assert change.ids.tolist() == top_p + [i for i in top_q if i not in top_p]
    np.testing.assert_allclose(change.before, p[change.ids], rtol=1e-5)
    np.testing.assert_allclose(change.after, q[change.ids], rtol=1e-5)
    assert change.moved == pytest.approx(0.5 * np.abs(p - q).sum(), rel=1e-4) and change.moved > 0
    same = heads.next_token_change(tr["logits"][-1], tr["logits"][-1], 5)
    assert same.moved == 0 and same.ids.tolist() == top_p


def test_qk_map_equals_numpy_svd(tr):
    q, k = tr["blocks.2.attn.hook_q"][:, 0], tr["blocks.2.attn.hook_k"][:, 0]
    m = qk_map.qk_map(q, k)
    stacked = np.vstack([q, k]).astype(np.float64)
    centred = stacked - stacked.mean(axis=0)
    # independent: the eigenvectors of the covariance matrix
    val, vec = np.linalg.eigh(centred.T @ centred)
    top = vec[:, ::-1][:, :2]  # (hs, 2)
    want = centred @ top  # (2T, 2)
    got = np.vstack([m.q2, m.k2])
    for c in range(2):
        sign = np.sign(got[:, c] @ want[:, c])
        np.testing.assert_allclose(got[:, c], sign * want[:, c], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(m.explained, val[::-1][:2] / val.sum(), rtol=1e-6)
    np.testing.assert_allclose(m.axes @ m.axes.T, np.eye(2), atol=1e-9)  # two orthonormal directions
    np.testing.assert_allclose(centred @ m.axes.T, got, atol=1e-9)
    assert m.explained[0] >= m.explained[1] > 0 and m.explained.sum() <= 1


def test_qk_map_of_one_token():
    m = qk_map.qk_map(np.array([[1.0, 2.0, 0.0]]), np.array([[0.0, 0.0, 1.0]]))
    assert m.q2.shape == m.k2.shape == (1, 2)
    np.testing.assert_allclose(m.explained, [1, 0], atol=1e-12)


def test_map_measures(tr):
    m = qk_map.qk_map(tr["blocks.0.attn.hook_q"][:, 2], tr["blocks.0.attn.hook_k"][:, 2])
    meas = qk_map.map_measures(m)
    # the map points are float32
    np.testing.assert_allclose(meas["distance"][3, 1], np.linalg.norm(m.q2[3] - m.k2[1]), rtol=1e-6)
    np.testing.assert_allclose(meas["dot"][3, 1], m.q2[3] @ m.k2[1], rtol=1e-6)


def test_row_rank_correlations(tr):
    a = "blocks.1.attn."
    w, scores = tr[a + "hook_pattern"][0], tr[a + "hook_scores_scaled"][0]
    vis = heads.visible_keys(tr, 1)[0]
    noise = np.random.default_rng(2).random(w.shape)
    noise[5, :3] = 0.25  # ties
    rho = qk_map.row_rank_correlations({"score": scores, "minus": -scores, "noise": noise}, w, vis)
    # softmax keeps the order of the scores
    assert rho["score"] == pytest.approx(1.0) and rho["minus"] == pytest.approx(-1.0)
    want = np.mean([spearman(noise[i, : i + 1], w[i, : i + 1]) for i in range(2, len(w))])
    assert rho["noise"] == pytest.approx(want, abs=1e-9)
    short = qk_map.row_rank_correlations({"score": scores[:2, :2]}, w[:2, :2], vis[:2, :2])
    assert np.isnan(short["score"])  # no query sees 3 keys


def test_row_ranks_average_ties():
    x = np.array([[3.0, 1.0, 3.0, 2.0, 9.0], [5.0, 5.0, 5.0, 0.0, 0.0]])
    keep = np.array([[True, True, True, True, False], [True, True, True, False, False]])
    got = qk_map.row_ranks(x, keep)
    np.testing.assert_array_equal(got[0, :4], [2.5, 0, 2.5, 1])
    np.testing.assert_array_equal(got[1, :3], [1, 1, 1])
    assert np.isnan(got[0, 4]) and np.isnan(got[1, 3:]).all()


# ---- other families: a tiny random Llama (GQA, no biases) and BERT (no causal mask) ----


@pytest.fixture(scope="module")
def llama(tokenizer):
    return small_model("llama", tokenizer, 2, seed=6)


@pytest.fixture(scope="module")
def bert(tokenizer):
    return small_model("bert", tokenizer, 2, seed=7)


def test_key_mask_is_the_mask_the_scores_had(tr, llama, bert, tokenizer):
    for t in (
        tr,
        run_trace(llama, tokenizer, TEXT),
        run_trace(bert, tokenizer, TEXT),
        run_trace(llama, tokenizer, TEXT, Interventions(causal=False)),
    ):
        mask = heads.key_mask(t)
        for layer in range(t.cfg.n_layer):
            assert (heads.visible_keys(t, layer) == mask).all()
    T = len(tr.encoding)
    # encoder: every key
    assert heads.key_mask(run_trace(bert, tokenizer, TEXT)).all() and heads.key_mask(tr).sum() == T * (T + 1) // 2


def test_sink_columns():
    enc = Encoding(
        "x",
        (101, 7, 8, 102, 9, 102),
        ("[CLS]", "a", "b", "[SEP]", "c", "[SEP]"),
        ((0, 0),) * 6,
        ("[CLS]", "a", "b", "[SEP]", "c", "[SEP]"),
    )
    assert heads.sink_columns(enc, ModelConfig()) == (0,)
    assert heads.sink_columns(enc, ModelConfig(family="bert", pos_encoding="learned", activation="gelu")) == (0, 3, 5)


def test_out_projection_without_bias_gives_attn_out(llama, tokenizer):
    t = run_trace(llama, tokenizer, TEXT)
    W_O, b_O = heads.out_projection(llama, 1)
    assert b_O is None and W_O.shape == (4 * 8, 32)
    np.testing.assert_allclose(t["blocks.1.attn.hook_concat"] @ W_O, t["blocks.1.hook_attn_out"], rtol=1e-4, atol=1e-5)
    sh = heads.output_shares(t, llama, 1, 3)
    assert (
        sh.names == [*(f"head {h}: z·W_O[{h}]" for h in range(4)), "sum = attention output"]
        and sh.rows.shape == (5, 32)
    )
    # the heads' shares add up to attn_out
    np.testing.assert_allclose(sh.rows[:4].sum(0), sh.rows[4], rtol=1e-4, atol=1e-5)
    assert sh.error < 1e-4


def test_output_shares_with_bias(tiny_model, tr):
    sh = heads.output_shares(tr, tiny_model, 0, 2)
    assert sh.names[-2:] == ["b_O", "sum = attention output"]
    np.testing.assert_allclose(sh.rows[-2], tiny_model.blocks[0].attn.b_O.detach().numpy())
    np.testing.assert_allclose(sh.rows[:-1].sum(0), sh.rows[-1], rtol=1e-4, atol=1e-5)


def test_output_change_of_an_encoder(bert, tokenizer):
    before = run_trace(bert, tokenizer, TEXT)
    after = run_trace(bert, tokenizer, TEXT, Interventions(ablate=frozenset({(0, 1), (1, 3)})))
    oc = heads.output_change(before, after)
    a, b = (
        before["blocks.1.ln2.hook_normalized"].astype(np.float64),
        after["blocks.1.ln2.hook_normalized"].astype(np.float64),
    )  # the last block's output
    cos = [x @ y / (np.linalg.norm(x) * np.linalg.norm(y)) for x, y in zip(a, b, strict=True)]
    np.testing.assert_allclose(oc.cosine, cos, rtol=1e-5)
    np.testing.assert_allclose(oc.relative, np.linalg.norm(b - a, axis=1) / np.linalg.norm(a, axis=1), rtol=1e-5)
    assert oc.turned == pytest.approx(1 - np.mean(cos), rel=1e-4) and oc.turned > 0
    same = heads.output_change(before, before)
    np.testing.assert_allclose(same.cosine, 1, atol=1e-6)
    np.testing.assert_allclose(same.relative, 0, atol=1e-7)


def test_change_table(tr):
    change = heads.next_token_change(tr["logits"][-1], tr["logits"][-2], 3)
    labels = [f"t{i}" for i in range(len(tr["logits"][-1]))]
    table = heads.change_table(change, labels)
    assert table["next token"] == [f"t{i}" for i in change.ids]
    p, q = (torch.softmax(torch.tensor(tr["logits"][k], dtype=torch.float64), -1).numpy()[change.ids] for k in (-1, -2))
    for shown, want in ((table["p, all heads on"], p), (table["p, switched off"], q)):
        assert shown == [f"{100 * x:.1f}%" if x >= 0.001 else f"{x:.1e}".replace("e-0", "e-") for x in want]
    for shown, d in zip(table["change"], q - p, strict=True):  # a sign, then the size as a probability is printed
        size = float(shown.lstrip("+−").removesuffix("%")) / (100 if shown.endswith("%") else 1)
        assert shown[0] == ("+" if d > 0 else "−") and size == pytest.approx(abs(d), abs=5e-4, rel=0.051)


# ---- the Multi-head page's words ----

LLAMA = ModelConfig(family="llama", n_head=9, n_kv_head=3, d_model=72, pos_encoding="rotary", activation="silu")
BERT = ModelConfig(family="bert", pos_encoding="learned", activation="gelu", has_lm_head=False, n_layer=6)


def test_reading_names_each_familys_heads_sink_and_ablation(tiny_cfg):
    gpt = heads.reading(tiny_cfg, 2, "sidebar")
    assert (
        "each with its own W_Q, W_K, W_V (d_head = d_model / h = 32 / 4 = 8)" in gpt.intro
        and "**layer 2**" in gpt.intro
        and "encoder" not in gpt.intro
    )
    assert gpt.b_O == heads.out_bias(tiny_cfg) == " + b_O" and r"W_O + b_O, \\" in gpt.formula
    assert (gpt.sink, gpt.sink_to, gpt.columns) == ("first-token", "the first token", "first-token column")
    assert gpt.sink_label == "Hide the first-token column (attention sink)" and "very first token" in gpt.sink_note
    assert (
        "prediction of the next token" in gpt.ablation
        and not gpt.encoder_note
        and r"\mathrm{logits}_{T-1}" in gpt.ablation_latex
    )
    llama = heads.reading(LLAMA, 0, "sidebar")
    assert (
        "groups of 3 share one W_K and W_V (3 key/value heads" in llama.intro
        and llama.b_O == ""
        and r"W_O, \\" in llama.formula
    )
    bert = heads.reading(BERT, 0, "sidebar")
    assert bert.intro.endswith("This model is an encoder: no causal mask (M = 0), every token sees the whole sentence.")
    assert bert.sink_label == "Hide the [CLS] and [SEP] columns (attention sinks)" and bert.sink == "[CLS]/[SEP]"
    assert (
        "final vector of every token" in bert.ablation
        and bert.encoder_note
        and r"\cos(x_t, x'_t)" in bert.ablation_latex
        and "the output needs it" in bert.caveat
    )


def test_sink_notes_by_hand(tiny_cfg):
    read = heads.reading(tiny_cfg, 1, "sidebar")
    # one row 0.5 | 0.3 0.2 with column 0 hidden: 0.5 still shown, 0.5 hidden
    expected = (
        "First-token column hidden, weights not renormalised: in layer 1, head 2, "
        "the last row's weights still shown add up to 0.500, not 1 (the hidden 0.500 went to the first token)."
    )
    assert heads.hidden_note(read, np.array([0.5, 0.3, 0.2]), (0,), 1, 2) == expected
    bert_note = heads.hidden_note(heads.reading(BERT, 0, "sidebar"), np.array([0.5, 0.3, 0.2]), (0, 2), 0, 1)
    # the tokens' names keep their case
    assert bert_note.startswith("[CLS] and [SEP] columns hidden") and "still shown add up to 0.300" in bert_note
    # a decoder's rows 1 and 2 on column 0: head 0 (0.6 + 0.2) / 2 = 40 %, head 1 (0.1 + 0.4) / 2 = 25 %
    w = np.array([[[1, 0, 0], [0.6, 0.4, 0], [0.2, 0.3, 0.5]], [[1, 0, 0], [0.1, 0.9, 0], [0.4, 0.4, 0.2]]])
    assert (
        heads.sink_share_note(read, w, (0,), True)
        == "Weight on the first token, averaged over rows 1…T−1: head 0 40.0%, head 1 25.0%."
    )


def test_overview_concat_and_ablation_words(tiny_cfg):
    assert (
        "each cell is the mean of a 2 × 2 block of weights, future cells left out, so 16 tokens fit in 8 cells"
        in heads.overview_note(2, 8, 16, True)
    )
    assert "(every weight is shown)" in heads.overview_note(1, 5, 5, False)
    # T = 5, 4 heads of 8: concat (5, 32), W_O (32, 32), b_O (32,)
    note = heads.concat_note(tiny_cfg, 1, 5)
    assert (
        note.startswith("Layer 1: the heads' outputs Z **(5, 4, 8)**")
        and "concatenated **(5, 32)** → times W_O **(32, 32)** plus b_O (one vector of 32 numbers)" in note
    )
    assert "(this model has no bias b_O)" in heads.concat_note(LLAMA, 0, 5)


def test_ablation_verdict_follows_the_numbers(tiny_cfg):
    assert (
        heads.ablation_verdict(tiny_cfg, [], heads.Effect(0.0), 5)
        == ("info", "No head is switched off: both bars are the model as trained. Choose heads above.")
    )
    kind, text = heads.ablation_verdict(tiny_cfg, ["0.1", "2.3"], heads.Effect(0.1234, "␣the", 0.61, 0.2), 5)
    assert kind == "markdown" and text.startswith("Switched off: 0.1, 2.3. **12.3%** of the probability moved")
    assert "The most likely next token, ␣the, went from 61.0% to 20.0%." in text
    assert "more** likely" not in text and "Hardly any effect" not in text
    # absent: 0.4 % moved, below the stated 1 %
    kind, text = heads.ablation_verdict(tiny_cfg, ["0.1"], heads.Effect(0.004, "␣the", 0.61, 0.606), 5)
    assert kind == "warning" and "**0.4%** of the probability moved" in text
    assert "**Hardly any effect** (less than 1.0% moved): the model did not need these heads here." in text
    # reversed: the top token became more likely without the heads (compared as printed: 61.0% → 70.0%)
    kind, text = heads.ablation_verdict(tiny_cfg, ["0.1"], heads.Effect(0.09, "␣the", 0.61, 0.7), 5)
    assert kind == "markdown" and "It became **more** likely without these heads" in text
    # a rise too small to print is no rise: 61.01 % and 61.04 % both print 61.0%
    tiny_rise = heads.Effect(0.2, "x", 0.6101, 0.6104)
    assert "more** likely" not in heads.ablation_verdict(tiny_cfg, ["0.1"], tiny_rise, 5)[1]
    assert heads.ablation_verdict(BERT, ["0.1"], heads.Effect(0.01234), 7) == (
        "markdown",
        (
            "Switched off: 0.1. The final vectors turned by **0.0123** "
            "on average (1 − cos over the 7 tokens; 0 = unchanged)."
        ),
    )
    kind, text = heads.ablation_verdict(BERT, ["0.1"], heads.Effect(0.0004), 7)
    assert kind == "warning" and "**Hardly any effect** (they turned by less than 0.001)" in text


def test_a_long_list_of_heads_is_cut_with_its_count():
    assert heads.head_list(["0.1", "2.3"]) == "0.1, 2.3"
    names = [f"{i}.0" for i in range(20)]
    assert heads.head_list(names) == ", ".join(names[:12]) + ", … (20 in all)"
    assert "Switched off: 0.0, 1.0," in heads.ablation_verdict(BERT, names, heads.Effect(0.5), 7)[1]


def test_random_heads_are_seeded_by_the_text_and_avoid_the_chosen():
    chosen = ((0, 1), (2, 3))
    a = heads.random_heads(4, 6, 2, "the cat sat", chosen)
    assert a == heads.random_heads(4, 6, 2, "the cat sat", chosen)  # the same text: the same heads
    assert len(set(a)) == 2 and not set(a) & set(chosen) and all(0 <= lay < 4 and 0 <= h < 6 for lay, h in a)
    assert list(a) == sorted(a)
    draws = {heads.random_heads(4, 6, 2, f"text {i}", chosen) for i in range(20)}
    assert len(draws) > 10  # another text, other heads
    assert heads.random_heads(2, 2, 3, "x", ((0, 0), (0, 1))) == ((1, 0), (1, 1))  # no more than there are


def test_control_verdict_compares_with_as_many_random_heads(tiny_cfg):
    chosen = heads.Effect(0.53, "␣the", 0.7, 0.1)
    more = heads.control_verdict(tiny_cfg, chosen, heads.Effect(0.10, "␣the", 0.7, 0.6), 8)
    assert more == (
        "Control, 8 random heads switched off: **10.0%** moved; ␣the: 70.0% → 60.0%. "
        "The chosen heads moved the output **more** than as many random heads."
    )
    weak, strong = heads.Effect(0.05, "␣the", 0.7, 0.68), heads.Effect(0.3, "␣the", 0.7, 0.3)
    less = heads.control_verdict(tiny_cfg, weak, strong, 1)
    assert "1 random head switched off" in less and "**less** than as many random heads" in less
    same = heads.control_verdict(tiny_cfg, heads.Effect(0.105), heads.Effect(0.10), 2)  # 0.5 points apart: < 1 %
    assert "**about as much** as the chosen heads" in same
    assert "**about as much**" in heads.control_verdict(BERT, heads.Effect(0.0105), heads.Effect(0.0101), 2)


def test_overview_leaves_out_the_future_and_hidden_columns(tr):
    """heads.overview on a short text (b = 1): every head's pattern, NaN where masked or hidden; the top is the
    largest weight still shown."""
    thumbs, block, top = heads.overview(tr, (0,), 64)
    L, T = tr.cfg.n_layer, len(tr.encoding)
    assert block == 1 and thumbs.shape == (L, tr.cfg.n_head, T, T)
    want = np.stack([tr[f"blocks.{layer}.attn.hook_pattern"] for layer in range(L)])  # (L, nh, T, T)
    want = np.where(np.tril(np.ones((T, T), dtype=bool)), want, np.nan)
    want[..., 0] = np.nan  # the hidden first-token column
    np.testing.assert_allclose(thumbs, want, rtol=1e-6)
    assert top == pytest.approx(float(np.nanmax(want)))
