"""The "RoPE and shared key/value heads" page through AppTest: on the bundled GPT (no RoPE, no shared heads: it says
so), and on a small random Llama checkpoint (RoPE, 6 query heads sharing 2 key/value heads) opened from a model folder;
every number drawn is checked against the trace and hand-written formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ui.models
from transformer import run_trace
from transformer.loading import MODEL_DIRS_ENV, load_model

from ..apptest_utils import (
    BAD_INPUTS,
    array,
    assert_ok,
    chart,
    charts_by_key,
    open_tab,
    page_path,
    run_page,
    run_typed,
    texts,
)
from ..lessons.test_rope_gqa import SENTENCE, THETA, write_llama

PAGE = page_path("13_RoPE_and_shared_heads")
TABS = "rope_part"


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    """A model folder the app may open ($ATLAS_MODEL_DIRS) holding a tiny random Llama;
    yields its path as the picker names it."""
    root = tmp_path_factory.mktemp("models")
    path = write_llama(root / "tiny-llama")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(MODEL_DIRS_ENV, str(root))
        ui.models.model_choices.clear()
        yield str(path.resolve())
    ui.models.model_choices.clear()


@pytest.fixture(scope="module")
def llama(llama_dir):
    return load_model(llama_dir)


@pytest.fixture(scope="module")
def trace(llama):
    return run_trace(llama.model, llama.tokenizer, SENTENCE)


def llama_page(llama_dir, tab: str | None = None, **query):
    at = run_page(PAGE, model=llama_dir, sentence=SENTENCE, **query)
    assert_ok(at)
    return at if tab is None else open_tab(at, TABS, tab)


def test_gpt_says_it_has_no_rope_and_no_shared_heads(lm):
    at = run_page(PAGE)
    assert_ok(at)
    assert at.selectbox(key="w_model").value == "shakespeare-gpt"
    for tab in ("1 ·", "2 ·", "3 ·"):
        open_tab(at, TABS, tab)
        assert_ok(at)
        assert "adds a position vector to each token instead: see *Positional encoding*" in at.info[0].value
        (key,) = charts_by_key(at)  # only what it adds instead: the trace's position vectors
        tr = run_trace(lm.model, lm.tokenizer, at.text_area(key="w_sentence").value)
        np.testing.assert_allclose(array(chart(at, key)["data"][0]["z"]), tr["hook_pos_embed"], atol=1e-6)
    open_tab(at, TABS, "4 ·")
    assert_ok(at)
    np.testing.assert_array_equal(array(chart(at, "gqa_table")["data"][0]["z"]), np.eye(4))
    assert "every head has its own keys" in texts(at) and "gqa_patterns" not in charts_by_key(at)


def test_angle_table_is_m_times_omega(llama_dir):
    at = llama_page(llama_dir)
    assert not at.info  # a RoPE model: no "not applicable" message
    fig = chart(at, "rope_angles")["data"][0]
    raw, wrapped = array(fig["customdata"]), array(fig["z"])
    assert raw.shape == (64, 4)  # 64 positions, d_head 8 → 4 pairs
    want = np.array([[m * THETA ** (-2 * i / 8) for i in range(4)] for m in range(64)])
    np.testing.assert_allclose(raw, want, rtol=1e-6)
    np.testing.assert_allclose(wrapped, np.mod(want, 2 * math.pi), atol=1e-4)
    np.testing.assert_allclose(
        array(chart(at, "rope_waves")["data"][0]["y"]),
        [2 * math.pi * THETA ** (2 * i / 8) for i in range(4)],
        rtol=1e-5,
    )
    at.slider(key="rope_npos").set_value(200).run()
    assert_ok(at)
    assert array(chart(at, "rope_angles")["data"][0]["customdata"]).shape == (200, 4)


def test_query_and_key_before_and_after_turning(llama_dir, trace):
    at = llama_page(llama_dir, "2 ·", layer="1", head="4")
    T = len(trace.encoding)
    assert at.selectbox(key="rope_m").value == T - 1 and at.selectbox(key="rope_n").value == 0
    at.selectbox(key="rope_m").set_value(8).run()
    at.selectbox(key="rope_n").set_value(3).run()
    assert_ok(at)
    a = "blocks.1.attn."
    rows = array(chart(at, "rope_vectors")["data"][0]["z"])  # q, q turned, k, k turned; head 4 reads K/V head 1
    want = [
        trace[a + "hook_q"][8, 4],
        trace[a + "hook_rot_q"][8, 4],
        trace[a + "hook_k"][3, 1],
        trace[a + "hook_rot_k"][3, 1],
    ]
    np.testing.assert_allclose(rows, want, atol=1e-5)
    assert "K/V head 1" in chart(at, "rope_vectors")["layout"]["title"]["text"]
    bars = array(chart(at, "rope_pair_bars")["data"][0]["y"])
    assert bars.sum() == pytest.approx(float(trace[a + "hook_scores_raw"][4, 8, 3]), abs=1e-4)
    clocks = chart(at, "rope_clocks")
    assert len(clocks["data"]) == 3 * 4  # 4 hands in each default pair: 0, 1 (= 4 // 4), 3
    q_turned = [d for d in clocks["data"] if d["name"].startswith("q_m after")][0]
    # pair 0 = (dim 0, dim 4)
    np.testing.assert_allclose(array(q_turned["x"])[1], trace[a + "hook_rot_q"][8, 4][0], atol=1e-5)
    np.testing.assert_allclose(array(q_turned["y"])[1], trace[a + "hook_rot_q"][8, 4][4], atol=1e-5)
    at.multiselect(key="rope_pairs").set_value([2]).run()
    assert_ok(at)
    assert len(chart(at, "rope_clocks")["data"]) == 4


def test_shift_keeps_the_score_and_moving_the_query_alone_does_not(llama_dir, trace):
    at = llama_page(llama_dir, "3 ·", layer="1", head="2")
    at.selectbox(key="rope_m").set_value(9).run()
    at.selectbox(key="rope_n").set_value(4).run()
    assert_ok(at)
    score = float(trace["blocks.1.attn.hook_scores_raw"][2, 9, 4])
    lines = {d["name"].split(":")[0]: d for d in chart(at, "rope_shift_chart")["data"]}
    both, alone = array(lines["both move"]["y"]), array(lines["only the query moves"]["y"])
    assert array(lines["both move"]["x"])[0] == -4  # no position below 0
    np.testing.assert_allclose(both, score, atol=1e-4)
    assert np.ptp(alone) > 0.05
    assert at.slider(key="rope_shift").value == 100
    at.slider(key="rope_shift").set_value(37).run()
    assert_ok(at)
    m = at.metric
    assert float(m[0].value) == pytest.approx(score, abs=1e-4) and float(m[1].value) == pytest.approx(score, abs=1e-4)
    assert float(m[2].value) == pytest.approx(float(alone[37 + 4]), abs=1e-4) and "moved by 37" in m[2].label
    dots = [d for d in chart(at, "rope_shift_chart")["data"] if d["name"] == "s = 37"]
    assert len(dots) == 1
    at.selectbox(key="rope_n").set_value(1).run()  # the lowest shift follows: −min(m, n) = −1
    assert_ok(at)
    assert at.slider(key="rope_shift").min == -1


def test_shared_heads_of_a_group(llama_dir, trace):
    at = llama_page(llama_dir, "4 ·", layer="1", head="4")
    z = array(chart(at, "gqa_table")["data"][0]["z"])
    np.testing.assert_array_equal(z, [[1, 0]] * 3 + [[0, 1]] * 3)
    assert at.selectbox(key="gqa_group").value == 1  # head 4 reads K/V head 1
    pats = [array(d["z"]) for d in chart(at, "gqa_patterns")["data"]]
    p = trace["blocks.1.attn.hook_pattern"]
    for got, h in zip(pats, (3, 4, 5), strict=True):
        np.testing.assert_allclose(np.nan_to_num(got), p[h], atol=1e-6)
    keys = [array(d["z"]) for d in chart(at, "gqa_keys")["data"]]
    np.testing.assert_allclose(keys, trace["blocks.1.attn.hook_rot_k"].transpose(1, 0, 2), atol=1e-6)
    values = [array(d["z"]) for d in chart(at, "gqa_values")["data"]]
    np.testing.assert_allclose(values, trace["blocks.1.attn.hook_v"].transpose(1, 0, 2), atol=1e-6)
    at.selectbox(key="gqa_group").set_value(0).run()
    assert_ok(at)
    pats = [array(d["z"]) for d in chart(at, "gqa_patterns")["data"]]
    np.testing.assert_allclose(np.nan_to_num(pats[0]), p[0], atol=1e-6)
    assert "differ by" in texts(at)


def test_sidebar_layer_head_and_sentence_drive_the_page(llama_dir, llama):
    at = llama_page(llama_dir, "2 ·")
    at.slider(key="w_layer").set_value(1).run()
    at.slider(key="w_head").set_value(5).run()
    at.text_area(key="w_sentence").set_value("the cat sat on the mat").run()
    assert_ok(at)
    tr = run_trace(llama.model, llama.tokenizer, "the cat sat on the mat")
    T = len(tr.encoding)
    assert at.selectbox(key="rope_m").value == T - 1 and len(at.selectbox(key="rope_m").options) == T
    rows = array(chart(at, "rope_vectors")["data"][0]["z"])
    np.testing.assert_allclose(rows[1], tr["blocks.1.attn.hook_rot_q"][T - 1, 5], atol=1e-5)


GPT_BAD = [b for b in BAD_INPUTS if b[0] in ("empty", "whitespace", "emoji", "control", "script", "img")]


@pytest.mark.parametrize("name,text", GPT_BAD, ids=[n for n, _ in GPT_BAD])
def test_bad_inputs_on_gpt(name, text):
    at = run_typed(PAGE, text)
    if at is not None:
        open_tab(at, TABS, "4 ·")
        assert_ok(at)
        assert "<script" not in str(charts_by_key(at)) and "<img" not in str(charts_by_key(at))


@pytest.mark.parametrize("text", ["", "   ", "I love 🐻 bears 🐻‍❄️!", "<script>alert(1)</script>", "a"])
def test_bad_inputs_on_llama(llama_dir, text):
    at = llama_page(llama_dir)
    at.text_area(key="w_sentence").set_value(text).run()
    assert_ok(at)
    if not text.strip():
        assert at.info and ("empty" in texts(at) or "whitespace" in texts(at)) and not charts_by_key(at)
        return
    for tab in ("2 ·", "3 ·", "4 ·"):
        open_tab(at, TABS, tab)
        assert_ok(at)
        assert charts_by_key(at) and "<script" not in str(charts_by_key(at))


@pytest.mark.slow
def test_switching_to_smollm2_and_its_numbers():
    """The button on a GPT opens SmolLM2 (9 query heads, 3 key/value heads, θ = 100000)."""
    at = run_page(PAGE, sentence=SENTENCE, layer="13", head="3")
    at.button(key="rope_switch").click().run()
    assert_ok(at)
    assert at.selectbox(key="w_model").value == "smollm2-135m" and not at.info
    assert array(chart(at, "rope_waves")["data"][0]["y"])[0] == pytest.approx(2 * math.pi, rel=1e-6)
    open_tab(at, TABS, "3 ·")
    both = array({d["name"].split(":")[0]: d for d in chart(at, "rope_shift_chart")["data"]}["both move"]["y"])
    assert np.ptp(both) < 1e-3 * max(1.0, abs(float(both[0])))
    open_tab(at, TABS, "4 ·")
    head = at.slider(key="w_head").value  # the GPT's 4 heads clamped head 8 to 3 before the switch
    assert (
        array(chart(at, "gqa_table")["data"][0]["z"]).shape == (9, 3)
        and at.selectbox(key="gqa_group").value == head // 3
    )
