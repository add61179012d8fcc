"""The lecture example and the softmax lab (engine), and their figures, against independent numpy."""

import math

import numpy as np
import pytest

from figures.common import grouped_bars
from figures.matrices import matrix
from figures.softmax import dk_lines, temperature_curves
from lessons import softmax_lab as lab
from lessons.lecture import LECTURE_X, STEPS, lecture_example, lecture_weights
from tests.apptest_utils import array
from transformer import ModelConfig

X_LECTURE = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1]])


def reference(X, seed):
    """The lecture's code, written out: global legacy seed, three randint calls, softmax by hand."""
    saved = np.random.get_state()
    try:
        np.random.seed(seed)
        W_Q = np.random.randint(3, size=(3, 3))
        W_K = np.random.randint(3, size=(3, 3))
        W_V = np.random.randint(3, size=(3, 3))
    finally:
        np.random.set_state(saved)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ K.T
    scaled = scores / K.shape[1] ** 0.5
    e = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    return {
        "X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "Q": Q, "K": K, "V": V, "scores": scores, "scaled": scaled,
        "weights": weights, "attention": weights @ V,
    }


# ---- lecture example ----


def test_lecture_example_reproduces_the_lecture():
    m, ref = lecture_example(), reference(X_LECTURE, 42)
    assert list(m) == list(STEPS)
    for name in STEPS:
        np.testing.assert_allclose(m[name], ref[name], rtol=1e-12, err_msg=name)
    np.testing.assert_array_equal(m["X"], LECTURE_X)
    # The numbers the lecture prints (seed 42).
    np.testing.assert_array_equal(m["W_Q"], [[2, 0, 2], [2, 0, 0], [2, 1, 2]])
    np.testing.assert_array_equal(m["W_K"], [[2, 2, 2], [0, 2, 1], [0, 1, 1]])
    np.testing.assert_array_equal(m["W_V"], [[1, 1, 0], [0, 1, 1], [0, 0, 0]])
    np.testing.assert_allclose(m["attention"][0], [0.98522025, 1.74174051, 0.75652026], atol=1e-8)
    np.testing.assert_allclose(m["weights"].sum(axis=1), 1.0)


@pytest.mark.parametrize("seed", [0, 7, 2**32 - 1])
def test_lecture_example_other_inputs(seed):
    X = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, 1.0], [-2.0, 1.5, 0.0], [1.0, 1.0, 1.0]])
    m, ref = lecture_example(X, seed), reference(X, seed)
    for name in STEPS:
        np.testing.assert_allclose(m[name], ref[name], rtol=1e-12, err_msg=name)


def test_lecture_weights_leave_global_rng_alone():
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    lecture_weights(42)
    np.testing.assert_array_equal(np.random.get_state()[1], before)


def test_lecture_example_large_inputs_do_not_overflow():
    m = lecture_example(np.full((4, 3), 1000.0), 42)
    assert all(np.isfinite(v).all() for v in m.values())
    np.testing.assert_allclose(m["weights"].sum(axis=1), 1.0)


# ---- softmax lab ----


def test_softmax_of_2_4_5_by_hand():
    e = np.array([math.exp(2), math.exp(4), math.exp(5)])
    np.testing.assert_allclose(lab.softmax([2, 4, 5]), e / e.sum(), rtol=1e-12)
    w = lab.worked_softmax(np.array([2.0, 4.0, 5.0]))
    assert w["shift"] == 0
    np.testing.assert_allclose(w["exp"], [7.389056, 54.59815, 148.41316], rtol=1e-6)
    assert w["sum"] == pytest.approx(210.40037, rel=1e-6)
    np.testing.assert_allclose(w["weights"], [0.035119, 0.259496, 0.705385], atol=1e-6)


def test_softmax_is_stable_and_masks():
    np.testing.assert_allclose(lab.softmax([1000.0, 1001.0]), lab.softmax([0.0, 1.0]))
    p = lab.softmax([1.0, -np.inf, 2.0])
    assert p[1] == 0 and p.sum() == pytest.approx(1.0)
    w = lab.worked_softmax(np.array([5000.0, 4999.0]))
    assert w["shift"] == 5000 and np.isfinite(w["exp"]).all()
    np.testing.assert_allclose(w["weights"], lab.softmax([1.0, 0.0]))


def test_temperature_and_scale():
    s = np.array([2.0, 4.0, 5.0])
    np.testing.assert_allclose(lab.softmax_t(s, 0.5), lab.softmax(s / 0.5))
    np.testing.assert_allclose(lab.softmax_t(s, 2.0, scale=2.0), lab.softmax(s))
    tops = [lab.softmax_t(s, t).max() for t in (0.1, 0.5, 1, 2, 5)]
    assert all(a > b for a, b in zip(tops, tops[1:], strict=False))  # higher τ → flatter
    assert lab.softmax_t(s, 0.05).max() > 0.999 and lab.softmax_t(s, 1, scale=100).max() > 0.999


