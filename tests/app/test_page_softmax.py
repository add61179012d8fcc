"""The softmax & temperature page: every control moved, figure data against the engine and independent numpy."""

import json

import numpy as np
import pytest

import ui
from lessons import softmax_lab as lab
from tests.apptest_utils import BAD_INPUTS, array, assert_ok, charts_by_key, open_tab, page_path, run_page, texts
from transformer import Interventions, run_trace

PAGE = page_path("5_Softmax_and_temperature")
TOY = ("softmax_bars", "softmax_curves")  # part 1; need a valid score vector
DK = ("softmax_dk_spread", "softmax_dk_top", "softmax_dk_example")  # part 2; always shown
REAL = ("softmax_real_scores", "softmax_real_weights")  # part 3; need a sentence


def part(at, n: int):
    """Open part n's tab ("2 · Why divide by √d_k?" for 2); only the open part runs."""
    return open_tab(at, "softmax_part", f"{n} ·")


def y(fig: dict, i: int = 0) -> np.ndarray:
    return array(fig["data"][i]["y"]).astype(float)


def np_softmax(z):
    e = np.exp(z - np.max(z))
    return e / e.sum()


def bits(p):
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def trace(sentence, tau=1.0, model="shakespeare-gpt", head_temperature=()):
    lm = ui.get_model(model)
    return run_trace(
        lm.model, lm.tokenizer, sentence, Interventions(temperature=tau, head_temperature=head_temperature)
    )


# ---- section 1: the toy score vector ----


def test_default_is_softmax_2_4_5():
    at = run_page(PAGE)
    assert_ok(at)
    figs = charts_by_key(at)
    assert set(figs) == set(TOY)  # part 1 opens first
    s = np.array([2.0, 4.0, 5.0])
    p = np.exp(s) / np.exp(s).sum()
    np.testing.assert_allclose(y(figs["softmax_bars"], 0), p, rtol=1e-6)
    np.testing.assert_allclose(y(figs["softmax_bars"], 1), p, rtol=1e-6)  # ×1, τ = 1: the same
    table = at.dataframe[0].value
    np.testing.assert_allclose(table.iloc[:, 2], np.exp(s), rtol=1e-12)  # e^2, e^4, e^5
    np.testing.assert_allclose(table["weight"], p, rtol=1e-12)
    t = texts(at)
    assert "7.389 + 54.6 + 148.4 = 210.4" in t and "(0.035, 0.259, 0.705)" in t
    assert [m.value for m in at.metric] == ["0.705", f"{bits(p):.3f} bits"]
    assert any(r"\operatorname{softmax}" in el.value for el in at.latex)


def test_temperature_slider():
    at = run_page(PAGE)
    at.slider(key="softmax_temperature").set_value(0.5).run()
    assert_ok(at)
    figs = charts_by_key(at)
    s = np.array([2.0, 4.0, 5.0])
    p = np_softmax(s / 0.5)
    np.testing.assert_allclose(y(figs["softmax_bars"], 1), p, rtol=1e-6)
    np.testing.assert_allclose(y(figs["softmax_bars"], 0), np_softmax(s), rtol=1e-6)  # the reference bars stay
    curves = figs["softmax_curves"]["data"]
    assert (
        array(curves[2]["x"])[0] == pytest.approx(0.5)
        and y(figs["softmax_curves"], 2)[0] == pytest.approx(bits(p), rel=1e-5)
    )
    assert y(figs["softmax_curves"], 3)[0] == pytest.approx(p.max(), rel=1e-6)
    assert at.metric[0].value == f"{p.max():.3f}"
    np.testing.assert_allclose(at.dataframe[0].value["weight"], p, rtol=1e-12)


