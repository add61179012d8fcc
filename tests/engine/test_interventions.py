"""Interventions: attention temperature (global and per head), causal mask off, head ablation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.conftest import SENTENCES
from transformer import Interventions
from transformer.trace import run_trace, trace_names

TEXT = SENTENCES[5]  # the longest sentence: many rows to check


@pytest.fixture(scope="module")
def base(tiny_model, tokenizer):
    return run_trace(tiny_model, tokenizer, TEXT)


def trace(tiny_model, tokenizer, **kw):
    return run_trace(tiny_model, tokenizer, TEXT, Interventions(**kw))


def layer_names(tr, layer: int) -> list[str]:
    """Every name the trace answers inside block `layer` (not only those its cache holds so far)."""
    names = [n for n in tr.names if n.startswith(f"blocks.{layer}.")]
    assert len(names) > 10, names  # q, k, v, the scores, the pattern, z, the result, the streams, the MLP …
    return names


def test_cold_temperature_gives_one_hot_rows(tiny_model, tokenizer, tiny_cfg):
    tau = 1e-4
    tr = trace(tiny_model, tokenizer, temperature=tau)
    checked = total = 0
    for layer in range(tiny_cfg.n_layer):
        a = f"blocks.{layer}.attn."
        masked, pattern = tr[a + "hook_scores_masked"], tr[a + "hook_pattern"]  # (nh, T, T)
        for h in range(tiny_cfg.n_head):
            for i in range(len(tr.encoding)):  # row i sees keys 0 … i
                total += 1
                top = np.sort(masked[h, i, : i + 1])[::-1]
                if i > 0 and top[0] - top[1] < 50:  # a near-tie (e^−50 apart at most): skip it
                    continue
                checked += 1
                one_hot = np.zeros(len(tr.encoding), dtype=np.float32)
                one_hot[np.argmax(masked[h, i])] = 1.0
                np.testing.assert_allclose(pattern[h, i], one_hot, atol=1e-6, err_msg=f"layer {layer} head {h} row {i}")
    assert checked > 0.9 * total  # the check is not vacuous


def test_hot_temperature_gives_uniform_rows(tiny_model, tokenizer, tiny_cfg):
    tr = trace(tiny_model, tokenizer, temperature=1e6)
    T = len(tr.encoding)
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]  # row i: 1/(i+1) on keys j ≤ i
    for layer in range(tiny_cfg.n_layer):
        pattern = tr[f"blocks.{layer}.attn.hook_pattern"]
        for h in range(tiny_cfg.n_head):
            np.testing.assert_allclose(pattern[h], uniform, atol=1e-5, rtol=0)
        assert (pattern[:, np.triu(np.ones((T, T), dtype=bool), k=1)] == 0).all()


@pytest.mark.parametrize(
    "iv",
    [
        Interventions(temperature=1.0),
        Interventions(head_temperature=((1, 2, 1.0), (0, None, 1.0))),
        Interventions(causal=True, ablate=frozenset()),
    ],
    ids=["global", "per_head", "defaults"],
)
def test_neutral_interventions_reproduce_the_model_bit_for_bit(tiny_model, tokenizer, tiny_cfg, base, iv):
    tr = run_trace(tiny_model, tokenizer, TEXT, iv)
    assert tr.names == base.names and set(base.names) == set(trace_names(tiny_cfg))  # every intermediate, every block
    for name in base.names:
        assert np.array_equal(tr[name], base[name]), name


def test_trace_logits_equal_a_plain_forward(tiny_model, base):
    """Recording changes nothing: the traced logits are the model's own, bit for bit."""
    with torch.inference_mode():
        logits = tiny_model(torch.tensor([base.encoding.ids]))[0].numpy()
    assert np.array_equal(base["logits"], logits)


def test_head_temperature_changes_only_that_head_and_downstream(tiny_model, tokenizer, base, tiny_cfg):
    L, H = 1, 2
    tr = trace(tiny_model, tokenizer, head_temperature=((L, H, 0.3),))
    a = f"blocks.{L}.attn."
    # upstream: the embeddings, every entry of layer 0, and layer 1 up to the raw scores
    for name in ["hook_embed", "hook_pos_embed", *layer_names(base, 0)]:
        assert np.array_equal(tr[name], base[name]), name
    for name in (
        "hook_resid_pre", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_scores_raw",
    ):
        assert np.array_equal(tr[f"blocks.{L}.{name}"], base[f"blocks.{L}.{name}"]), name
    # the chosen head: scaled scores are divided by τ, its pattern changes; the other heads stay identical
    others = [h for h in range(tiny_cfg.n_head) if h != H]
    np.testing.assert_allclose(tr[a + "hook_scores_scaled"][H], base[a + "hook_scores_scaled"][H] / 0.3, rtol=1e-6)
    assert not np.allclose(tr[a + "hook_pattern"][H], base[a + "hook_pattern"][H], atol=1e-4)
    assert np.array_equal(tr[a + "hook_pattern"][others], base[a + "hook_pattern"][others])
    assert np.array_equal(tr[a + "hook_z"][:, others], base[a + "hook_z"][:, others])
    # downstream: the layer's output, the next layer and the logits
    for name in (
        f"blocks.{L}.hook_attn_out",
        f"blocks.{L}.hook_resid_post",
        f"blocks.{L + 1}.attn.hook_pattern",
        "logits",
    ):
        assert not np.allclose(tr[name], base[name], atol=1e-5), name


