"""Block statistics against independent computations: numpy norms and moments, torch's layer_norm, the GELU formulas."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lessons import block_stats as bs
from tests.conftest import SENTENCES, randomize, small_model
from transformer import GPT, ModelConfig, run_trace

TEXT = SENTENCES[0]


@pytest.fixture(scope="module")
def tr(tiny_model, tokenizer):
    return run_trace(tiny_model, tokenizer, TEXT)


def norm64(x: np.ndarray) -> np.ndarray:
    return np.sqrt((np.asarray(x, dtype=np.float64) ** 2).sum(axis=-1))


def test_stream_stages_follow_the_forward_pass(tr, tiny_cfg):
    stages = bs.stream_stages(tiny_cfg)
    assert len(stages) == 2 * tiny_cfg.n_layer + 1
    assert (
        [n for n, _ in stages[:3]]
        == ["blocks.0.hook_resid_pre", "blocks.0.hook_resid_mid", "blocks.0.hook_resid_post"]
    )
    assert stages[-1] == (f"blocks.{tiny_cfg.n_layer - 1}.hook_resid_post", f"{tiny_cfg.n_layer - 1}: + MLP")
    for name, _ in stages:
        tr[name]
        assert name in tr.cache  # a stage is kept once its block ran: reading it again reruns nothing
    # the stream entering block l is the stream leaving block l − 1
    np.testing.assert_array_equal(tr["blocks.1.hook_resid_pre"], tr["blocks.0.hook_resid_post"])


def test_residual_norms_are_the_lengths_of_the_stream(tr, tiny_cfg):
    norms = bs.residual_norms(tr)
    T = len(tr.encoding)
    assert norms.shape == (2 * tiny_cfg.n_layer + 1, T) and norms.dtype == np.float32
    np.testing.assert_allclose(norms[0], norm64(tr["hook_embed"] + tr["hook_pos_embed"]), rtol=1e-5)
    for row, (name, _) in enumerate(bs.stream_stages(tiny_cfg)):
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
        steps = bs.norm_steps(tr, layer, ln)
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
    np.testing.assert_allclose(
        bs.gelu(t2["blocks.0.mlp.hook_pre"], "gelu"), t2["blocks.0.mlp.hook_post"], rtol=1e-6, atol=1e-7
    )


# ---- the other families: Llama (RMSNorm, SwiGLU, RoPE) and BERT (post-norm) on tiny random models ----


@pytest.fixture(scope="module")
def llama_tr(tokenizer):
    return run_trace(small_model("llama", tokenizer, 3, seed=4), tokenizer, TEXT)


@pytest.fixture(scope="module")
def bert_tr(tokenizer):
    model = small_model("bert", tokenizer, 3, seed=5)
    return run_trace(model, tokenizer, TEXT), model


def test_rmsnorm_by_hand(llama_tr):
    x = llama_tr["blocks.1.hook_resid_pre"]
    for eps in (1e-5, 0.1):
        got = bs.normalize(x, eps, "rmsnorm")
        row = [float(v) for v in x[2]]  # x / √(mean(x²) + ε), in plain Python for one token
        rms = math.sqrt(sum(v * v for v in row) / len(row) + eps)
        np.testing.assert_allclose(got[2], [v / rms for v in row], rtol=1e-5, atol=1e-6)
    mean, rms = bs.token_stats(bs.normalize(x, 1e-5, "rmsnorm"), "rmsnorm")
    np.testing.assert_allclose(rms, 1, atol=1e-3)  # root mean square 1 …
    assert np.abs(mean).max() > 1e-3  # … but the mean is not moved to 0
    np.testing.assert_allclose(bs.token_rms(x), np.sqrt((x.astype(np.float64) ** 2).mean(-1)), rtol=1e-6)


@pytest.mark.parametrize("ln,stream", [("ln1", "hook_resid_pre"), ("ln2", "hook_resid_mid")])
def test_rmsnorm_steps_rebuild_the_models_output(llama_tr, ln, stream):
    cfg = llama_tr.cfg
    assert cfg.norm == "rmsnorm" and bs.norm_input(cfg, ln) == stream
    for layer in range(cfg.n_layer):
        steps = bs.norm_steps(llama_tr, layer, ln)
        x = llama_tr[f"blocks.{layer}.{stream}"].astype(np.float64)
        np.testing.assert_array_equal(steps.x, llama_tr[f"blocks.{layer}.{stream}"])
        np.testing.assert_allclose(
            steps.x_hat, x / np.sqrt((x**2).mean(-1, keepdims=True) + cfg.ln_eps), rtol=1e-5, atol=1e-6
        )
        # the model's ln output = x̂ ⊙ w (no bias): recover w from the recorded output and
        # check it is one vector for every token
        w = steps.y / steps.x_hat  # (T, d)
        np.testing.assert_allclose(w, np.broadcast_to(w[0], w.shape), rtol=1e-3, atol=1e-4)


def test_post_norm_reads_the_sums_and_labels_the_stream(bert_tr):
    tr, model = bert_tr
    cfg = tr.cfg
    assert (bs.norm_input(cfg, "ln1"), bs.norm_input(cfg, "ln2")) == ("hook_resid_mid", "hook_resid_post")
    stages = bs.stream_stages(cfg)
    assert len(stages) == 4 * cfg.n_layer + 1
    assert (
        [label for _, label in stages[:5]]
        == ["LN(e+pos+type)", "0: + attention", "0: LN1", "0: + MLP", "0: LN2 (out)"]
    )
    assert all(len(label) <= 14 for _, label in stages)
    for layer in range(cfg.n_layer):
        b = f"blocks.{layer}."
        for ln, stream in (("ln1", "hook_resid_mid"), ("ln2", "hook_resid_post")):
            steps = bs.norm_steps(tr, layer, ln)
            x = tr[b + stream].astype(np.float64)
            want = F.layer_norm(torch.from_numpy(x), (cfg.d_model,), eps=cfg.ln_eps).numpy()
            np.testing.assert_allclose(steps.x_hat, want, rtol=1e-4, atol=1e-5)
            mod = getattr(model.blocks[layer], ln)
            np.testing.assert_allclose(
                steps.x_hat * mod.w.detach().numpy() + mod.b.detach().numpy(), steps.y, rtol=1e-4, atol=1e-5
            )
        # h = LN1(x + attn) is what the MLP's output is added to; the block's output is LN2(h + mlp)
        np.testing.assert_allclose(
            tr[b + "ln1.hook_normalized"] + tr[b + "hook_mlp_out"], tr[b + "hook_resid_post"], rtol=1e-5, atol=1e-5
        )
        np.testing.assert_array_equal(bs.block_output(tr, layer), tr[b + "ln2.hook_normalized"])
    norms = bs.residual_norms(tr)
    for row, (name, _) in enumerate(stages):
        np.testing.assert_allclose(norms[row], norm64(tr[name]), rtol=1e-5)
    a = bs.adds(tr, 1)
    assert a.x_mid == pytest.approx(norm64(tr["blocks.1.ln1.hook_normalized"]).mean(), rel=1e-5)
    assert a.x == pytest.approx(norm64(tr["blocks.1.hook_resid_pre"]).mean(), rel=1e-5)


def test_pre_norm_adds_and_labels(llama_tr, tr):
    assert bs.stream_stages(llama_tr.cfg)[0][1] == "embed" and bs.stream_stages(tr.cfg)[0][1] == "embed + pos"
    a = bs.adds(tr, 2)
    assert a.attn == pytest.approx(norm64(tr["blocks.2.hook_attn_out"]).mean(), rel=1e-5)
    assert a.mlp == pytest.approx(norm64(tr["blocks.2.hook_mlp_out"]).mean(), rel=1e-5)
    assert a.x_mid == pytest.approx(norm64(tr["blocks.2.hook_resid_mid"]).mean(), rel=1e-5)
    np.testing.assert_array_equal(bs.block_output(tr, 2), tr["blocks.2.hook_resid_post"])


def test_swiglu_is_silu_of_the_gate_times_the_linear_branch(llama_tr):
    cfg = llama_tr.cfg
    assert bs.gated(cfg) and not bs.gated(ModelConfig())
    gate, lin, post = (llama_tr[f"blocks.1.mlp.{n}"] for n in ("hook_pre", "hook_pre_linear", "hook_post"))
    silu = gate / (1 + np.exp(-gate.astype(np.float64)))  # SiLU(g) = g·σ(g), by hand
    np.testing.assert_allclose(bs.activation(gate, "silu"), silu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(silu * lin, post, rtol=1e-4, atol=1e-5)
    sw = bs.swiglu(llama_tr, 1, 3, 6)
    assert len(sw.neurons) == 6 and np.all(np.diff(np.abs(sw.post)) <= 0)  # the largest |output| first
    assert np.abs(post[3]).max() == pytest.approx(abs(sw.post[0]))
    np.testing.assert_allclose(sw.silu_gate * sw.linear, sw.post, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(sw.gate, gate[3, sw.neurons])
    x, y = bs.activation_curve(gate[3], "silu")
    assert x.min() <= min(-3, gate[3].min()) and x.max() >= max(3, gate[3].max())
    np.testing.assert_allclose(y, x / (1 + np.exp(-x.astype(np.float64))), rtol=1e-5, atol=1e-6)


def test_top_neurons_by_size_and_active_counts():
    post = np.array([[0.5, -3.0, 0.05], [0.2, 0.0, -0.2]])
    assert bs.top_neurons(post, 3).tolist() == [0, 2, 1]  # largest peak
    assert bs.top_neurons(post, 3, by_size=True).tolist() == [1, 0, 2]  # largest |value|
    assert bs.active_counts(post, 0) == (1, 2 / 6)  # > 0.1: 0.5 and 0.2
    assert bs.active_counts(post, 0, by_size=True) == (2, 4 / 6)  # |·| > 0.1: 0.5, −3, 0.2, −0.2


def test_stand_out_finds_one_huge_token():
    norms = np.array([[1.0, 2.0, 3.0], [900.0, 4.0, 5.0]])
    assert bs.stand_out(norms) == (0, 900.0, 5.0)
    assert bs.stand_out(np.array([[1.0, 2.0], [3.0, 9.0]])) is None  # 9 < 5 × 3
    assert bs.stand_out(np.ones((3, 1))) is None  # one token: nothing to compare


# ---- the Inside a block page's words ----

LLAMA_CFG = ModelConfig(
    family="llama", n_head=4, n_kv_head=2, d_model=32, d_mlp=48, pos_encoding="rotary", activation="silu"
)
BERT_CFG = ModelConfig(
    family="bert", n_head=4, d_model=32, d_mlp=48, pos_encoding="learned", activation="gelu", has_lm_head=False
)


def test_reading_names_each_familys_norm_and_mlp(tiny_cfg):
    gpt = bs.reading(tiny_cfg, 1, "sidebar")
    assert (
        gpt.norm == "LayerNorm"
        and "Before each step a **LayerNorm**" in gpt.intro
        and "picks block **1**" in gpt.intro
    )
    assert r"\mathrm{Attn}\big(\mathrm{LN}_1(x)\big)" in gpt.block_latex and "(embed + pos)" in gpt.stream
    assert (
        "GELU" in gpt.mlp_text
        and len(gpt.mlp_latex) == 2
        and "tanh form" in gpt.mlp_latex[1]
        and r"\mathbb{R}^{32 \times 64}" in gpt.mlp_latex[0]
    )
    assert (
        gpt.ln_names["ln2"] == "LayerNorm 2 (before the MLP, reads x_mid)"
        and "Right: block 1, token by token" in gpt.adds_text
    )
    llama = bs.reading(LLAMA_CFG, 0, "sidebar")
    assert llama.norm == "RMSNorm" and r"\mathrm{RMSNorm}_1" in llama.block_latex and "(here 1e-05)" in llama.norm_text
    assert (
        "**SwiGLU**" in llama.mlp_text
        and len(llama.mlp_latex) == 2
        and "W_{\\mathrm{gate}}" in llama.mlp_latex[0]
        and "SiLU}(g)" in llama.mlp_latex[1]
    )
    bert = bs.reading(BERT_CFG, 0, "sidebar")
    assert (
        "come *after* each step (post-norm)" in bert.intro
        and r"h = \mathrm{LN}_1(x_{\mathrm{mid}})" in bert.block_latex
    )
    assert (
        bert.ln_names["ln1"].startswith("LayerNorm 1 (after attention")
        and "In BERT, LN1 reads x + attention" in bert.norm_text
    )
    assert "exact form" in bert.mlp_latex[1] and r"\lVert h_t \rVert_2" in bert.adds_latex


def test_block_notes_by_hand():
    assert bs.stand_out_note((0, 20000.0, 300.0), "The").startswith(
        "Token 0 (The) grows to 20,000, far longer than any other (at most 300), so the colours stop at 300"
    )
    # LayerNorm of (1, 2, 3) and (−1, 0, 1): each has σ² = 2/3, so x̂ has std √(σ² / (σ² + ε)), a hair under 1
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]])
    steps = bs.NormSteps(x, bs.normalize(x, 1e-5), x)
    std_hat, std_x = math.sqrt((2 / 3) / (2 / 3 + 1e-5)), math.sqrt(2 / 3)
    note = bs.norm_note(steps, "layernorm", 1e-5)
    assert f"standard deviation between {std_hat:.6f} and {std_hat:.6f} (a hair under 1 because of ε)" in note
    assert note.endswith(f"The input's spread ranged from {std_x:.3g} to {std_x:.3g}.")
    # RMSNorm of (3, 4): rms √12.5; x̂'s rms √(12.5 / (12.5 + ε)) is within 5e-7 of 1, its mean 3.5 / √(12.5 + ε)
    x = np.array([[3.0, 4.0]])
    note = bs.norm_note(bs.NormSteps(x, bs.normalize(x, 1e-5, "rmsnorm"), x), "rmsnorm", 1e-5)
    mean_hat = 3.5 / math.sqrt(12.5 + 1e-5)
    assert (
        "(ε = 1e-05 is too small to show here)" in note
        and f"its mean is not moved to 0: {mean_hat:.3g} … {mean_hat:.3g}" in note
    )
    # neurons above 0.1: token 0 has one (0.5), all tokens three of six;
    # by size token 0 has two (0.5, −0.2), all four of six
    post = np.array([[0.5, 0.05, -0.2], [0.2, 0.3, 0.0]])
    assert (
        bs.active_note(post, 0, by_size=False)
        == "For this token 1 of 3 neurons have an output above 0.1; over all tokens, 50.0% do."
    )
    assert (
        bs.active_note(post, 0, by_size=True)
        == "For this token 2 of 3 neurons have |output| above 0.1; over all tokens, 66.7% do."
    )


def test_adds_note_reads_the_average_lengths(tr):
    def mean_norm(name: str) -> float:
        """‖v‖ averaged over the tokens, for block 1's recorded `name`."""
        return float(np.linalg.norm(np.asarray(tr[f"blocks.1.{name}"], dtype=np.float64), axis=-1).mean())

    attn, x, mlp, mid = (mean_norm(n) for n in ("hook_attn_out", "hook_resid_pre", "hook_mlp_out", "hook_resid_mid"))
    expected = (
        f"In block 1, attention adds vectors of average length {attn:.3g} to a stream of average "
        f"length {x:.3g} ({attn / x:.1%} of it); the MLP adds {mlp:.3g} to {mid:.3g} ({mlp / mid:.1%})."
    )
    assert bs.adds_note(tr, 1) == expected
