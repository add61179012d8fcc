"""The attention pages on the two real models (SmolLM2: Llama family, RoPE, shared key/value heads; MiniLM: BERT
encoder, post-norm, no causal mask), through AppTest: every tab opens, the main controls move, and the numbers drawn
equal independent computations on the models' own traces.

Pages: One head, Masking, Softmax & temperature, Lecture example, Query–key map, and the home page.
"""

from __future__ import annotations

import numpy as np
import pytest

from lessons.words import percent, shown
from tests.app.conftest import MINI, SENTENCE, SMOL
from tests.apptest_utils import (
    array,
    assert_ok,
    chart,
    chart_titled,
    charts_by_key,
    each_tab,
    open_tab,
    page_path,
    run_page,
    texts,
)
from tests.apptest_utils import chart_z as z
from transformer import Interventions, run_trace
from transformer.loading import missing_real_models

pytestmark = pytest.mark.skipif(bool(missing_real_models()), reason="the real models are not installed")
SLOW = pytest.mark.slow  # the SmolLM2 tests: the first to run loads the model (~4 s), and its traces cost ~0.2 s each

OTHER = "The cat sat."  # the Masking page's default second sentence


def trace(lm, text=SENTENCE, **iv):
    return run_trace(lm.model, lm.tokenizer, text, Interventions(**iv))


def page(name: str, model: str, **query):
    at = run_page(page_path(name) if name != "app" else "app.py", model=model, sentence=SENTENCE, **query)
    assert_ok(at)
    assert at.selectbox(key="w_model").value == model
    return at