def test_layer_wide_temperature_sets_every_head_of_that_layer(tiny_model, tokenizer, base, tiny_cfg):
    tr = trace(tiny_model, tokenizer, head_temperature=((0, None, 2.0),))
    for h in range(tiny_cfg.n_head):
        assert not np.allclose(tr["blocks.0.attn.hook_pattern"][h], base["blocks.0.attn.hook_pattern"][h], atol=1e-4)
    np.testing.assert_allclose(
        tr["blocks.0.attn.hook_scores_scaled"], base["blocks.0.attn.hook_scores_scaled"] / 2.0, rtol=1e-6
    )


def test_mask_off_changes_early_positions_and_masks_nothing(tiny_model, tokenizer, base, tiny_cfg):
    tr = trace(tiny_model, tokenizer, causal=False)
    assert not np.allclose(tr["logits"][0], base["logits"][0], atol=1e-4)  # position 0 now sees the whole text
    for layer in range(tiny_cfg.n_layer):
        a = f"blocks.{layer}.attn."
        assert np.isfinite(tr[a + "hook_scores_masked"]).all()
        assert np.array_equal(tr[a + "hook_scores_masked"], tr[a + "hook_scores_scaled"])
        assert (tr[a + "hook_pattern"] > 0).all()
    # the last position already saw everything: in layer 0 its row is unchanged
    np.testing.assert_allclose(
        tr["blocks.0.attn.hook_pattern"][:, -1], base["blocks.0.attn.hook_pattern"][:, -1], atol=1e-6
    )


def test_ablation_removes_exactly_that_heads_contribution(tiny_model, tokenizer, base, tiny_cfg):
    L, H = 1, 2
    tr = trace(tiny_model, tokenizer, ablate=frozenset({(L, H)}))
    a = f"blocks.{L}.attn."
    others = [h for h in range(tiny_cfg.n_head) if h != H]
    assert (tr[a + "hook_z"][:, H] == 0).all()
    assert (tr[a + "hook_result"][:, H] == 0).all()
    # the head still looks; its output is dropped
    assert np.array_equal(tr[a + "hook_pattern"], base[a + "hook_pattern"])
    assert np.array_equal(tr[a + "hook_result"][:, others], base[a + "hook_result"][:, others])
    # attn_out(ablated) = attn_out(base) − that head's result
    np.testing.assert_allclose(
        tr[f"blocks.{L}.hook_attn_out"], base[f"blocks.{L}.hook_attn_out"] - base[a + "hook_result"][:, H], atol=1e-5
    )
    assert base[a + "hook_result"][:, H].std() > 0.1  # the removed share was not negligible
    for name in layer_names(base, 0):
        assert np.array_equal(tr[name], base[name]), name
    assert not np.allclose(tr["logits"], base["logits"], atol=1e-4)


def test_attn_out_is_the_sum_of_head_results(base, tiny_model, tiny_cfg):
    for layer in range(tiny_cfg.n_layer):
        b_O = tiny_model.blocks[layer].attn.b_O.numpy()
        np.testing.assert_allclose(
            base[f"blocks.{layer}.attn.hook_result"].sum(1) + b_O, base[f"blocks.{layer}.hook_attn_out"], atol=1e-5
        )


def test_ablating_every_head_leaves_only_the_bias(tiny_model, tokenizer, tiny_cfg):
    tr = trace(tiny_model, tokenizer, ablate=frozenset((0, h) for h in range(tiny_cfg.n_head)))
    b_O = tiny_model.blocks[0].attn.b_O.numpy()
    assert np.array_equal(tr["blocks.0.hook_attn_out"], np.broadcast_to(b_O, tr["blocks.0.hook_attn_out"].shape))


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, -math.inf])
def test_invalid_temperature_raises(bad):
    with pytest.raises(ValueError, match="temperature"):
        Interventions(temperature=bad)
    with pytest.raises(ValueError, match="temperature"):
        Interventions(head_temperature=((0, 1, bad),))