def test_entropy_and_sweep():
    assert lab.entropy_bits(np.full(8, 1 / 8)) == pytest.approx(3.0)
    assert lab.entropy_bits(np.array([0.0, 1.0, 0.0])) == 0
    s, taus = np.array([2.0, 4.0, 5.0]), np.geomspace(0.05, 5, 30)
    h, top = lab.temperature_sweep(s, taus, scale=3)
    for i, t in enumerate(taus):
        p = np.exp(3 * s / t - (3 * s / t).max())
        p /= p.sum()
        assert top[i] == pytest.approx(p.max())
        assert h[i] == pytest.approx(-(p[p > 0] * np.log2(p[p > 0])).sum(), abs=1e-12)
    assert np.all(np.diff(h) > -1e-12) and np.all(np.diff(top) < 1e-12)


@pytest.mark.parametrize(
    ("text", "expected"), [("2, 4, 5", [2, 4, 5]), (" 2;4 5 ", [2, 4, 5]), ("-1.5,1e3", [-1.5, 1000]), ("7", [7])]
)
def test_parse_scores_good(text, expected):
    np.testing.assert_array_equal(lab.parse_scores(text), expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Type a few numbers"), ("  , ", "Type a few numbers"), ("a,b", "Entry 1 is not a number"),
        ("2, x", "Entry 2 is not a number"), ("1e999", "not a finite number"), ("nan", "not a finite number"),
        ("1, inf", "Entry 2 is not a finite"), ("1e7", "too large"), (",".join(["1"] * 10_000), "10,000 numbers"),
    ],
)
def test_parse_scores_bad(text, message):
    with pytest.raises(lab.ScoreInputError, match=message):
        lab.parse_scores(text)


def test_parse_scores_message_does_not_echo_input():
    with pytest.raises(lab.ScoreInputError) as err:
        lab.parse_scores("[x](javascript:alert(1))")
    assert "javascript" not in str(err.value)


def reference_dk(d_ks, n_queries, n_keys, seed):
    """The √d_k experiment written out again, draw for draw."""
    rng = np.random.default_rng(seed)
    out = []
    for d in d_ks:
        q = rng.standard_normal((n_queries, 1, d))
        k = rng.standard_normal((n_queries, n_keys, d))
        out.append(np.einsum("qd,qkd->qk", q[:, 0], k))
    return np.array(out)


def test_sqrt_dk_experiment_matches_reference_and_theory():
    ex = lab.sqrt_dk_experiment(seed=3)
    scores = reference_dk(lab.D_KS, 256, 8, 3)
    np.testing.assert_allclose(ex.scores, scores, rtol=1e-10)
    root = np.sqrt(np.array(lab.D_KS, dtype=float))
    np.testing.assert_allclose(ex.std_raw, scores.reshape(len(root), -1).std(axis=1))
    np.testing.assert_allclose(ex.std_scaled, (scores / root[:, None, None]).reshape(len(root), -1).std(axis=1))
    np.testing.assert_allclose(ex.std_raw / root, 1.0, atol=0.15)  # spread ≈ √d_k
    np.testing.assert_allclose(ex.std_scaled, 1.0, atol=0.15)  # ÷√d_k → ≈ 1
    e = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(ex.top_raw, (e / e.sum(-1, keepdims=True)).max(-1).mean(-1))
    assert ex.top_raw[-1] > 0.9 and ex.top_raw[-1] > ex.top_raw[0] + 0.5  # saturation without the division
    assert ex.top_scaled.max() < 0.5  # none with it
    raw, scaled = ex.example(4, query=2)
    np.testing.assert_allclose(raw, lab.softmax(scores[4, 2]))
    np.testing.assert_allclose(scaled, lab.softmax(scores[4, 2] / 4.0))


def test_sqrt_dk_experiment_is_seeded():
    a, b, c = lab.sqrt_dk_experiment(seed=1), lab.sqrt_dk_experiment(seed=1), lab.sqrt_dk_experiment(seed=2)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert not np.allclose(a.scores, c.scores)


# ---- figures ----


def test_grouped_bars_data_and_escaping():
    fig = grouped_bars(
        {"a": np.array([0.1, 0.9]), "b<i>": np.array([0.5, 0.5])}, ["<script>x</script>", "y"], title="<b>t</b>"
    ).to_dict()
    assert [d["name"] for d in fig["data"]] == ["a", "b&lt;i&gt;"]
    np.testing.assert_allclose(array(fig["data"][0]["y"]), [0.1, 0.9], rtol=1e-6)
    np.testing.assert_allclose(array(fig["data"][1]["y"]), [0.5, 0.5], rtol=1e-6)
    assert fig["layout"]["xaxis"]["ticktext"][0].startswith("&lt;script&gt;x") and "<" not in fig["data"][0]["text"][0]
    assert "<b>" not in fig["layout"]["title"]["text"]
    assert fig["data"][0]["texttemplate"] == "%{y:.3f}"  # few bars: values written on them
    assert (
        "texttemplate"
        not in grouped_bars({"a": np.ones(10), "b": np.ones(10)}, list("abcdefghij")).to_dict()["data"][0]
    )  # 20 bars: too many
    many = grouped_bars({"a": np.ones(40) / 40}, [str(i) for i in range(40)]).to_dict()
    assert "texttemplate" not in many["data"][0] and many["layout"]["showlegend"] is False


