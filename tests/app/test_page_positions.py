"""The Positional encoding page through AppTest: the sinusoid figures against the formula, the
sentence figures against the trace."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import streamlit as st

import ui.models
from tests import apptest_utils as u
from tests.conftest import randomize
from transformer import GPT, ModelConfig, loading, sinusoidal_encoding
from transformer.loading import LoadedModel
from transformer.trace import run_trace

PAGE = u.page_path("2_Positional_encoding")
SENTENCE_KEYS = ("positions_sum_embed", "positions_sum_pos", "positions_sum_input")


@pytest.fixture(scope="module")
def default_page():
    at = u.run_page(PAGE)
    u.assert_ok(at)
    return at


def z_of(at, key: str) -> np.ndarray:
    return u.array(u.chart(at, key)["data"][0]["z"])


def formula_pe(n_pos: int, d: int) -> np.ndarray:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(…), cell by cell."""
    pe = np.zeros((n_pos, d))
    for pos in range(n_pos):
        for i in range(d // 2):
            pe[pos, 2 * i] = math.sin(pos / 10000 ** (2 * i / d))
            pe[pos, 2 * i + 1] = math.cos(pos / 10000 ** (2 * i / d))
    return pe


# ---- sinusoids: no sentence needed -----------------------------------------------------------------------


def test_encoding_heatmap_is_the_formula(default_page, lm):
    d, n = default_page.slider(key="positions_d").value, default_page.slider(key="positions_length").value
    assert d == lm.cfg.d_model and n == 64
    z = z_of(default_page, "positions_pe")
    np.testing.assert_allclose(z, formula_pe(n, d), atol=1e-6)
    np.testing.assert_array_equal(z, sinusoidal_encoding(n, d).numpy())


def test_waves_are_columns_of_the_encoding(default_page):
    dims = default_page.multiselect(key="positions_dims").value
    assert dims == [0, 1, 6, 64]
    pe = formula_pe(64, 128)
    traces = u.chart(default_page, "positions_waves")["data"]
    assert [t["name"] for t in traces] == ["dim 0 (sin)", "dim 1 (cos)", "dim 6 (sin)", "dim 64 (sin)"]
    for t, dim in zip(traces, dims, strict=True):
        np.testing.assert_allclose(u.array(t["y"]), pe[:, dim], atol=1e-6)
    assert f"dim 64: {2 * math.pi * 10000 ** (64 / 128):,.1f}" in u.texts(default_page)


def test_binary_counter_next_to_the_same_positions(default_page):
    bits = z_of(default_page, "positions_bits")
    assert bits.shape == (16, 4)
    for pos in range(16):
        assert "".join(str(int(b)) for b in bits[pos][::-1]) == format(pos, "04b")
    np.testing.assert_allclose(z_of(default_page, "positions_pe_rows"), formula_pe(16, 128)[:, :32], atol=1e-6)


def test_position_similarity_is_pe_dot_pe(default_page):
    pe = formula_pe(64, 128)
    sim = z_of(default_page, "positions_similarity")
    np.testing.assert_allclose(sim, pe @ pe.T, atol=1e-4)
    np.testing.assert_allclose(np.diag(sim), 64, atol=1e-4)  # |PE_i|² = d/2: one sin² + cos² per pair
    np.testing.assert_allclose(sim[3, 10], sim[20, 27], atol=1e-4)  # depends only on the distance


def test_formulas_are_shown(default_page):
    latex = " ".join(el.value for el in default_page.get("latex"))
    assert r"\sin" in latex and r"\cos" in latex and "10000^{2i/d}" in latex and "PE_i \\cdot PE_j" in latex


def test_d_slider_changes_every_sinusoid_figure():
    at = u.run_page(PAGE)
    at.slider(key="positions_d").set_value(16).run()
    u.assert_ok(at)
    np.testing.assert_allclose(z_of(at, "positions_pe"), formula_pe(64, 16), atol=1e-6)
    assert at.multiselect(key="positions_dims").value == [0, 1, 6]  # dimension 64 no longer exists
    assert len(u.chart(at, "positions_waves")["data"]) == 3
    pe = formula_pe(64, 16)
    np.testing.assert_allclose(z_of(at, "positions_similarity"), pe @ pe.T, atol=1e-4)
    np.testing.assert_allclose(z_of(at, "positions_pe_rows"), pe[:16], atol=1e-6)  # d = 16 < 32: every dimension


def test_length_slider_changes_the_positions():
    at = u.run_page(PAGE)
    at.slider(key="positions_length").set_value(10).run()
    u.assert_ok(at)
    assert z_of(at, "positions_pe").shape == (10, 128)
    assert z_of(at, "positions_similarity").shape == (10, 10)
    assert z_of(at, "positions_bits").shape == (10, 4)  # 10 positions need 4 bits
    assert len(u.array(u.chart(at, "positions_waves")["data"][0]["y"])) == 10


def test_dimension_multiselect_changes_the_waves():
    at = u.run_page(PAGE)
    at.multiselect(key="positions_dims").unselect(64).select(100).run()
    u.assert_ok(at)
    traces = u.chart(at, "positions_waves")["data"]
    assert [t["name"] for t in traces] == ["dim 0 (sin)", "dim 1 (cos)", "dim 6 (sin)", "dim 100 (sin)"]
    np.testing.assert_allclose(u.array(traces[3]["y"]), formula_pe(64, 128)[:, 100], atol=1e-6)
    for d in (0, 1, 6, 100):
        at.multiselect(key="positions_dims").unselect(d)
    at.run()
    assert "positions_waves" not in u.chart_keys(at) and "Pick at least one dimension" in u.texts(at)


# ---- the sentence: trace tensors ------------------------------------------------------------------------


def test_three_panels_are_the_trace_and_add_up(default_page, lm):
    tr = run_trace(lm.model, lm.tokenizer, default_page.text_area(key="w_sentence").value)
    embed, pos, inp = (z_of(default_page, k) for k in SENTENCE_KEYS)
    np.testing.assert_array_equal(embed, tr["hook_embed"])
    np.testing.assert_array_equal(pos, tr["hook_pos_embed"])
    np.testing.assert_array_equal(inp, tr["blocks.0.hook_resid_pre"])
    np.testing.assert_allclose(inp, embed + pos, atol=1e-6)
    T = len(tr.encoding)
    np.testing.assert_array_equal(pos, lm.model.W_pos[:T].numpy())
    # the bundled model's positions are the sinusoids
    np.testing.assert_allclose(pos, formula_pe(T, lm.cfg.d_model), atol=1e-6)
    assert "uses the fixed sinusoids" in u.texts(default_page) and "largest difference 0" in u.texts(default_page)


def test_bundled_model_positions_equal_sinusoidal_encoding(lm):
    np.testing.assert_array_equal(lm.model.W_pos.numpy(), sinusoidal_encoding(lm.cfg.n_ctx, lm.cfg.d_model).numpy())


@pytest.fixture
def learned_model(tokenizer, monkeypatch):
    """A random learned-position model served under the bundled name, then restored."""
    cfg = ModelConfig(
        vocab_size=tokenizer.vocab_size, n_ctx=64, d_model=32, n_layer=2, n_head=2, d_mlp=64, pos_encoding="learned"
    )  # 2 layers: the sidebar cannot show a 1-layer slider
    fake = LoadedModel("shakespeare-gpt", Path("learned-test"), randomize(GPT(cfg), seed=3), tokenizer, "")
    real = ui.models.get_model("shakespeare-gpt")
    loading._REGISTRY["shakespeare-gpt"] = fake
    st.cache_resource.clear()  # figures are cached by model name
    monkeypatch.setattr(ui.models, "TRACES", ui.models.TraceCache(budget=2**20))  # and traces
    yield fake
    loading._REGISTRY["shakespeare-gpt"] = real
    st.cache_resource.clear()


def test_learned_positions_differ_from_sinusoids(learned_model):
    at = u.run_page(PAGE)
    u.assert_ok(at)
    assert "*learned* its 64 position vectors" in u.texts(at)
    tr = run_trace(learned_model.model, learned_model.tokenizer, at.text_area(key="w_sentence").value)
    T = len(tr.encoding)
    pos = z_of(at, "positions_sum_pos")
    np.testing.assert_array_equal(pos, learned_model.model.W_pos[:T].numpy())
    assert not np.allclose(pos, sinusoidal_encoding(T, 32).numpy(), atol=0.1)
    np.testing.assert_allclose(z_of(at, "positions_sum_input"), pos + z_of(at, "positions_sum_embed"), atol=1e-6)
    assert at.slider(key="positions_d").value == 32


def test_sentence_change_changes_the_panels(lm):
    at = u.run_page(PAGE)
    before = z_of(at, "positions_sum_input")
    at.text_area(key="w_sentence").set_value("Fruit flies like a banana.").run()
    u.assert_ok(at)
    tr = run_trace(lm.model, lm.tokenizer, "Fruit flies like a banana.")
    after = z_of(at, "positions_sum_input")
    assert after.shape != before.shape
    np.testing.assert_array_equal(after, tr["blocks.0.hook_resid_pre"])


def test_attention_temperature_does_not_change_the_input(lm):
    """Embeddings and positions come before any attention: the sidebar's τ leaves these panels as they are."""
    at = u.run_page(PAGE)
    before = [z_of(at, k) for k in SENTENCE_KEYS]
    at.slider(key="w_temperature").set_value(2.0).run()
    u.assert_ok(at)
    for key, z in zip(SENTENCE_KEYS, before, strict=True):
        np.testing.assert_array_equal(z_of(at, key), z)


def test_repeated_token_keeps_both_rows(lm):
    at, labels, the = u.run_repeated(PAGE, lm.tokenizer)
    embed, pos, inp = (z_of(at, k) for k in SENTENCE_KEYS)
    for z in (embed, pos, inp):
        assert z.shape[0] == len(labels)
    np.testing.assert_array_equal(embed[the[0]], embed[the[1]])  # same token, same embedding …
    assert not np.allclose(inp[the[0]], inp[the[1]])  # … but a different input, thanks to its position
    assert u.chart(at, "positions_sum_input")["layout"]["yaxis"]["tickvals"] == list(range(len(labels)))


@u.EACH_BAD_INPUT
def test_bad_inputs(name, text):
    at = u.run_page(PAGE, sentence=text)
    u.assert_ok(at)
    keys = set(u.chart_keys(at))
    # the sinusoids need no sentence
    assert {"positions_pe", "positions_waves", "positions_bits", "positions_similarity"} <= keys
    if not text.strip():
        assert not keys & set(SENTENCE_KEYS) and "type" in u.texts(at).lower()
        return
    assert set(SENTENCE_KEYS) <= keys
    if name == "very_long":
        assert "reads at most 256" in u.texts(at) and z_of(at, "positions_sum_input").shape == (256, 128)
    shown = " ".join(json.dumps(u.chart(at, key), ensure_ascii=False) for key in SENTENCE_KEYS)
    assert "<script" not in shown and "<img" not in shown
    if name in ("script", "img"):
        assert "&lt;" in shown


def test_positions_help_texts(default_page):
    for widget in (
        default_page.slider(key="positions_d"),
        default_page.slider(key="positions_length"),
        default_page.multiselect(key="positions_dims"),
    ):
        assert widget.help