def test_scale_slider():
    at = run_page(PAGE)
    at.select_slider(key="softmax_scale").set_value(100).run()
    assert_ok(at)
    figs = charts_by_key(at)
    p = np_softmax(100 * np.array([2.0, 4.0, 5.0]))
    np.testing.assert_allclose(y(figs["softmax_bars"], 1), p, rtol=1e-6, atol=1e-30)  # float32 on the wire: e^-300 → 0
    assert p.max() > 0.999 and at.metric[0].value == "1.000"  # saturated
    taus = array(figs["softmax_curves"]["data"][0]["x"]).astype(float)
    h, top = lab.temperature_sweep(np.array([2.0, 4.0, 5.0]), taus, scale=100)
    np.testing.assert_allclose(y(figs["softmax_curves"], 0), h, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(y(figs["softmax_curves"], 1), top, rtol=1e-5)


def test_score_vector_input():
    at = run_page(PAGE)
    at.text_input(key="softmax_scores").set_value("1, 1, 1, 1").run()
    assert_ok(at)
    figs = charts_by_key(at)
    np.testing.assert_allclose(y(figs["softmax_bars"], 1), 0.25, rtol=1e-6)
    assert at.metric[1].value == "2.000 bits"
    assert figs["softmax_bars"]["layout"]["xaxis"]["ticktext"] == ["s1 = 1", "s2 = 1", "s3 = 1", "s4 = 1"]
    # An 8-vector (the lecture's experiment) at ×100 saturates; entropy curve reaches log2(8) = 3 bits at high τ.
    s = np.array([0.3, -1.2, 0.8, 0.1, 1.1, -0.4, 0.5, 0.0])
    at.text_input(key="softmax_scores").set_value(", ".join(map(str, s))).run()
    at.select_slider(key="softmax_scale").set_value(100).run()
    figs = charts_by_key(at)
    np.testing.assert_allclose(y(figs["softmax_bars"], 0), np_softmax(s), rtol=1e-5)
    np.testing.assert_allclose(y(figs["softmax_bars"], 1), np_softmax(100 * s), rtol=1e-5, atol=1e-7)
    assert not at.latex or "e^{30}" not in texts(at)  # 8 numbers: no spelled-out sum


def test_overflowing_scores_use_the_shift():
    at = run_page(PAGE)
    at.text_input(key="softmax_scores").set_value("1000, 999").run()
    assert_ok(at)
    table = at.dataframe[0].value
    assert "e^(z − max z)" in table.columns
    np.testing.assert_allclose(table["weight"], np_softmax(np.array([1.0, 0.0])), rtol=1e-12)
    assert "would overflow" in texts(at)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Type a few numbers"),
        ("a,b", "not a number"),
        ("1e999", "not a finite number"),
        ("nan", "not a finite number"),
        (",".join(["1"] * 10_000), "10,000 numbers"),
    ],
)
def test_bad_score_vectors(text, message):
    at = run_page(PAGE)
    at.text_input(key="softmax_scores").set_value(text).run()
    assert_ok(at)
    assert any(message in e.value for e in at.error)
    assert not charts_by_key(at)  # nothing drawn from a bad vector
    assert set(charts_by_key(part(at, 2))) == set(DK)  # the other parts still work
    assert set(charts_by_key(part(at, 3))) == set(REAL)


# ---- section 2: √d_k ----