def test_temperature_curves_and_dk_lines():
    taus = np.array([0.1, 1.0, 10.0])
    fig = temperature_curves(taus, np.array([0.1, 1.0, 1.5]), np.array([0.9, 0.7, 0.4]), 1.0, 1.0, 0.7, 1.58).to_dict()
    np.testing.assert_allclose(array(fig["data"][0]["y"]), [0.1, 1.0, 1.5], rtol=1e-6)
    np.testing.assert_allclose(array(fig["data"][1]["y"]), [0.9, 0.7, 0.4], rtol=1e-6)
    assert array(fig["data"][2]["x"])[0] == 1.0 and fig["data"][3]["yaxis"] == "y2"
    d_ks = np.array([1, 4, 16])
    fig = dk_lines(
        d_ks, {"raw": np.array([1.0, 2.0, 4.0]), "scaled": np.array([1.0, 1.0, 1.0])}, title="t", y_title="y", chosen=1
    ).to_dict()
    np.testing.assert_allclose(array(fig["data"][0]["y"]), [1, 2, 4])
    np.testing.assert_allclose(array(fig["data"][2]["y"]), [2, 1])  # markers at the chosen d_k
    assert list(array(fig["data"][2]["x"])) == [4, 4]


def test_matrix_figure_writes_values_and_keeps_repeated_labels():
    m = np.array([[1.0, -2.5], [0.25, 3.0], [0.0, 1.0]])
    fig = matrix(m, ["the", "cat", "the"], ["d1", "d2"], title="M").to_dict()
    hm = fig["data"][0]
    np.testing.assert_allclose(array(hm["z"]), m, rtol=1e-6)
    assert hm["texttemplate"] == "%{z:.3~g}" and "customdata" not in hm  # the browser writes each cell's own z
    assert (
        fig["layout"]["yaxis"]["tickvals"] == [0, 1, 2]
        and fig["layout"]["yaxis"]["ticktext"] == ["the", "cat", "the"]
    )
    assert hm["zmid"] == 0  # both signs: diverging around 0
    assert "zmid" not in matrix(np.abs(m), ["a", "b", "c"], ["x", "y"], title="M").to_dict()["data"][0]


# ---- the Softmax & temperature page's words ----


def test_dk_note_by_hand():
    ex = lab.sqrt_dk_experiment(d_ks=(4, 16), n_queries=8, n_keys=3, seed=0)
    raw = ex.scores[1].std()  # the spread of the 8 × 3 raw scores at d_k = 16, and divided by √16 = 4
    assert lab.dk_note(ex, 1) == (
        f"At d_k = 16 the scores spread by **{raw:.2f}** (√d_k = 4.00); "
        f"divided by √d_k, by **{raw / 4:.2f}**. One query's 3 weights:"
    )


def test_real_row_words():
    rotary = lab.real_row_text(ModelConfig(family="llama", pos_encoding="rotary", activation="silu"), 3, 5)
    assert (
        "layer 3, head 5" in rotary
        and "the model's q·k (after RoPE, as the model dots them) / √d_k" in rotary
        and "(the earlier tokens and itself)" in rotary
    )
    assert "the model's layer 3 with τ on this one head only" in rotary
    assert "*τ in every layer* on" in rotary  # the sidebar's τ: on the weights shown, or in a new forward pass
    encoder = lab.real_row_text(
        ModelConfig(family="bert", pos_encoding="learned", activation="gelu", has_lm_head=False), 0, 1
    )
    assert "the model's q·k / √d_k" in encoder and "(the whole sentence: an encoder has no causal mask)" in encoder
    # weights (½, ½): 1 bit; at τ = 1 (0.9, 0.1): −(0.9 log₂ 0.9 + 0.1 log₂ 0.1) = 0.1368 + 0.3322 = 0.469 bits
    r = lab.RealRow(np.arange(2), np.zeros(2), np.array([0.5, 0.5]), np.array([0.5, 0.5]), np.array([0.9, 0.1]))
    assert (
        lab.real_row_note(r, 2.0)
        == "Top weight 0.500 and entropy 1.000 bits at τ = 2; at τ = 1 (as trained): 0.900 and 0.469 bits."
    )
