"""The next-token page: bars = softmax(z/T) of the trace, filters = an independent reference,
seeded generation, the logit lens."""

from __future__ import annotations

import html
import json
import statistics
import time

import numpy as np
import pytest

import ui
from lessons import sampling
from lessons.logit_lens import logit_lens
from lessons.words import percent
from tests.apptest_utils import BAD_INPUTS, array, assert_ok, charts_by_key, open_tab, page_path, run_page, texts
from tests.conftest import CORPUS
from transformer import Interventions, run_trace

PAGE = page_path("9_Next_token")
MODEL = "shakespeare-gpt"
REPEATED = "the cat and the dog"
PARTS = "next_part"  # the page's lazy tabs: 1 · probabilities (open first), 2 · generation, 3 · the logit lens


@pytest.fixture(scope="module")
def lm():
    return ui.get_model(MODEL)


@pytest.fixture(scope="module")
def text_of(lm):
    """text_of(n): a Shakespeare passage exactly n tokens long (the corpus is read when a test first asks)."""
    passage = CORPUS.read_text(encoding="utf-8")[:20_000]
    ends = [end for _, end in lm.tokenizer.encode(passage).offsets]

    def cut(n: int) -> str:
        text = passage[: ends[n - 1]]
        assert len(lm.tokenizer.encode(text)) == n
        return text

    return cut


def trace(lm, text=REPEATED, tau=1.0):
    return run_trace(lm.model, lm.tokenizer, text, Interventions(temperature=tau))


