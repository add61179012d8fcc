"""Step-by-step attention vs PyTorch's fused kernel, and the exact relations between the traced scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.conftest import SENTENCES
from transformer import Interventions, attention, visible_mask
from transformer.trace import run_trace

HEADS = [1, 2, 4, 8]
LENGTHS = [1, 5, 64]


def qkv(nh: int, T: int, hs: int = 16, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(2, nh, T, hs, generator=gen) for _ in range(3)]  # 3 × (B, nh, T, hs)


def causal(T: int) -> torch.Tensor:
    return torch.ones(T, T, dtype=torch.bool).tril()[None, None]  # (1, 1, T, T)


@pytest.mark.parametrize("nh", HEADS)
@pytest.mark.parametrize("T", LENGTHS)
def test_causal_attention_equals_sdpa(nh, T):
    q, k, v = qkv(nh, T)
    ours = attention(q, k, v, causal(T))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=0)


@pytest.mark.parametrize("nh", HEADS)
@pytest.mark.parametrize("T", LENGTHS)
def test_full_attention_equals_sdpa(nh, T):
    q, k, v = qkv(nh, T, seed=1)
    ours = attention(q, k, v, torch.ones(1, 1, T, T, dtype=torch.bool))
    ref = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=0)


@pytest.mark.parametrize("nh", [1, 4])
def test_padding_mask_equals_sdpa(nh):
    """Causal mask ∧ key padding (right-padded batch: lengths 9 and 5 of 9) vs SDPA's boolean attn_mask."""
    T = 9
    q, k, v = qkv(nh, T, seed=2)
    real = torch.tensor([[1] * 9, [1] * 5 + [0] * 4], dtype=torch.bool)  # (B, T)
    mask = causal(T) & real[:, None, None, :]  # (B, 1, T, T)
    rec = {}
    ours = attention(q, k, v, mask, rec=rec)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=0)
    assert (rec["hook_pattern"][1, :, :, 5:] == 0).all()  # nobody looks at padding


def test_padding_through_gpt_forward(tiny_model, tokenizer):
    """Without the causal mask, padding keys would leak into real tokens unless attention_mask hides them."""
    short, long = (
        tokenizer.encode(s).ids for s in ("the cat and the dog", "To be, or not to be, that is the question.")
    )
    assert len(short) < len(long)
    pad = len(long) - len(short)
    idx = torch.tensor([list(long), list(short) + [0] * pad])  # (2, T), right-padded
    am = torch.tensor([[1] * len(long), [1] * len(short) + [0] * pad])  # (2, T)
    iv = Interventions(causal=False)
    with torch.inference_mode():
        batched = tiny_model(idx, attention_mask=am, interventions=iv)
        alone = tiny_model(torch.tensor([short]), interventions=iv)
        unmasked = tiny_model(idx, interventions=iv)
    torch.testing.assert_close(batched[1, : len(short)], alone[0], atol=1e-5, rtol=0)
    assert not torch.allclose(unmasked[1, : len(short)], alone[0], atol=1e-3)  # the mask mattered


def test_temperature_divides_scaled_scores():
    q, k, v = qkv(4, 7, seed=3)
    tau = torch.tensor([1.0, 0.5, 2.0, 3.0])
    base, hot = {}, {}
    attention(q, k, v, causal(7), rec=base)
    attention(q, k, v, causal(7), tau, rec=hot)
    torch.testing.assert_close(
        hot["hook_scores_scaled"], base["hook_scores_scaled"] / tau.view(1, -1, 1, 1), atol=0, rtol=1e-6
    )
    assert torch.equal(hot["hook_scores_raw"], base["hook_scores_raw"])


@pytest.fixture(scope="module", params=[1.0, 0.5])
def scored_trace(request, tiny_model, tokenizer):
    return run_trace(tiny_model, tokenizer, SENTENCES[2], Interventions(temperature=request.param))


def test_scores_relate_exactly(scored_trace, tiny_cfg):
    tr = scored_trace
    tau = tr.interventions.temperature
    T = len(tr.encoding)
    above = np.triu(np.ones((T, T), dtype=bool), k=1)  # j > i: the future
    for layer in range(tiny_cfg.n_layer):
        a = f"blocks.{layer}.attn."
        raw, scaled, masked = tr[a + "hook_scores_raw"], tr[a + "hook_scores_scaled"], tr[a + "hook_scores_masked"]
        q, k = tr[a + "hook_q"], tr[a + "hook_k"]  # (T, nh, hs)
        # raw = Q·Kᵀ, recomputed independently from the traced q and k
        np.testing.assert_allclose(raw, np.einsum("ihd,jhd->hij", q, k), rtol=1e-5, atol=1e-4)
        # scaled = raw / √d_head / τ, exactly as float32 computes it
        expected = raw / np.float32(math.sqrt(tiny_cfg.d_head))
        if tau != 1.0:
            expected = expected / np.float32(tau)
        assert np.array_equal(scaled, expected)
        # masked = scaled where j ≤ i, −∞ above the diagonal
        assert np.array_equal(masked[:, ~above], scaled[:, ~above])
        assert np.isneginf(masked[:, above]).all()


def test_pattern_is_a_masked_softmax(scored_trace, tiny_cfg):
    tr = scored_trace
    T = len(tr.encoding)
    above = np.triu(np.ones((T, T), dtype=bool), k=1)
    for layer in range(tiny_cfg.n_layer):
        a = f"blocks.{layer}.attn."
        pattern, masked = tr[a + "hook_pattern"], tr[a + "hook_scores_masked"].astype(np.float64)
        np.testing.assert_allclose(pattern.sum(-1), 1.0, atol=1e-6)
        assert (pattern[:, above] == 0).all()  # exactly zero, not merely small
        assert (pattern[:, ~above] > 0).all()
        e = np.exp(masked - masked.max(-1, keepdims=True))
        np.testing.assert_allclose(pattern, e / e.sum(-1, keepdims=True), atol=1e-6)
        # z = pattern · V, per head
        np.testing.assert_allclose(tr[a + "hook_z"], np.einsum("hij,jhd->ihd", pattern, tr[a + "hook_v"]), atol=1e-5)


@pytest.mark.parametrize("causal_mask", [True, False])
def test_visible_mask_is_the_one_mask(causal_mask):
    """visible_mask[b, 0, i, j] = (j ≤ i or not causal) and key j is real, built here from index comparisons."""
    T, S = 4, 6
    real = torch.tensor([[True] * 6, [True, True, True, False, False, False]])  # (B, S): batch row 1 pads 3 keys
    i, j = np.arange(T)[:, None], np.arange(S)[None, :]
    allowed = (j <= i) | (not causal_mask)  # (T, S)
    want = allowed[None, None] & real.numpy()[:, None, None, :]  # (B, 1, T, S)
    got = visible_mask(T, causal_mask, real, S=S)
    assert got.dtype == torch.bool and got.shape == (2, 1, T, S)
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(visible_mask(T, causal_mask).numpy(), allowed[None, None, :, :T])  # no padding, S = T
