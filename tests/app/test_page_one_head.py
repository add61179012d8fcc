"""The "One head, step by step" page: every figure equals the engine's trace, every control changes it."""

from __future__ import annotations

import math

import numpy as np
import torch

from tests import apptest_utils as u
from tests.apptest_utils import chart_z as z
from tests.counting import block_calls
from transformer import Interventions, run_trace
from transformer import head_scores as hs
from transformer.loading import shared_model
from ui.state import DEFAULT_SENTENCE, PRESETS

PAGE = u.page_path("3_One_head")
MODEL = "shakespeare-gpt"  # the model the pages open in tests
REPEATED = "the cat and the dog and the bird"  # "␣the" and "␣and" twice


def trace(lm, text=REPEATED, temperature=1.0, causal=True, head_temperature=()):
    iv = Interventions(temperature=temperature, causal=causal, head_temperature=head_temperature)
    return run_trace(lm.model, lm.tokenizer, text, iv)


def softmax_rows(scores: np.ndarray, tau: float) -> np.ndarray:
    """softmax(S / τ) of each row in float64, −∞ (masked) cells 0."""
    e = np.exp(scores.astype(np.float64) / tau - np.max(scores, axis=-1, keepdims=True) / tau)  # (…, T, T)
    return e / e.sum(axis=-1, keepdims=True)


def step(at, n: int):
    """Open step n's tab ("3 · Scores and scaling" for 3); only the open step is drawn."""
    return u.open_tab(at, "onehead_step", f"{n} ·")


def every_step_chart(at) -> list[dict]:
    """The figures of all six steps, opening each in turn."""
    return [c for _ in u.each_tab(at) for c in u.charts(at)]


def shown(m: np.ndarray) -> np.ndarray:
    """A matrix as the heatmap draws it: −∞ cells blank (NaN)."""
    return np.where(np.isneginf(m), np.nan, m)


def bits(weights) -> float:
    """Entropy −Σ α log₂ α of one row of weights, term by term."""
    return -sum(float(a) * math.log2(float(a)) for a in weights if a > 0)