def test_dk_slider_and_seed():
    at = part(run_page(PAGE), 2)
    ex = lab.sqrt_dk_experiment(seed=0)
    figs = charts_by_key(at)
    np.testing.assert_allclose(y(figs["softmax_dk_spread"], 0), ex.std_raw, rtol=1e-5)
    np.testing.assert_allclose(y(figs["softmax_dk_spread"], 1), ex.std_scaled, rtol=1e-5)
    np.testing.assert_allclose(y(figs["softmax_dk_top"], 0), ex.top_raw, rtol=1e-5)
    np.testing.assert_allclose(y(figs["softmax_dk_top"], 1), ex.top_scaled, rtol=1e-5)
    # independent: the std of raw dot products grows like √d_k, the scaled ones stay near 1
    np.testing.assert_allclose(y(figs["softmax_dk_spread"], 0) / np.sqrt(lab.D_KS), 1, atol=0.15)

    at.select_slider(key="softmax_dk").set_value(256).run()
    assert_ok(at)
    figs = charts_by_key(at)
    i = lab.D_KS.index(256)
    raw, scaled = ex.example(i)
    np.testing.assert_allclose(y(figs["softmax_dk_example"], 0), np_softmax(ex.scores[i, 0]), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(y(figs["softmax_dk_example"], 1), np_softmax(ex.scores[i, 0] / 16), rtol=1e-5)
    np.testing.assert_allclose(y(figs["softmax_dk_example"], 1), scaled, rtol=1e-5)
    assert "d_k = 256" in figs["softmax_dk_example"]["layout"]["title"]["text"]
    assert list(array(figs["softmax_dk_spread"]["data"][3]["x"])) == [256, 256, 256]
    assert f"spread by **{ex.std_raw[i]:.2f}**" in texts(at)

    at.number_input(key="softmax_seed").set_value(5).run()
    assert_ok(at)
    ex5 = lab.sqrt_dk_experiment(seed=5)
    figs = charts_by_key(at)
    np.testing.assert_allclose(y(figs["softmax_dk_spread"], 0), ex5.std_raw, rtol=1e-5)
    np.testing.assert_allclose(y(figs["softmax_dk_example"], 1), ex5.example(i)[1], rtol=1e-5)
    assert not np.allclose(ex5.std_raw, ex.std_raw)


# ---- section 3: the model's row ----


def real_row(sentence, layer, head, q, tau_page):
    """Expected bars: scaled scores at τ = 1, their softmax at the page's τ, the model's
    pattern with τ_page on that head only."""
    tr1 = trace(sentence, 1.0)
    scores = tr1[f"blocks.{layer}.attn.hook_scores_scaled"][head, q, : q + 1].astype(float)  # causal: keys 0…q
    tempered = trace(sentence, 1.0, head_temperature=((layer, head, tau_page),))
    model = tempered[f"blocks.{layer}.attn.hook_pattern"][head, q, : q + 1]
    return scores, np_softmax(scores / tau_page), model, tr1.encoding.labels


def test_real_row_default_and_query():
    sentence = "The cat and the dog sat."
    at = part(run_page(PAGE, sentence=sentence), 3)
    assert_ok(at)
    labels = trace(sentence).encoding.labels
    assert at.selectbox(key="softmax_query").value == len(labels) - 1  # the last token by default
    figs = charts_by_key(at)
    scores, p, model, _ = real_row(sentence, 0, 0, len(labels) - 1, 1.0)
    np.testing.assert_allclose(y(figs["softmax_real_scores"]), scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y(figs["softmax_real_weights"], 0), p, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(y(figs["softmax_real_weights"], 1), model, rtol=1e-4, atol=1e-6)
    # a repeated token ("the") keeps its own bar
    ticks = figs["softmax_real_weights"]["layout"]["xaxis"]["ticktext"]
    assert len(ticks) == len(labels) and sum("the" in t.lower() for t in ticks) >= 2

    at.selectbox(key="softmax_query").set_value(3).run()
    assert_ok(at)
    figs = charts_by_key(at)
    scores, p, model, _ = real_row(sentence, 0, 0, 3, 1.0)
    assert len(y(figs["softmax_real_weights"])) == 4  # query 3 sees keys 0…3
    np.testing.assert_allclose(y(figs["softmax_real_scores"]), scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y(figs["softmax_real_weights"], 0), p, rtol=1e-4, atol=1e-6)


def test_real_row_page_temperature_equals_model_with_that_head_tempered():
    sentence = "The hiking trail led us through bear country."
    at = part(run_page(PAGE, sentence=sentence, layer="1", head="2"), 3)
    at.slider(key="softmax_temperature").set_value(0.5).run()
    assert_ok(at)
    q = at.selectbox(key="softmax_query").value
    figs = charts_by_key(at)
    scores, p, model, _ = real_row(sentence, 1, 2, q, 0.5)
    weights = figs["softmax_real_weights"]
    np.testing.assert_allclose(y(weights, 0), p, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(y(weights, 1), model, rtol=1e-4, atol=1e-6)
    # the hand softmax is what the model does
    np.testing.assert_allclose(y(weights, 0), y(weights, 1), rtol=1e-4, atol=1e-6)
    assert "τ = 0.5 on this head only" in weights["data"][1]["name"]

    # A lower page τ sharpens the row, in the hand softmax and in the model alike.
    at.slider(key="softmax_temperature").set_value(0.1).run()
    w = charts_by_key(at)["softmax_real_weights"]
    np.testing.assert_allclose(y(w, 0), np_softmax(scores / 0.1), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(y(w, 1), real_row(sentence, 1, 2, q, 0.1)[2], rtol=1e-4, atol=1e-6)
    assert y(w, 0).max() > y(weights, 0).max()


def test_real_row_follows_sidebar_layer_head_and_temperature():
    sentence = "Time flies like an arrow."
    at = part(run_page(PAGE, sentence=sentence), 3)
    before = y(charts_by_key(at)["softmax_real_scores"])
    at.slider(key="w_layer").set_value(3).run()
    at.slider(key="w_head").set_value(1).run()
    at.slider(key="w_temperature").set_value(2.0).run()
    assert_ok(at)
    q = at.selectbox(key="softmax_query").value
    figs = charts_by_key(at)
    scores, p, model, _ = real_row(sentence, 3, 1, q, 1.0)
    # scores stay at τ = 1, whatever the sidebar τ
    np.testing.assert_allclose(y(figs["softmax_real_scores"]), scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y(figs["softmax_real_weights"], 1), model, rtol=1e-4, atol=1e-6)
    assert not np.allclose(before, y(figs["softmax_real_scores"]))
    assert "layer 3, head 1" in texts(at)
    at.toggle(key="w_tau_every_layer").set_value(True).run()  # the sidebar's τ in every layer: the row stays as trained
    assert_ok(at)
    np.testing.assert_allclose(y(charts_by_key(at)["softmax_real_scores"]), scores, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("name", "text"), BAD_INPUTS, ids=[n for n, _ in BAD_INPUTS])
def test_bad_sentences(name, text):
    at = run_page(PAGE, sentence=text)
    assert_ok(at)
    assert set(charts_by_key(at)) == set(TOY) and set(charts_by_key(part(at, 2))) == set(DK)  # no sentence needed
    figs = charts_by_key(part(at, 3))
    if not text.strip():
        assert not set(REAL) & set(figs)
        assert any("empty" in i.value or "whitespace" in i.value for i in at.info)
        return
    assert set(REAL) <= set(figs)
    tr = trace(text)
    q = len(tr.encoding) - 1
    _, p, model, _ = real_row(text, 0, 0, q, 1.0)
    np.testing.assert_allclose(y(figs["softmax_real_weights"], 0), p, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(y(figs["softmax_real_weights"], 1), model, rtol=1e-4, atol=1e-6)
    if tr.truncated:
        assert any(f"shows the first {len(tr.encoding)}" in w.value for w in at.warning)
    assert "<script" not in json.dumps(figs) and "<img" not in json.dumps(figs)


def test_sentence_change_resets_an_out_of_range_query():
    at = part(run_page(PAGE, sentence="The hiking trail led us through bear country."), 3)
    at.selectbox(key="softmax_query").set_value(8).run()
    at.text_area(key="w_sentence").set_value("Hi there").run()
    assert_ok(at)
    n = len(trace("Hi there").encoding)
    assert at.selectbox(key="softmax_query").value == n - 1
    assert len(y(charts_by_key(at)["softmax_real_weights"])) == n


# ---- the parts ----


def test_only_the_open_part_runs_and_the_page_tau_is_shared_by_parts_1_and_3():
    sentence = "The hiking trail led us through bear country."
    at = run_page(PAGE, sentence=sentence)
    at.slider(key="softmax_temperature").set_value(0.5).run()
    at.select_slider(key="softmax_scale").set_value(10).run()
    at = part(at, 2)
    assert set(charts_by_key(at)) == set(DK) and not at.get("metric")  # part 1 sent nothing
    at = part(at, 3)
    assert set(charts_by_key(at)) == set(REAL)
    assert at.slider(key="softmax_temperature").value == 0.5  # the same τ, kept while part 1 was open
    q = at.selectbox(key="softmax_query").value
    _, p, model, _ = real_row(sentence, 0, 0, q, 0.5)
    np.testing.assert_allclose(y(charts_by_key(at)["softmax_real_weights"], 0), p, rtol=1e-4, atol=1e-6)
    at = part(at, 1)
    assert at.select_slider(key="softmax_scale").value == 10  # kept while closed
    np.testing.assert_allclose(
        y(charts_by_key(at)["softmax_bars"], 1), np_softmax(10 * np.array([2.0, 4.0, 5.0]) / 0.5), rtol=1e-5, atol=1e-7
    )
