"""Block statistics against independent computations: numpy norms and moments, torch's layer_norm, the GELU formulas."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lessons import block_stats as bs
from tests.conftest import SENTENCES, randomize
from transformer import GPT, run_trace

TEXT = SENTENCES[0]


@pytest.fixture(scope="module")
def tr(tiny_model, tokenizer):
    return run_trace(tiny_model, tokenizer, TEXT)


def norm64(x: np.ndarray) -> np.ndarray:
    return np.sqrt((np.asarray(x, dtype=np.float64) ** 2).sum(axis=-1))


def test_stream_stages_follow_the_forward_pass(tr, tiny_cfg):
    stages = bs.stream_stages(tiny_cfg.n_layer)
    assert len(stages) == 2 * tiny_cfg.n_layer + 1
    assert [n for n, _ in stages[:3]] == ["blocks.0.hook_resid_pre", "blocks.0.hook_resid_mid", "blocks.0.hook_resid_post"]
    assert stages[-1] == (f"blocks.{tiny_cfg.n_layer - 1}.hook_resid_post", f"{tiny_cfg.n_layer - 1}: + MLP")
    for name, _ in stages:
        assert name in tr.cache
    # the stream entering block l is the stream leaving block l − 1
    np.testing.assert_array_equal(tr["blocks.1.hook_resid_pre"], tr["blocks.0.hook_resid_post"])
    assert bs.n_layers(tr) == tiny_cfg.n_layer


def test_residual_norms_are_the_lengths_of_the_stream(tr, tiny_cfg):
    norms = bs.residual_norms(tr)
    T = len(tr.encoding)
    assert norms.shape == (2 * tiny_cfg.n_layer + 1, T) and norms.dtype == np.float32
    np.testing.assert_allclose(norms[0], norm64(tr["hook_embed"] + tr["hook_pos_embed"]), rtol=1e-5)
    for row, (name, _) in enumerate(bs.stream_stages(tiny_cfg.n_layer)):
        np.testing.assert_allclose(norms[row], norm64(tr[name]), rtol=1e-5)


def test_token_mean_std_is_the_population_std(tr):
    x = tr["blocks.1.hook_resid_pre"]
    mean, std = bs.token_mean_std(x)
    t = torch.from_numpy(x.astype(np.float64))
    np.testing.assert_allclose(mean, t.mean(-1).numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(std, t.std(-1, unbiased=False).numpy(), rtol=1e-5)
    assert not np.allclose(std, t.std(-1, unbiased=True).numpy(), rtol=1e-5)  # divides by d, not d − 1


def test_normalize_equals_torch_layer_norm_without_gain(tr):
    x = tr["blocks.2.hook_resid_mid"]
    for eps in (1e-5, 0.1):
        got = bs.normalize(x, eps)
        want = F.layer_norm(torch.from_numpy(x.copy()), (x.shape[-1],), eps=eps).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        # by the formula, element by element in plain Python for one token
        row = [float(v) for v in x[3]]
        mu = sum(row) / len(row)
        var = sum((v - mu) ** 2 for v in row) / len(row)
        np.testing.assert_allclose(got[3], [(v - mu) / math.sqrt(var + eps) for v in row], rtol=1e-5, atol=1e-6)
    mean, std = bs.token_mean_std(bs.normalize(x, 1e-5))
    assert np.abs(mean).max() < 1e-5 and np.allclose(std, 1, atol=1e-3)


@pytest.mark.parametrize("ln,stream", [("ln1", "hook_resid_pre"), ("ln2", "hook_resid_mid")])
def test_layernorm_steps_rebuild_the_models_output(tr, tiny_model, ln, stream):
    for layer in range(tiny_model.cfg.n_layer):
        steps = bs.layernorm_steps(tr, layer, ln, tiny_model.cfg.ln_eps)
        np.testing.assert_array_equal(steps.x, tr[f"blocks.{layer}.{stream}"])
        np.testing.assert_array_equal(steps.y, tr[f"blocks.{layer}.{ln}.hook_normalized"])
        mod = getattr(tiny_model.blocks[layer], ln)
        w, b = mod.w.detach().numpy(), mod.b.detach().numpy()
        assert not np.allclose(w, 1)  # the fixture's gains are random, so x̂ and y really differ
        # y = x̂ ⊙ w + b
        np.testing.assert_allclose(steps.x_hat * w + b, steps.y, rtol=1e-4, atol=1e-5)


def test_contribution_norms_are_what_each_sublayer_adds(tr, tiny_cfg):
    attn, mlp = bs.contribution_norms(tr)
    T = len(tr.encoding)
    assert attn.shape == mlp.shape == (tiny_cfg.n_layer, T)
    for layer in range(tiny_cfg.n_layer):
        b = f"blocks.{layer}."
        np.testing.assert_allclose(attn[layer], norm64(tr[b + "hook_resid_mid"] - tr[b + "hook_resid_pre"]), rtol=1e-3)
        np.testing.assert_allclose(mlp[layer], norm64(tr[b + "hook_resid_post"] - tr[b + "hook_resid_mid"]), rtol=1e-3)
        np.testing.assert_allclose(attn[layer], norm64(tr[b + "hook_attn_out"]), rtol=1e-5)


def test_top_neurons_are_the_largest_peaks(tr):
    post = tr["blocks.0.mlp.hook_post"]
    peaks = post.max(axis=0)
    for n in (1, 8, post.shape[1]):
        top = bs.top_neurons(post, n)
        assert len(top) == n == len(set(top.tolist()))
        assert np.all(np.diff(peaks[top]) <= 0)  # strongest first
        others = np.setdiff1d(np.arange(post.shape[1]), top)
        assert others.size == 0 or peaks[top].min() >= peaks[others].max()


def test_gelu_is_the_models_activation(tr, tiny_cfg, tokenizer):
    pre = tr["blocks.1.mlp.hook_pre"]
    np.testing.assert_allclose(bs.gelu(pre, "gelu_new"), tr["blocks.1.mlp.hook_post"], rtol=1e-6, atol=1e-7)
    x = np.linspace(-4, 4, 81)
    tanh_form = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    exact = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    np.testing.assert_allclose(bs.gelu(x, "gelu_new"), tanh_form, atol=1e-6)
    np.testing.assert_allclose(bs.gelu(x, "gelu"), exact, atol=1e-6)
    assert not np.allclose(tanh_form, exact, atol=1e-5)  # the two forms really differ
    # a model with the exact GELU records exactly that
    exact_model = randomize(GPT(replace(tiny_cfg, activation="gelu")), seed=1)
    t2 = run_trace(exact_model, tokenizer, TEXT)
    np.testing.assert_allclose(bs.gelu(t2["blocks.0.mlp.hook_pre"], "gelu"), t2["blocks.0.mlp.hook_post"], rtol=1e-6, atol=1e-7)