def np_softmax(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def series(fig: dict, i: int) -> np.ndarray:
    return array(fig["data"][i]["y"]).astype(np.float64)


def reference(logits: np.ndarray, T: float, k: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """Independent reference over the full vocabulary: softmax(z/T) (T = 0: one-hot), numpy
    sort + cumulative sum, renormalise."""
    z = np.asarray(logits, dtype=np.float64)
    if T == 0:
        q = np.zeros_like(z)
        q[z.argmax()] = 1.0
    else:
        q = np.exp((z - z.max()) / T)
        q /= q.sum()
    order = np.argsort(-q, kind="stable")
    n = len(q) if k == 0 else k
    if p < 1:
        n = min(n, int(np.argmax(np.cumsum(q[order]) >= p)) + 1)
    out = np.zeros_like(q)
    out[order[:n]] = q[order[:n]] / q[order[:n]].sum()
    return q, out


def assert_bars(at, z: np.ndarray, T: float, k: int, p: float, n_bars: int = 12):
    """The bar chart shows the n most probable tokens: p = softmax(z/T) and p′ after the filters."""
    q, filtered = reference(z, T, k, p)
    top = np.argsort(-q, kind="stable")[:n_bars]
    fig = charts_by_key(at)["next_bars_chart"]
    np.testing.assert_allclose(series(fig, 0), q[top], rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(series(fig, 1), filtered[top], rtol=1e-5, atol=1e-12)
    table = at.dataframe[0].value
    assert table["id"].tolist() == top.tolist()
    np.testing.assert_allclose(table["logit z"], z[top], rtol=1e-6)
    assert at.metric[0].value == f"{np.count_nonzero(filtered):,}"
    assert at.metric[1].value == f"{100 * q[filtered > 0].sum():.1f}%"  # ≥ the top token's p: never below 0.1 %
    return q, filtered, top


def timeline(at) -> list[int]:
    """The generated token ids shown in the timeline table."""
    tables = [d.value for d in at.dataframe if "top candidates" in d.value.columns]
    return tables[0]["id"].tolist() if tables else []


# ---- 1: logits → probabilities ----


def test_default_bars_are_softmax_of_the_trace(lm):
    at = run_page(PAGE, sentence=REPEATED)
    assert_ok(at)
    tr = trace(lm)
    T = len(tr.encoding)
    assert at.selectbox(key="next_position").value == T - 1
    _, _, top = assert_bars(at, tr["logits"][-1], 1.0, 0, 0.9)
    fig = charts_by_key(at)["next_bars_chart"]
    vocab = lm.tokenizer.vocab_labels()
    assert (
        fig["data"][0]["text"]
        == [vocab[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for i in top]
    )
    assert "softmax" in texts(at) and r"S_k \cap S_p" in texts(at)


def test_temperature_slider(lm):
    at = run_page(PAGE, sentence=REPEATED)
    z = trace(lm)["logits"][-1]
    before = series(charts_by_key(at)["next_bars_chart"], 0)
    at.slider(key="next_temperature").set_value(0.5).run()
    assert_ok(at)
    q, _, _ = assert_bars(at, z, 0.5, 0, 0.9)
    assert q.max() > before.max()  # sharper
    at.slider(key="next_temperature").set_value(2.5).run()
    assert_bars(at, z, 2.5, 0, 0.9)
    at.slider(key="next_temperature").set_value(0.0).run()  # greedy
    q, filtered, _ = assert_bars(at, z, 0.0, 0, 0.9)
    assert series(charts_by_key(at)["next_bars_chart"], 0)[0] == 1.0 and at.metric[0].value == "1"
    assert "greedy" in texts(at)


@pytest.mark.parametrize("k", [1, 5, 40])
def test_top_k_slider(lm, k):
    at = run_page(PAGE, sentence=REPEATED)
    at.slider(key="next_top_p").set_value(1.0)
    at.slider(key="next_top_k").set_value(k).run()
    assert_ok(at)
    _, filtered, _ = assert_bars(at, trace(lm)["logits"][-1], 1.0, k, 1.0)
    assert np.count_nonzero(filtered) == k and at.metric[0].value == str(k)


@pytest.mark.parametrize(("p", "k"), [(0.0, 0), (0.05, 0), (0.5, 0), (0.5, 3), (1.0, 0)])
def test_top_p_slider(lm, p, k):
    at = run_page(PAGE, sentence=REPEATED)
    at.slider(key="next_top_k").set_value(k)
    at.slider(key="next_top_p").set_value(p).run()
    assert_ok(at)
    _, filtered, _ = assert_bars(at, trace(lm)["logits"][-1], 1.0, k, p)
    if p == 0.0:
        assert np.count_nonzero(filtered) == 1  # always at least one token
    if p == 1.0:
        assert np.count_nonzero(filtered) == lm.cfg.vocab_size  # the whole vocabulary


def test_bars_slider_and_position(lm):
    at = run_page(PAGE, sentence=REPEATED)
    tr = trace(lm)
    at.slider(key="next_bars").set_value(25).run()
    assert len(series(charts_by_key(at)["next_bars_chart"], 0)) == 25
    assert_bars(at, tr["logits"][-1], 1.0, 0, 0.9, n_bars=25)
    at.selectbox(key="next_position").set_value(1).run()
    assert_ok(at)
    q, filtered, _ = assert_bars(at, tr["logits"][1], 1.0, 0, 0.9, n_bars=25)
    nxt = tr.encoding.ids[2]
    rank = int(np.flatnonzero(np.argsort(-q, kind="stable") == nxt)[0]) + 1
    kept = "kept" if filtered[nxt] > 0 else "dropped"
    assert f"has p = {percent(q[nxt])}, rank {rank:,} of {lm.cfg.vocab_size:,}: {kept}" in texts(at)
    assert "After position 1" in charts_by_key(at)["next_bars_chart"]["layout"]["title"]["text"]


def test_position_follows_the_last_token_when_the_sentence_changes(lm):
    at = run_page(PAGE, sentence="the cat")
    T = len(trace(lm, "the cat").encoding)
    assert at.selectbox(key="next_position").value == T - 1
    at.text_area(key="w_sentence").set_value(REPEATED).run()
    tr = trace(lm)
    assert at.selectbox(key="next_position").value == len(tr.encoding) - 1
    assert_bars(at, tr["logits"][-1], 1.0, 0, 0.9)
    at.selectbox(key="next_position").set_value(0).run()
    at.text_area(key="w_sentence").set_value("the cat sat on the mat").run()
    assert at.selectbox(key="next_position").value == 0  # a chosen earlier position stays


# ---- 2: generation ----


def generate_on_page(sentence: str, seed: int, n: int, temperature: float = 1.0, top_p: float = 0.9):
    at = open_tab(run_page(PAGE, sentence=sentence), PARTS, "2 ·")
    at.number_input(key="next_seed").set_value(seed)
    at.slider(key="next_n").set_value(n)
    at.slider(key="next_temperature").set_value(temperature)
    at.slider(key="next_top_p").set_value(top_p).run()
    at.button(key="next_many").click().run()
    assert_ok(at)
    return at


def test_generation_is_reproducible_through_the_page_and_the_engine(lm):
    a = generate_on_page(REPEATED, seed=3, n=8, temperature=1.5, top_p=1.0)
    b = generate_on_page(REPEATED, seed=3, n=8, temperature=1.5, top_p=1.0)
    c = generate_on_page(REPEATED, seed=4, n=8, temperature=1.5, top_p=1.0)
    want = sampling.generate(lm.model, lm.tokenizer, REPEATED, 8, 1.5, 0, 1.0, seed=3)
    assert timeline(a) == timeline(b) == [s.id for s in want.steps]
    # checked on the bundled model: seeds 3 and 4 differ at every step; at T = 1.5 over the full vocabulary
    # eight equal draws in a row are vanishingly unlikely for any model
    assert timeline(c) != timeline(a)
    progress = a.get("progress")[0].proto
    assert progress.value == 100 and progress.text == "Token 8 of 8"
    assert a.code[0].value == want.text_at(8) and a.slider(key="next_step").value == 8
    # the step's bars are its top candidates; the first step's equal section 1's bars (same settings, last position)
    step = want.steps[-1]
    fig = charts_by_key(a)["next_step_bars"]
    np.testing.assert_allclose(series(fig, 0), [c.prob for c in step.top], rtol=1e-5)
    np.testing.assert_allclose(series(fig, 1), [c.filtered for c in step.top], rtol=1e-5)
    table = [d.value for d in a.dataframe if "top candidates" in d.value.columns][0]
    np.testing.assert_allclose(table["p"], [s.prob for s in want.steps], rtol=1e-6)
    np.testing.assert_allclose(table["u"], [s.u for s in want.steps], rtol=1e-12)
    open_tab(a, PARTS, "1 ·")
    np.testing.assert_allclose(
        [c.prob for c in want.steps[0].top], series(charts_by_key(a)["next_bars_chart"], 0)[:5], rtol=1e-5
    )


def test_one_token_at_a_time_equals_n_at_once(lm):
    at = open_tab(run_page(PAGE, sentence=REPEATED), PARTS, "2 ·")
    at.number_input(key="next_seed").set_value(3).run()
    for i in range(4):
        at.button(key="next_one").click().run()
        assert_ok(at)
        assert at.get("progress")[0].proto.text == "Token 1 of 1"
        assert len(timeline(at)) == i + 1
    want = sampling.generate(lm.model, lm.tokenizer, REPEATED, 4, 1.0, 0, 0.9, seed=3)
    assert timeline(at) == [s.id for s in want.steps]


def test_generation_never_touches_the_sidebar_sentence_until_use(lm):
    at = generate_on_page(REPEATED, seed=0, n=5)
    assert at.session_state["atlas_sentence"] == REPEATED
    assert at.text_area(key="w_sentence").value == REPEATED
    assert at.query_params["sentence"] == REPEATED
    ids = timeline(at)
    want = REPEATED + lm.tokenizer.decode(ids[:2])
    # step back to step 2: the text at that step
    at.slider(key="next_step").set_value(2).run()
    assert at.code[0].value == want
    assert at.session_state["atlas_sentence"] == REPEATED
    at.button(key="next_use").click().run()
    assert_ok(at)
    assert at.session_state["atlas_sentence"] == want and at.text_area(key="w_sentence").value == want
    assert timeline(at) == []  # a new sentence starts a new timeline
    assert_bars(open_tab(at, PARTS, "1 ·"), trace(lm, want)["logits"][-1], 1.0, 0, 0.9)


def test_step_back_continue_and_reset(lm):
    at = generate_on_page(REPEATED, seed=5, n=6, temperature=1.5, top_p=1.0)
    full = timeline(at)
    at.slider(key="next_step").set_value(2).run()
    at.button(key="next_cut").click().run()
    assert_ok(at)
    assert timeline(at) == full[:2] and at.slider(key="next_step").value == 2
    at.slider(key="next_n").set_value(4).run()
    at.button(key="next_many").click().run()
    assert timeline(at) == full  # the same seed replays the same tokens from there
    at.number_input(key="next_seed").set_value(6).run()
    at.slider(key="next_step").set_value(2).run()
    at.button(key="next_cut").click().run()
    at.button(key="next_many").click().run()
    branch = timeline(at)
    assert branch[:2] == full[:2] and branch != full  # another seed branches off (checked: all 4 new tokens differ)
    at.slider(key="next_step").set_value(0).run()
    assert at.code[0].value == REPEATED and "next_step_bars" not in charts_by_key(at)
    at.button(key="next_reset").click().run()
    assert_ok(at)
    assert timeline(at) == [] and not at.get("code")


def test_context_length_stop(lm, text_of):
    n_ctx = lm.cfg.n_ctx
    at = generate_on_page(text_of(n_ctx - 3), seed=0, n=10)
    assert len(timeline(at)) == 3
    assert "no further token fits" in texts(at)
    assert at.button(key="next_one").proto.disabled and at.button(key="next_many").proto.disabled
    at.slider(key="next_step").set_value(1).run()
    at.button(key="next_cut").click().run()
    assert not at.button(key="next_one").proto.disabled and "no further token fits" not in texts(at)
    full = open_tab(run_page(PAGE, sentence=text_of(n_ctx)), PARTS, "2 ·")
    assert_ok(full)
    assert full.button(key="next_many").proto.disabled and "no further token fits" in texts(full)


def test_repeated_tokens_generate_and_keep_their_columns(lm):
    at = generate_on_page("the the the the", seed=0, n=5, temperature=0.0)
    tr = trace(lm, "the the the the")
    T = len(tr.encoding)
    greedy = sampling.generate(lm.model, lm.tokenizer, "the the the the", 5, greedy=True)
    assert timeline(at) == [s.id for s in greedy.steps]
    lens = charts_by_key(open_tab(at, PARTS, "3 ·"))["next_lens"]
    assert array(lens["data"][0]["z"]).shape == (lm.cfg.n_layer + 1, T)
    assert lens["layout"]["xaxis"]["tickvals"] == list(range(T))
    assert len(set(tr.encoding.labels)) < T


# ---- 3: the logit lens ----


def assert_lens(at, lm, tr, positions, pos, n_lens=5):
    lz = logit_lens(lm.model, tr, positions)
    fig = charts_by_key(at)["next_lens"]
    z = array(fig["data"][0]["z"])
    np.testing.assert_allclose(z, lz.top_probs, rtol=1e-5)
    vocab = lm.tokenizer.vocab_labels()
    # each cell names its top-1 token, escaped (and shortened to 14 characters)
    cells = [[html.unescape(c) for c in row] for row in fig["data"][0]["text"]]
    assert cells == [[vocab[i] if len(vocab[i]) <= 14 else vocab[i][:13] + "…" for i in row] for row in lz.top_ids]
    # the last stage is the model's own distribution: its top-1 = softmax(trace logits).max
    np.testing.assert_allclose(z[-1], np_softmax(tr["logits"][list(positions)]).max(-1), rtol=1e-5)
    # the table: the n most probable tokens of every stage at `pos`, from an independent softmax of the lens logits
    table = [d.value for d in at.dataframe if d.value.columns[0] == "#1"][0]
    assert table.shape == (lm.cfg.n_layer + 1, n_lens)
    j = list(positions).index(pos)
    for s in range(lm.cfg.n_layer + 1):
        p = np_softmax(lz.logits[s, j])
        top = np.argsort(-p, kind="stable")[:n_lens]
        shown = [cell.rsplit("  ", 1) for cell in table.iloc[s]]  # "label  12.3%" or "label  2.7e-7"
        assert [label for label, _ in shown] == [vocab[i] for i in top]
        for (_, q), want in zip(shown, p[top], strict=True):  # a percentage with one decimal, or 2 digits below 0.1 %
            assert float(q.removesuffix("%")) / 100 == pytest.approx(want, abs=5e-4 + 1e-6) if q.endswith("%") else (
                float(q) == pytest.approx(want, rel=0.051)
            )
    np.testing.assert_allclose(p, np_softmax(tr["logits"][pos]), atol=1e-5)  # the last stage = the model's output


def test_logit_lens_heatmap_and_table(lm):
    at = open_tab(run_page(PAGE, sentence=REPEATED), PARTS, "3 ·")
    tr = trace(lm)
    T = len(tr.encoding)
    assert_lens(at, lm, tr, range(T), T - 1)
    assert "lens shows" not in texts(at)  # short text: every position
    at.slider(key="next_lens_k").set_value(8).run()
    assert_lens(at, lm, tr, range(T), T - 1, n_lens=8)
    at.selectbox(key="next_position").set_value(2).run()
    assert_lens(at, lm, tr, range(T), 2, n_lens=8)
    shape = charts_by_key(at)["next_lens"]["layout"]["shapes"][0]
    assert (shape["x0"], shape["x1"]) == (1.5, 2.5)  # the chosen column is outlined


def test_logit_lens_window_at_256_tokens(lm, text_of):
    text = text_of(256)
    at = open_tab(run_page(PAGE, sentence=text), PARTS, "3 ·")
    assert_ok(at)
    tr = trace(lm, text)
    assert_lens(at, lm, tr, range(224, 256), 255)
    assert "the lens shows 32, positions 224–255" in texts(at)
    at.selectbox(key="next_position").set_value(100).run()
    assert_lens(at, lm, tr, range(69, 101), 100)
    assert "positions 69–100" in texts(at)
    at.selectbox(key="next_position").set_value(5).run()
    assert_lens(at, lm, tr, range(0, 32), 5)


@pytest.mark.parametrize("every_layer", [True, False])
def test_sidebar_attention_temperature_reaches_bars_lens_and_generation(lm, every_layer):
    """τ in every layer runs the model at τ; τ on the weights shown (the default) leaves the prediction as trained."""
    at = run_page(PAGE, sentence=REPEATED, temperature="0.5", tau_every_layer=str(every_layer))
    tau = 0.5 if every_layer else 1.0
    tr = trace(lm, tau=tau)
    assert_bars(at, tr["logits"][-1], 1.0, 0, 0.9)
    assert ("the model's as trained (τ = 1)" in texts(at)) != every_layer
    assert_lens(open_tab(at, PARTS, "3 ·"), lm, tr, range(len(tr.encoding)), len(tr.encoding) - 1)
    open_tab(at, PARTS, "2 ·").button(key="next_one").click().run()
    iv = Interventions(temperature=tau)
    want = sampling.generate(lm.model, lm.tokenizer, REPEATED, 1, 1.0, 0, 0.9, seed=0, interventions=iv)
    assert timeline(at) == [want.steps[0].id]


# ---- bad input, escaping, speed ----


@pytest.mark.parametrize(("name", "sentence"), BAD_INPUTS, ids=[n for n, _ in BAD_INPUTS])
def test_bad_inputs(lm, name, sentence):
    at = run_page(PAGE, sentence=sentence)
    assert_ok(at)
    if not sentence.strip():
        assert at.info and ("empty" in at.info[0].value or "whitespace" in at.info[0].value)
        assert not charts_by_key(at)
        return
    tr = trace(lm, sentence)
    assert_bars(at, tr["logits"][-1], 1.0, 0, 0.9)
    open_tab(at, PARTS, "2 ·")
    if len(tr.encoding) >= lm.cfg.n_ctx:  # the long text fills the context
        assert at.button(key="next_one").proto.disabled and "no further token fits" in texts(at)
    else:
        at.button(key="next_one").click().run()
        assert_ok(at)
        assert len(timeline(at)) == 1
    specs = json.dumps(charts_by_key(at))
    assert "<script" not in specs and "<img" not in specs  # every label escaped


def test_page_rerun_is_fast(text_of):
    """CPU time of a rerun after a control change (generation excluded), median of 7, with room for a busy machine."""
    for n, budget in ((16, 0.15), (256, 0.5)):
        at = run_page(PAGE, sentence=text_of(n))
        cpu = []
        for i in range(7):
            at.slider(key="next_temperature").set_value(0.9 if i % 2 else 1.0)
            t0 = time.process_time()
            at.run()
            cpu.append(time.process_time() - t0)
        assert_ok(at)
        assert statistics.median(cpu) < budget, (n, cpu)