def assert_head(at, tr, layer, head, i):
    """Every figure of every step equals the trace's tensors for (layer, head) and
    query i (the page is left at step 5)."""
    a = f"blocks.{layer}.attn."
    np.testing.assert_allclose(
        z(step(at, 1), f"X = LN1 output, layer {layer}"), tr[f"blocks.{layer}.ln1.hook_normalized"], rtol=1e-6
    )
    step(at, 2)
    for name in ("q", "k", "v"):
        np.testing.assert_allclose(z(at, f"{name.upper()}, head {head}"), tr[a + f"hook_{name}"][:, head], rtol=1e-6)
    np.testing.assert_allclose(z(step(at, 3), "Raw scores"), tr[a + "hook_scores_raw"][head], rtol=1e-6)
    np.testing.assert_allclose(z(at, "Scaled scores"), tr[a + "hook_scores_scaled"][head], rtol=1e-6)
    np.testing.assert_allclose(z(step(at, 4), "Masked scores"), shown(tr[a + "hook_scores_masked"][head]), rtol=1e-6)
    np.testing.assert_allclose(
        z(at, "Attention weights"),
        np.where(np.isneginf(tr[a + "hook_scores_masked"][head]), np.nan, tr[a + "hook_pattern"][head]),
        rtol=1e-6,
    )
    # Z = αV sums terms of both signs: where they nearly cancel (a z of 8e-4 from terms of 0.3) a float32 sum in
    # another order (the page's α·V at τ on one head, the trace's on another CPU) differs by some 1e-9
    np.testing.assert_allclose(
        z(step(at, 6), f"Z = αV, head {head}"), tr[a + "hook_z"][:, head], rtol=1e-6, atol=1e-7
    )
    # the query row: bars are its weights; the terms are α_ij·v_j (hidden keys blank); the last row sums to z_i
    step(at, 5)
    np.testing.assert_allclose(
        u.array(u.chart_titled(at, f"Weights of query {i}")["data"][0]["y"]), tr[a + "hook_pattern"][head, i], rtol=1e-6
    )
    terms = z(at, f"α_ij·v_j for query {i}")
    T = len(tr.encoding)
    want = tr[a + "hook_pattern"][head, i][:, None] * tr[a + "hook_v"][:, head]
    want[i + 1 :] = np.nan
    np.testing.assert_allclose(terms[:T], want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(terms[T], tr[a + "hook_z"][i, head], atol=1e-6)


def test_default_figures_equal_the_trace(lm):
    at = u.run_page(PAGE, sentence=REPEATED)
    u.assert_ok(at)
    tr = trace(lm)
    T = len(tr.encoding)
    # step 1 is open, and only it is drawn
    assert [c["layout"]["title"]["text"] for c in u.charts(at)] == ["X = LN1 output, layer 0"]
    assert "LN1" in u.texts(at) or "LayerNorm 1" in u.texts(at)
    assert r"\sqrt{32}" in u.texts(step(at, 3)) and r"1.00" in u.texts(at)  # √d_k and τ in the formula
    assert [c["layout"]["title"]["text"] for c in u.charts(step(at, 4))] == ["Masked scores", "Attention weights α"]
    assert step(at, 5).selectbox(key="onehead_query").value == T - 1  # the last token by default
    assert_head(at, tr, 0, 0, T - 1)


def test_default_sentence_and_every_preset(lm):
    at = step(u.run_page(PAGE), 4)
    u.assert_ok(at)
    tr = trace(lm, DEFAULT_SENTENCE)
    np.testing.assert_allclose(
        z(at, "Attention weights"),
        np.where(np.isneginf(tr["blocks.0.attn.hook_scores_masked"][0]), np.nan, tr["blocks.0.attn.hook_pattern"][0]),
        rtol=1e-6,
    )
    for name, sentence in PRESETS.items():
        at.selectbox(key="w_preset").set_value(name).run()
        u.assert_ok(at)
        tr = trace(lm, sentence)
        T = len(tr.encoding)
        # numbers in the T×T cells up to 16 tokens; beyond, the title's note says why there are none
        weights = u.chart_titled(at, "Attention weights")
        assert (weights["data"][0].get("texttemplate") == "%{z:.2f}") == (T <= 16)
        assert weights["layout"]["title"].get("subtitle", {}).get("text", "").startswith("numbers hidden") == (T > 16)
        np.testing.assert_allclose(z(step(at, 3), "Raw scores"), tr["blocks.0.attn.hook_scores_raw"][0], rtol=1e-6)
        np.testing.assert_allclose(z(step(at, 6), "Z = αV"), tr["blocks.0.attn.hook_z"][:, 0], rtol=1e-6)
        # kept from the last sentence while it fits, else the last token
        i = step(at, 5).selectbox(key="onehead_query").value
        assert i < T and u.chart_titled(at, f"Weights of query {i}")
        step(at, 4)


def test_repeated_tokens_keep_their_rows(lm):
    at = u.run_page(PAGE, sentence=REPEATED)
    labels = trace(lm).encoding.labels
    T = len(labels)
    assert len(set(labels)) < T  # the sentence really repeats a token
    maps = [c for c in every_step_chart(at) if c["data"][0]["type"] == "heatmap"]
    assert len(maps) == 10  # X; Q, K, V; raw and scaled scores; masked scores and weights; the weights; the output
    for c in maps:
        m = u.array(c["data"][0]["z"])
        assert m.shape[0] in (T, T + 1)  # T tokens, or T keys plus the sum row
        assert u.array(c["data"][0]["y"]).tolist() == list(range(m.shape[0]))
        ticks = c["layout"]["yaxis"]["ticktext"]
        assert ticks.count("␣the") == 2 and ticks.count("␣and") == 2 and len(ticks) >= T
    options = step(at, 5).selectbox(key="onehead_query").options
    assert [o for o in options if o.endswith(": ␣the")] == [f"{i}: ␣the" for i, t in enumerate(labels) if t == "␣the"]
    assert len(set(options)) == T


def test_layer_head_and_temperature_drive_the_page(lm):
    at = step(u.run_page(PAGE, sentence=REPEATED), 4)
    before = z(at, "Attention weights")
    at.slider(key="w_layer").set_value(2).run()
    at.slider(key="w_head").set_value(3).run()
    u.assert_ok(at)
    T = len(trace(lm).encoding)
    assert not np.allclose(np.nan_to_num(before), np.nan_to_num(z(at, "Attention weights")))
    assert_head(at, trace(lm), 2, 3, T - 1)
    # τ on the weights shown (the default): no block runs, the weights are softmax(S / τ) of the recorded scores
    with block_calls(shared_model(MODEL).model) as calls:
        at.slider(key="w_temperature").set_value(0.5).run()
    u.assert_ok(at)
    assert calls == [] and at.query_params["tau_every_layer"] == "False"
    masked = trace(lm)["blocks.2.attn.hook_scores_masked"][3]  # (T, T) at τ = 1, −∞ in the future
    want = np.where(np.isneginf(masked), np.nan, softmax_rows(masked, 0.5))
    np.testing.assert_allclose(z(step(at, 4), "Attention weights"), want, rtol=1e-5, atol=1e-7)
    # every step: X, Q, K, V and the raw scores as trained, the weights and Z = weights·V of layer 2 at τ alone
    assert_head(at, trace(lm, head_temperature=((2, None, 0.5),)), 2, 3, T - 1)
    assert "0.50" in u.texts(step(at, 3))  # τ in the formula
    assert "ran as trained (τ = 1)" in u.texts(step(at, 6))
    # τ in every layer: the model runs again at τ, and the link says so
    at.toggle(key="w_tau_every_layer").set_value(True).run()
    u.assert_ok(at)
    assert at.query_params["tau_every_layer"] == "True"
    assert_head(at, trace(lm, temperature=0.5), 2, 3, T - 1)
    assert "ran as trained" not in u.texts(step(at, 6))


def test_tau_in_every_layer_comes_from_the_link(lm):
    at = u.run_page(PAGE, sentence=REPEATED, layer="1", temperature="2.0", tau_every_layer="True")
    u.assert_ok(at)
    assert at.toggle(key="w_tau_every_layer").value and at.toggle(key="bar_tau_every_layer").value  # sidebar and bar
    T = len(trace(lm).encoding)
    assert_head(at, trace(lm, temperature=2.0), 1, 0, T - 1)
    for value in ("False", "yes", ""):  # anything but True: τ on the weights shown
        at = u.run_page(PAGE, sentence=REPEATED, layer="1", temperature="2.0", tau_every_layer=value)
        assert not at.toggle(key="w_tau_every_layer").value
        assert_head(at, trace(lm, head_temperature=((1, None, 2.0),)), 1, 0, T - 1)


def test_query_token_selects_the_row(lm):
    tr = trace(lm)
    i = [j for j, t in enumerate(tr.encoding.labels) if t == "␣the"][0]  # the first of two "␣the"
    at = step(u.run_page(PAGE, sentence=REPEATED), 5)
    at.selectbox(key="onehead_query").set_value(i).run()
    u.assert_ok(at)
    assert_head(at, tr, 0, 0, i)
    terms = z(at, f"α_ij·v_j for query {i}")  # assert_head leaves step 5 open
    assert np.isnan(terms[i + 1 : -1]).all() and not np.isnan(terms[: i + 1]).any()
    assert f"z_{i}" in u.texts(at)
    assert f"entropy {bits(tr['blocks.0.attn.hook_pattern'][0, i]):.3f} bits" in u.texts(at)
    # a shorter sentence keeps the choice inside it (the last token)
    at.text_area(key="w_sentence").set_value("Hi there").run()
    u.assert_ok(at)
    T = len(trace(lm, "Hi there").encoding)
    assert at.selectbox(key="onehead_query").value == T - 1 and u.chart_titled(at, f"Weights of query {T - 1}")


def test_no_scaling_equals_a_numpy_softmax_of_raw_scores(lm):
    at = step(u.run_page(PAGE, sentence=REPEATED), 4)
    scaled_weights = z(at, "Attention weights")
    at.toggle(key="onehead_scale").set_value(False).run()
    u.assert_ok(at)
    tr = trace(lm)
    raw = tr["blocks.0.attn.hook_scores_raw"][0].astype(np.float64)
    T = raw.shape[0]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    e = np.exp(np.where(future, -np.inf, raw) - raw.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(np.nan_to_num(z(at, "Attention weights")), want, rtol=1e-5, atol=1e-7)
    assert not np.allclose(np.nan_to_num(scaled_weights), want, atol=1e-4)
    assert "Scaling off" in u.texts(at)
    h0, h1 = (np.mean([bits(row) for row in np.nan_to_num(w)]) for w in (scaled_weights, z(at, "Attention weights")))
    assert f"the average entropy from {h0:.3f} to {h1:.3f} bits" in u.texts(at)
    np.testing.assert_allclose(z(step(at, 3), "Unscaled scores"), raw, rtol=1e-6)
    assert r"\text{no }" in u.texts(at)
    np.testing.assert_allclose(z(step(at, 6), "Z = αV"), want @ tr["blocks.0.attn.hook_v"][:, 0], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(
        u.array(u.chart_titled(step(at, 5), f"Weights of query {T - 1}")["data"][0]["y"]),
        want[T - 1],
        rtol=1e-5,
        atol=1e-7,
    )


def test_no_scaling_keeps_the_temperature(lm):
    at = step(u.run_page(PAGE, sentence=REPEATED, temperature="2.0"), 3)
    at.toggle(key="onehead_scale").set_value(False).run()
    raw = trace(lm, temperature=2.0)["blocks.0.attn.hook_scores_raw"][0]
    np.testing.assert_allclose(z(at, "Unscaled scores"), raw / 2, rtol=1e-6)


def test_mask_off_equals_a_trace_without_the_causal_mask(lm):
    at = u.run_page(PAGE, sentence=REPEATED)
    at.toggle(key="onehead_mask").set_value(False).run()
    u.assert_ok(at)
    tr = trace(lm, causal=False)
    T = len(tr.encoding)
    assert_head(at, tr, 0, 0, T - 1)
    weights = z(step(at, 4), "Attention weights")
    assert not np.isnan(weights).any() and weights[0, 1:].sum() > 0  # row 0 now sees the future
    assert "Mask off" in u.texts(at) and "no mask" in u.texts(at) and "In layer 0" in u.texts(at)
    # a later layer: its input X changed too, since the layers before it saw the future
    at.slider(key="w_layer").set_value(1).run()
    assert_head(at, tr, 1, 0, T - 1)
    assert not np.allclose(
        z(step(at, 1), "X = LN1 output, layer 1"), trace(lm)["blocks.1.ln1.hook_normalized"], atol=1e-4
    )
    assert "layers before 1 saw the future" in u.texts(at)


@u.EACH_BAD_INPUT
def test_bad_inputs(name, text):
    if at := u.run_typed(PAGE, text):
        figs = every_step_chart(at)
        assert len(figs) == 11
        u.assert_bad_input_drawn(at, name, figs, n_tokens=len(u.array(figs[-1]["data"][0]["z"])))


def test_hover_names_the_tokens_and_says_minus_infinity_on_masked_cells(lm):
    """Each cell's hover: its query and key tokens with their positions, and the value;
    a masked score is −∞, its weight 0."""
    at = step(u.run_page(PAGE, sentence=REPEATED), 4)
    u.assert_ok(at)
    tr = trace(lm)
    labels, masked = tr.encoding.labels, np.isneginf(tr["blocks.0.attn.hook_scores_masked"][0])
    titles = ("Masked scores", "Attention weights α")
    scores, weights = (u.chart_titled(at, title)["data"][0]["text"] for title in titles)
    for i, j in [(0, 1), (2, 5), (len(labels) - 1, 0), (3, 3)]:
        where = f"{labels[i]} (row {i}) → {labels[j]} (col {j})"
        assert scores[i][j].startswith(where) and weights[i][j].startswith(where)
        if masked[i, j]:
            assert "score = −∞" in scores[i][j] and "weight = 0 " in weights[i][j] and "−∞" in weights[i][j]
        else:
            assert (
                "−∞" not in scores[i][j]
                and f"weight = {tr['blocks.0.attn.hook_pattern'][0, i, j]:.4g}" in weights[i][j]
            )
    assert masked[0, 1] and not masked[3, 3]  # both kinds of cell were checked


def test_what_the_head_does_gives_its_scores_measured_by_hand(lm):
    """The expander names the head's measured scores: previous-token and self weight on the probe, recomputed here."""
    at = u.run_page(PAGE, layer="1", head="2")
    u.assert_ok(at)
    # (4, 2·half)
    ids = hs.probe_ids(hs.allowed_ids(lm.tokenizer, lm.cfg.vocab_size), min(hs.PROBE_HALF, lm.cfg.n_ctx // 2))
    rec = {}
    with torch.inference_mode():
        lm.model(torch.as_tensor(ids), rec=rec)
    w = rec["blocks.1.attn.hook_pattern"][:, 2].double().numpy()  # (4, T, T)
    T = w.shape[-1]
    previous = np.mean([w[b, i, i - 1] for b in range(len(w)) for i in range(1, T)])
    itself = np.mean([w[b, i, i] for b in range(len(w)) for i in range(1, T)])
    text = u.texts(at)
    assert "What layer 1, head 2 does in general (measured)" in [e.label for e in at.expander]
    assert f"previous token {previous:.2f}" in text and f"self {itself:.2f}" in text