def np_softmax(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def blank(m: np.ndarray, hidden: np.ndarray) -> np.ndarray:
    """A matrix as a heatmap draws it: hidden cells NaN."""
    return np.where(hidden, np.nan, m)


# ---- One head ----


def step(at, n: int):
    return open_tab(at, "onehead_step", f"{n} ·")


@SLOW
def test_one_head_on_smollm2_rope_and_shared_key_value_heads(smol):
    at = page("3_One_head", SMOL, layer="13", head="7")
    tr = trace(smol)
    a, T = "blocks.13.attn.", len(tr.encoding)
    rot_q, rot_k, v = (
        tr[a + "hook_rot_q"][:, 7].astype(np.float64),
        tr[a + "hook_rot_k"][:, 2].astype(np.float64),
        tr[a + "hook_v"][:, 2],
    )
    # 1: X is RMSNorm 1 of the stream
    np.testing.assert_allclose(
        z(at, "X = RMSNorm 1 output, layer 13"), tr["blocks.13.ln1.hook_normalized"], rtol=1e-5, atol=1e-6
    )
    assert "root mean square" in texts(at)
    # a few dimensions dwarf the rest: the colours stop at the 99th percentile
    x = np.abs(tr["blocks.13.ln1.hook_normalized"])
    assert (
        chart_titled(at, "X = RMSNorm 1")["data"][0]["zmax"] == pytest.approx(np.percentile(x, 99), rel=1e-5)
        and x.max() > 3 * np.percentile(x, 99)
    )
    # 2: Q and K after RoPE, K and V of key/value head 2 (shared by query heads 6, 7, 8)
    step(at, 2)
    np.testing.assert_allclose(z(at, "Q after RoPE, head 7"), rot_q, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z(at, "K after RoPE, K/V head 2"), rot_k, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z(at, "V, K/V head 2"), v, rtol=1e-5, atol=1e-6)
    assert "query head 7 reads key/value head 2, shared with heads 6 and 8" in texts(at) and "RoPE" in texts(at)
    # 3: the raw scores are rot_q·rot_kᵀ, the scaled ones ÷√64
    raw = rot_q @ rot_k.T
    np.testing.assert_allclose(z(step(at, 3), "Raw scores"), raw, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(z(at, "Scaled scores"), raw / 8, rtol=1e-4, atol=1e-4)
    # 4: causal mask, and the pattern is the trace's (and a softmax of the masked scaled scores)
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    weights = z(step(at, 4), "Attention weights")
    np.testing.assert_allclose(weights, blank(tr[a + "hook_pattern"][7], future), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.nan_to_num(weights), np_softmax(np.where(future, -np.inf, raw / 8)), atol=1e-5)
    # 5, 6: one query's weighted sum of the shared values is the head's output
    step(at, 5).selectbox(key="onehead_query").set_value(8).run()  # "it"
    terms = z(at, "α_ij·v_j for query 8")
    np.testing.assert_allclose(terms[T], tr[a + "hook_z"][8, 7], atol=1e-5)
    np.testing.assert_allclose(z(step(at, 6), "Z = αV, head 7"), tr[a + "hook_z"][:, 7], rtol=1e-5, atol=1e-6)
    # the toggles: no scaling, then no causal mask (the whole model again)
    at.toggle(key="onehead_scale").set_value(False).run()
    np.testing.assert_allclose(
        np.nan_to_num(z(step(at, 4), "Attention weights")), np_softmax(np.where(future, -np.inf, raw)), atol=1e-5
    )
    at.toggle(key="onehead_scale").set_value(True).run()
    at.toggle(key="onehead_mask").set_value(False).run()
    assert_ok(at)
    np.testing.assert_allclose(
        z(at, "Attention weights"), trace(smol, causal=False)[a + "hook_pattern"][7], rtol=1e-4, atol=1e-6
    )
    assert "Mask off" in texts(at)
    # another head of the same group reads the same K and V; a head of another group does not
    at.slider(key="w_head").set_value(6).run()
    np.testing.assert_allclose(
        z(step(at, 2), "K after RoPE, K/V head 2"),
        trace(smol, causal=False)[a + "hook_rot_k"][:, 2],
        rtol=1e-5,
        atol=1e-6,
    )
    at.slider(key="w_head").set_value(0).run()
    assert "query head 0 reads key/value head 0, shared with heads 1 and 2" in texts(at)


def test_one_head_on_minilm_no_causal_mask_post_norm(mini):
    at = page("3_One_head", MINI, layer="3", head="1")
    tr = trace(mini)
    a = "blocks.3.attn."
    assert tr.encoding.labels[0] == "[CLS]" and tr.encoding.labels[-1] == "[SEP]"
    np.testing.assert_allclose(
        z(at, "X = the stream entering layer 3"), tr["blocks.3.hook_resid_pre"], rtol=1e-5, atol=1e-6
    )
    assert "post-norm" in texts(at) and "this switch can do nothing" in texts(at)
    mask = at.toggle(key="onehead_no_mask")
    assert mask.disabled and mask.value is False and not [t for t in at.toggle if t.key == "onehead_mask"]
    step(at, 2)
    for name in "qkv":
        np.testing.assert_allclose(z(at, f"{name.upper()}, head 1"), tr[a + f"hook_{name}"][:, 1], rtol=1e-5, atol=1e-6)
    raw = tr[a + "hook_q"][:, 1].astype(np.float64) @ tr[a + "hook_k"][:, 1].T
    np.testing.assert_allclose(z(step(at, 3), "Raw scores"), raw, rtol=1e-4, atol=1e-4)
    step(at, 4)
    scores, weights = z(at, "Scores (nothing masked)"), z(at, "Attention weights")
    assert not np.isnan(scores).any() and not np.isnan(weights).any()  # no −∞ above the diagonal
    np.testing.assert_allclose(weights, np_softmax(raw / np.sqrt(32)), atol=1e-5)
    assert np.triu(weights, k=1).sum() > 1  # the future is used
    assert "no causal mask" in texts(at)
    # no scaling: softmax of the raw scores, nothing masked; every step opens
    at.toggle(key="onehead_scale").set_value(False).run()
    np.testing.assert_allclose(z(at, "Attention weights"), np_softmax(raw), atol=1e-5)
    assert "Mask off" not in texts(at) and "Scaling off" in texts(at)
    at.slider(key="w_layer").set_value(5).run()
    at.slider(key="w_head").set_value(11).run()
    assert len(list(each_tab(at))) == 6  # every step opens
    np.testing.assert_allclose(
        z(step(at, 1), "X = the stream entering layer 5"), tr["blocks.5.hook_resid_pre"], rtol=1e-5, atol=1e-6
    )


# ---- Masking ----


def part(at, n: int):
    return open_tab(at, "masking_part", f"{n} ·")


def test_masking_on_minilm_says_an_encoder_has_no_causal_mask(mini):
    at = page("4_Masking", MINI, layer="2", head="4")
    tr = trace(mini)
    T, pattern = len(tr.encoding), tr["blocks.2.attn.hook_pattern"][4]
    assert "is an encoder" in texts(at) and "An encoder uses no causal mask" in texts(at)
    # 1: a decoder's mask, labelled as not used; where the position really looks (the future too)
    mask = z(at, "A decoder's causal mask: NOT used by this encoder")
    np.testing.assert_array_equal(~np.isnan(mask), np.tril(np.ones((T, T), dtype=bool)))
    at.slider(key="masking_pos").set_value(5).run()
    bars = array(chart_titled(at, "Where position 5 looks")["data"][0]["y"])
    np.testing.assert_allclose(bars, pattern[5], rtol=1e-5, atol=1e-7)
    assert f"Weight on later tokens: {pattern[5, 6:].sum():.4f}" in texts(at) and pattern[5, 6:].sum() > 0
    # 2: nothing masked: scores and weights only
    assert set(charts_by_key(part(at, 2))) == {"masking_scaled", "masking_weights"}
    assert not np.isnan(z(at, "After softmax")).any() and "Nothing to mask" in texts(at)
    np.testing.assert_allclose(
        z(at, "Scores (nothing masked)"), tr["blocks.2.attn.hook_scores_scaled"][4], rtol=1e-5, atol=1e-5
    )
    # 3: the encoder always sees the future; the page names where to compare
    part(at, 3)
    assert "always sees the future" in texts(at) and "Encoder vs decoder" in texts(at) and not at.dataframe
    assert f"**{np.triu(pattern, k=1).sum(axis=1)[:-1].mean():.1%}**" in texts(at)
    np.testing.assert_allclose(z(at, "Weights of layer 2, head 4"), pattern, rtol=1e-5, atol=1e-7)
    # 4: padding: the last block's output compared; no encoder-style switch (it is one)
    part(at, 4)
    fixed = at.toggle(key="masking_is_encoder")
    assert fixed.disabled and fixed.value is True and "last block's output" in texts(at)
    n_a, n_b = T, len(mini.tokenizer.encode(OTHER))
    want = np.broadcast_to(np.arange(n_a) < n_b, (n_a, n_a))  # every real key, in both directions; no padding key
    np.testing.assert_array_equal(~np.isnan(z(at, "Mask of sentence B")), want)
    assert max(float(m.value) for m in at.metric) <= 1e-4 and "output difference" in at.metric[0].label
    at.toggle(key="masking_padmask").set_value(False).run()
    a, b = (float(m.value) for m in at.metric)
    assert a <= 1e-4 < 1e-2 < b and "read the padding" in at.warning[0].value


@SLOW
def test_masking_on_smollm2_future_and_padding(smol):
    at = page("4_Masking", SMOL, layer="13", head="8")
    tr, open_tr = trace(smol), trace(smol, causal=False)
    T = len(tr.encoding)
    np.testing.assert_array_equal(~np.isnan(z(at, "Causal mask")), np.tril(np.ones((T, T), dtype=bool)))
    at.slider(key="masking_pos").set_value(8).run()
    np.testing.assert_allclose(
        array(chart_titled(at, "Where position 8 looks")["data"][0]["y"]),
        tr["blocks.13.attn.hook_pattern"][8, 8],
        rtol=1e-5,
        atol=1e-7,
    )
    assert set(charts_by_key(part(at, 2))) == {"masking_scaled", "masking_masked", "masking_weights"}
    df = part(at, 3).dataframe[0].value
    vocab = smol.tokenizer.vocab_labels()
    for i in (0, 4):
        for m, t in (("with", tr), ("without", open_tr)):
            p = np_softmax(t["logits"][i])
            assert df[f"top-3 {m} mask"][i].split(" ")[0] == vocab[int(np.argmax(p))]
            assert df[f"p(actual) {m} mask"][i] == percent(p[tr.encoding.ids[i + 1]])  # 2.7e-7, not 0.00 %
    changed = int((tr["logits"].argmax(-1) != open_tr["logits"].argmax(-1)).sum())
    # a rise counts only when the printed numbers rise (0.0 % → 0.0 % is none; 2.7e-7 → 3.0e-5 is one)
    p_with, p_without = (
        np_softmax(t["logits"][:-1])[np.arange(T - 1), tr.encoding.ids[1:]] for t in (tr, open_tr)
    )
    rose = sum(shown(b) > shown(a) for a, b in zip(p_with, p_without, strict=True))
    assert (
        f"changed at **{changed} of {T}** positions" in texts(at)
        and f"more likely at **{rose} of {T - 1}**" in texts(at)
        and "49,152 tokens" in texts(at)
    )
    np.testing.assert_allclose(
        z(at, "Weights without the mask, layer 13, head 8"),
        open_tr["blocks.13.attn.hook_pattern"][8],
        rtol=1e-4,
        atol=1e-6,
    )
    part(at, 4)
    assert max(float(m.value) for m in at.metric) <= 1e-3 and "logit difference" in at.metric[0].label
    at.toggle(key="masking_encoder").set_value(True).run()
    at.toggle(key="masking_padmask").set_value(False).run()
    assert_ok(at)
    assert float(at.metric[1].value) > 1e-2 and "read the padding" in at.warning[0].value


# ---- Softmax & temperature, Query–key map, Lecture, home ----


@pytest.mark.parametrize("model", [pytest.param(SMOL, marks=SLOW), MINI])
def test_softmax_real_row(model, request):
    lm = request.getfixturevalue("smol" if model == SMOL else "mini")
    at = page("5_Softmax_and_temperature", model, layer="4", head="5", softmax_part="3 · τ on one of the model's rows")
    at.slider(key="softmax_temperature").set_value(0.5).run()
    at.selectbox(key="softmax_query").set_value(3).run()
    assert_ok(at)
    tr = trace(lm)
    # a decoder's query 3 sees keys 0…3; an encoder's, all
    keys = range(4) if model == SMOL else range(len(tr.encoding))
    scores = tr["blocks.4.attn.hook_scores_scaled"][5, 3, list(keys)]
    figs = charts_by_key(at)
    np.testing.assert_allclose(array(figs["softmax_real_scores"]["data"][0]["y"]), scores, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(array(figs["softmax_real_weights"]["data"][0]["y"]), np_softmax(scores / 0.5), atol=1e-5)
    tempered = trace(lm, head_temperature=((4, 5, 0.5),))["blocks.4.attn.hook_pattern"][5, 3, list(keys)]
    np.testing.assert_allclose(array(figs["softmax_real_weights"]["data"][1]["y"]), tempered, atol=1e-5)
    assert ("after RoPE" in texts(at)) == (model == SMOL) and ("no causal mask" in texts(at)) == (model == MINI)


@SLOW
def test_query_key_map_on_smollm2_uses_the_rotated_shared_keys(smol):
    at = page("11_Query_key_map", SMOL, layer="13", head="8")
    tr = trace(smol)
    a = "blocks.13.attn."
    # (2T, 64) queries, then the shared keys
    m = np.vstack([tr[a + "hook_rot_q"][:, 8], tr[a + "hook_rot_k"][:, 2]]).astype(np.float64)
    c = m - m.mean(axis=0)
    u, s, _ = np.linalg.svd(c, full_matrices=False)
    want = u[:, :2] * s[:2]
    t = {d["name"]: d for d in chart(at, "qkmap_map")["data"]}
    pts = np.vstack([np.c_[array(t[n]["x"]), array(t[n]["y"])] for n in ("queries", "keys")])
    for k in range(2):
        np.testing.assert_allclose(pts[:, k], np.sign(pts[:, k] @ want[:, k]) * want[:, k], rtol=1e-3, atol=1e-3)
    assert "after RoPE" in texts(at) and "query head 8 reads key/value head 2, shared with heads 6 and 7" in texts(at)
    assert at.dataframe[0].value["ρ with the weight"][0] == 1.0
    at.slider(key="qkmap_topk").set_value(2).run()
    at.selectbox(key="qkmap_query").set_value(8).run()
    assert_ok(at)
    assert "2 lines." in texts(at)


def test_query_key_map_and_lecture_on_minilm(mini):
    at = page("11_Query_key_map", MINI, layer="3", head="1")
    assert "no causal mask" in texts(at) and "shared" not in texts(at)
    T = len(trace(mini).encoding)
    assert f"average over the {T} queries" in texts(at)  # every query sees every key
    at = page("6_Lecture_example", MINI)
    np.testing.assert_allclose(
        array(chart(at, "lecture_fig_X")["data"][0]["z"]), [[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1]]
    )


@pytest.mark.parametrize("model", [pytest.param(SMOL, marks=SLOW), MINI])
def test_home_page(model, request):
    at = page("app", model, layer="3", head="2")
    tr = trace(request.getfixturevalue("smol" if model == SMOL else "mini"))
    shown = array(chart(at, "home_pattern")["data"][0]["z"])
    np.testing.assert_allclose(np.nan_to_num(shown), tr["blocks.3.attn.hook_pattern"][2], atol=1e-5)
    assert np.isnan(shown).any() == (model == SMOL)  # a decoder's future is blank; an encoder has none
    assert ("no grey triangle" in texts(at)) == (model == MINI)
    # its card, written by the app (the package has none): where it comes from, the file, its size
    [card] = [e for e in at.expander if e.label == f"Model card: {model}"]
    card = " ".join(m.value for m in card.markdown)
    source = "HuggingFaceTB/SmolLM2-135M-Instruct" if model == SMOL else "sentence-transformers/all-MiniLM-L6-v2"
    assert source in card and "Licence: Apache-2.0" in card and "No model card." not in card
    assert ("Q4_1" in card) == (model == SMOL) and ("pooler" in card) == (model == MINI)
    assert f"| n_layer | {30 if model == SMOL else 6} |" in card
