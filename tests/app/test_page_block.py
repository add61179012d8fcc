"""The "Inside a block" page through AppTest: every figure equals the trace
(or numpy / torch references), every control changes it."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from tests.apptest_utils import (
    EACH_BAD_INPUT,
    array,
    assert_bad_input_drawn,
    assert_ok,
    chart,
    charts,
    page_path,
    run_page,
    run_typed,
    texts,
)
from transformer import Interventions, run_trace

PAGE = page_path("8_Inside_a_block")
REPEATED = "the cat and the dog and the bird"  # "␣the" and "␣and" twice
LN_STREAM = {"ln1": "hook_resid_pre", "ln2": "hook_resid_mid"}
KEYS = (
    "block_norms", "block_ln_mean", "block_ln_std", "block_ln_token", "block_gelu", "block_mlp", "block_adds_layers",
    "block_adds_tokens",
)


def trace(lm, text=REPEATED, temperature=1.0):
    return run_trace(lm.model, lm.tokenizer, text, Interventions(temperature=temperature))


def ys(at, key: str) -> list[np.ndarray]:
    return [array(d["y"]) for d in chart(at, key)["data"]]


def norm64(x) -> np.ndarray:
    return np.linalg.norm(np.asarray(x, dtype=np.float64), axis=-1)


def stage_names(n_layer: int) -> list[str]:
    return ["blocks.0.hook_resid_pre", *(f"blocks.{i}.hook_resid_{s}" for i in range(n_layer) for s in ("mid", "post"))]


def assert_block(at, lm, tr, layer: int, ln: str, tok: int, n_neurons: int):
    """Every figure equals an independent computation on the trace for this layer, LayerNorm, token and neuron count."""
    cfg = lm.cfg
    T = len(tr.encoding)
    b = f"blocks.{layer}."
    # 1 · the stream's lengths, stage by stage
    norms = chart(at, "block_norms")
    want = np.stack([norm64(tr[n]) for n in stage_names(cfg.n_layer)])  # (2L + 1, T)
    np.testing.assert_allclose(array(norms["data"][0]["z"]), want, rtol=1e-5)
    assert norms["layout"]["yaxis"]["ticktext"][:3] == ["embed + pos", "0: + attention", "0: + MLP"]
    # 2 · LayerNorm: input, (x − μ)/√(σ² + ε) from torch, and the model's output
    x = tr[b + LN_STREAM[ln]].astype(np.float64)  # (T, d)
    x_hat = F.layer_norm(torch.from_numpy(x), (cfg.d_model,), eps=cfg.ln_eps).numpy()
    y = tr[b + f"{ln}.hook_normalized"].astype(np.float64)
    for got, want in zip(ys(at, "block_ln_mean"), (x.mean(1), x_hat.mean(1), y.mean(1)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    for got, want in zip(ys(at, "block_ln_std"), (x.std(1), x_hat.std(1), y.std(1)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4)
    for got, want in zip(ys(at, "block_ln_token"), (x[tok], x_hat[tok], y[tok]), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert (
        f"token {tok} " in chart(at, "block_ln_token")["layout"]["title"]["text"]
        and f"LayerNorm {ln[-1]}" in chart(at, "block_ln_token")["layout"]["title"]["text"]
    )
    # 3 · GELU: the curve by the tanh formula, the token's neurons as (pre, post) points
    curve, points = chart(at, "block_gelu")["data"]
    cx = array(curve["x"]).astype(np.float64)
    np.testing.assert_allclose(
        array(curve["y"]), 0.5 * cx * (1 + np.tanh(math.sqrt(2 / math.pi) * (cx + 0.044715 * cx**3))), atol=1e-5
    )
    np.testing.assert_array_equal(array(points["x"]), tr[b + "mlp.hook_pre"][tok])
    np.testing.assert_array_equal(array(points["y"]), tr[b + "mlp.hook_post"][tok])
    # the MLP heatmap: the n neurons with the highest peak, strongest first
    post = tr[b + "mlp.hook_post"]
    top = sorted(range(cfg.d_mlp), key=lambda j: -post[:, j].max())[:n_neurons]
    mlp = chart(at, "block_mlp")
    np.testing.assert_array_equal(array(mlp["data"][0]["z"]), post[:, top])
    assert mlp["data"][0]["x"] == [f"n{j}" for j in top]  # each column names its neuron
    assert f"the {n_neurons} most active of {cfg.d_mlp}" in mlp["layout"]["title"]["text"]
    # 4 · what each sublayer adds: per block averaged over tokens, and per token for this block
    attn = np.stack([norm64(tr[f"blocks.{i}.hook_attn_out"]) for i in range(cfg.n_layer)])  # (L, T)
    mlp_n = np.stack([norm64(tr[f"blocks.{i}.hook_mlp_out"]) for i in range(cfg.n_layer)])
    for got, want in zip(ys(at, "block_adds_layers"), (attn.mean(1), mlp_n.mean(1)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5)
    for got, want in zip(ys(at, "block_adds_tokens"), (attn[layer], mlp_n[layer]), strict=True):
        assert len(got) == T
        np.testing.assert_allclose(got, want, rtol=1e-5)
    assert chart(at, "block_adds_tokens")["layout"]["title"]["text"] == f"Block {layer}, per token"
    x_in = norm64(tr[b + "hook_resid_pre"]).mean()
    assert (
        f"attention adds vectors of average length {attn[layer].mean():.3g} to a stream of average length {x_in:.3g}"
        in texts(at)
    )


def test_default_figures_equal_the_trace(lm):
    at = run_page(PAGE, sentence=REPEATED)
    assert_ok(at)
    tr = trace(lm)
    T = len(tr.encoding)
    assert at.selectbox(key="block_token").value == T - 1 and at.radio(key="block_ln").value == "ln1"
    assert_block(at, lm, tr, 0, "ln1", T - 1, 64)
    shown = texts(at)
    assert "(here 1e-05)" in shown and r"128 \times 512" in shown and "tanh" in shown
    assert "block **0**" in shown


def test_repeated_tokens_keep_their_rows_and_columns(lm):
    at = run_page(PAGE, sentence=REPEATED)
    labels = trace(lm).encoding.labels
    T = len(labels)
    assert labels.count("␣the") == 2 and labels.count("␣and") == 2
    norms = chart(at, "block_norms")
    assert array(norms["data"][0]["z"]).shape[1] == T and array(norms["data"][0]["x"]).tolist() == list(range(T))
    assert norms["layout"]["xaxis"]["ticktext"].count("␣the") == 2
    mlp = chart(at, "block_mlp")
    assert array(mlp["data"][0]["z"]).shape[0] == T and array(mlp["data"][0]["y"]).tolist() == list(range(T))
    assert mlp["layout"]["yaxis"]["ticktext"].count("␣and") == 2
    for key, n in (("block_ln_mean", 3), ("block_ln_std", 3), ("block_adds_tokens", 2)):
        assert len(chart(at, key)["data"]) == n  # x, x̂, y; the attention's and the MLP's additions
        for d in chart(at, key)["data"]:
            assert array(d["x"]).tolist() == list(range(T))
        assert chart(at, key)["layout"]["xaxis"]["ticktext"].count("␣the") == 2
    options = at.selectbox(key="block_token").options
    assert len(set(options)) == T and sum(o.endswith(": ␣the") for o in options) == 2


def test_layer_slider_moves_every_block_figure(lm):
    at = run_page(PAGE, sentence=REPEATED)
    before = ys(at, "block_ln_mean")[2]
    at.slider(key="w_layer").set_value(3).run()
    assert_ok(at)
    tr = trace(lm)
    assert_block(at, lm, tr, 3, "ln1", len(tr.encoding) - 1, 64)
    assert not np.allclose(before, ys(at, "block_ln_mean")[2])
    assert "block **3**" in texts(at) and "LayerNorm (block 3)" in [h.value for h in at.header][1]


def test_layernorm_choice_switches_to_ln2(lm):
    at = run_page(PAGE, sentence=REPEATED)
    at.slider(key="w_layer").set_value(1).run()
    before = ys(at, "block_ln_std")[0]
    at.radio(key="block_ln").set_value("ln2").run()
    assert_ok(at)
    tr = trace(lm)
    assert_block(at, lm, tr, 1, "ln2", len(tr.encoding) - 1, 64)
    assert not np.allclose(before, ys(at, "block_ln_std")[0])  # LN2 reads x_mid, not x


def test_token_choice_moves_the_token_figures(lm):
    tr = trace(lm)
    first_the = tr.encoding.labels.index("␣the")
    at = run_page(PAGE, sentence=REPEATED)
    at.selectbox(key="block_token").set_value(first_the).run()
    assert_ok(at)
    assert_block(at, lm, tr, 0, "ln1", first_the, 64)
    assert f"token {first_the} (␣the)" in chart(at, "block_gelu")["layout"]["title"]["text"]
    # a shorter sentence brings the choice back inside it
    at.selectbox(key="block_token").set_value(len(tr.encoding) - 1).run()
    at.text_area(key="w_sentence").set_value("Hi there").run()
    assert_ok(at)
    short = trace(lm, "Hi there")
    assert at.selectbox(key="block_token").value == len(short.encoding) - 1
    assert_block(at, lm, short, 0, "ln1", len(short.encoding) - 1, 64)


def test_neuron_slider_sets_the_columns(lm):
    at = run_page(PAGE, sentence=REPEATED)
    tr = trace(lm)
    for n in (8, lm.cfg.d_mlp):
        at.slider(key="block_neurons").set_value(n).run()
        assert_ok(at)
        assert array(chart(at, "block_mlp")["data"][0]["z"]).shape == (len(tr.encoding), n)
        assert_block(at, lm, tr, 0, "ln1", len(tr.encoding) - 1, n)


def test_temperature_and_head(lm):
    at = run_page(PAGE, sentence=REPEATED)
    before = array(chart(at, "block_norms")["data"][0]["z"])
    # τ on the weights shown (the default): this page shows no weights, so nothing changes, and it says why
    at.slider(key="w_temperature").set_value(0.3).run()
    assert_ok(at)
    assert_block(at, lm, trace(lm), 0, "ln1", len(before[0]) - 1, 64)
    np.testing.assert_array_equal(array(chart(at, "block_norms")["data"][0]["z"]), before)
    assert "Every number on this page: the model's as trained (τ = 1)" in texts(at)
    # τ in every layer: the model runs at τ
    at.toggle(key="w_tau_every_layer").set_value(True).run()
    assert_ok(at)
    tr = trace(lm, temperature=0.3)
    assert_block(at, lm, tr, 0, "ln1", len(tr.encoding) - 1, 64)
    after = array(chart(at, "block_norms")["data"][0]["z"])
    np.testing.assert_array_equal(before[0], after[0])  # the input comes before any attention
    assert not np.allclose(before[1:], after[1:])
    assert "the model's as trained" not in texts(at)
    # the head slider is not used here (every head is summed into attn_out): the page stays the same
    at.slider(key="w_head").set_value(2).run()
    assert_ok(at)
    np.testing.assert_array_equal(array(chart(at, "block_norms")["data"][0]["z"]), after)


def test_sidebar_preset_changes_the_sentence(lm):
    at = run_page(PAGE, sentence=REPEATED)
    at.selectbox(key="w_preset").set_value("The cat sat").run()
    assert_ok(at)
    tr = trace(lm, "The cat sat on the mat.")
    assert chart(at, "block_norms")["layout"]["xaxis"]["ticktext"] == list(tr.encoding.labels)
    assert_block(at, lm, tr, 0, "ln1", len(tr.encoding) - 1, 64)


@EACH_BAD_INPUT
def test_bad_inputs(name, text):
    if at := run_typed(PAGE, text):
        assert [c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")] == list(KEYS)
        assert_bad_input_drawn(at, name, charts(at), n_tokens=array(chart(at, "block_norms")["data"][0]["z"]).shape[1])
