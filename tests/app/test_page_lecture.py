"""The lecture example page: every matrix equals the lecture's code run independently; every input changes them."""

import json

import numpy as np
import pytest
from streamlit.runtime.state.common import user_key_from_element_id

from tests.apptest_utils import BAD_INPUTS, array, assert_ok, page_path, run_page, texts

PAGE = page_path("6_Lecture_example")
X_LECTURE = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=float)
NAMES = ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "scaled", "weights", "attention")


def reference(X, seed):
    """The lecture's code: np.random.seed, three randint calls in order, softmax by hand."""
    saved = np.random.get_state()
    np.random.seed(seed)
    W_Q, W_K, W_V = (np.random.randint(3, size=(3, 3)) for _ in range(3))
    np.random.set_state(saved)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ K.T
    scaled = scores / np.sqrt(3)
    e = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    return dict(zip(NAMES, (X, W_Q, W_K, W_V, Q, K, V, scores, scaled, weights, weights @ V), strict=True))


def figures(at) -> dict[str, dict]:
    """The page's figures by matrix name (from the chart keys lecture_fig_<name>)."""
    out = {}
    for c in at.get("plotly_chart"):
        key = user_key_from_element_id(c.proto.id)
        out[key.removeprefix("lecture_fig_")] = json.loads(c.proto.spec)
    return out


def assert_matrices(at, X, seed):
    figs, ref = figures(at), reference(X, seed)
    assert list(figs) == list(NAMES)
    for name in NAMES:
        hm = figs[name]["data"][0]
        np.testing.assert_allclose(array(hm["z"]), ref[name], rtol=1e-5, atol=1e-6, err_msg=name)
        assert hm["texttemplate"] == "%{z:.3~g}", name  # each cell shows its own number


def table_key(at) -> str:
    return at.data_editor[0].key


def test_default_is_the_lecture():
    at = run_page(PAGE)
    assert_ok(at)
    assert_matrices(at, X_LECTURE, 42)
    assert at.number_input(key="lecture_seed").value == 42
    t = texts(at)
    assert r"\left[0.985,\ 1.74,\ 0.757\right]" in t  # row 1 of the output, spelled out
    assert "np.random.seed(42)" in t
    assert figures(at)["X"]["layout"]["yaxis"]["ticktext"] == ["word_1", "word_2", "word_3", "word_4"]
    assert list(at.data_editor[0].value.columns) == ["word", "dim 1", "dim 2", "dim 3"]


def test_seed_changes_every_matrix():
    at = run_page(PAGE)
    at.number_input(key="lecture_seed").set_value(7).run()
    assert_ok(at)
    assert_matrices(at, X_LECTURE, 7)
    assert "np.random.seed(7)" in texts(at)
    assert not np.array_equal(reference(X_LECTURE, 7)["W_Q"], reference(X_LECTURE, 42)["W_Q"])


def test_editing_x_changes_the_matrices():
    at = run_page(PAGE)
    at.session_state[table_key(at)] = {
        "edited_rows": {0: {"dim 2": 5.0}, 3: {"dim 1": -1.5}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    assert_ok(at)
    X = X_LECTURE.copy()
    X[0, 1], X[3, 0] = 5.0, -1.5
    assert_matrices(at, X, 42)
    assert figures(at)["X"]["data"][0]["zmid"] == 0  # now signed: diverging colours


def test_renaming_words_relabels_and_escapes():
    at = run_page(PAGE)
    at.session_state[table_key(at)] = {
        "edited_rows": {1: {"word": "<img src=x onerror=alert(1)>"}, 2: {"word": "   "}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    assert_ok(at)
    figs = figures(at)
    ticks = figs["weights"]["layout"]["xaxis"]["ticktext"]
    assert ticks[0] == "word_1" and ticks[1].startswith("&lt;img") and ticks[2] == "word_3"  # blank name falls back
    assert "<img" not in json.dumps(figs)
    assert_matrices(at, X_LECTURE, 42)  # names are only labels
    assert at.selectbox(key="lecture_row").options[1].startswith("row 2: <img")  # plain text in a selectbox


@pytest.mark.parametrize(
    ("edit", "cell"),
    [({"dim 3": None}, "row 3, dim 3"), ({"dim 1": 1e9}, "row 3, dim 1"), ({"dim 2": float("nan")}, "row 3, dim 2")],
)
def test_bad_cells_give_a_clear_message(edit, cell):
    at = run_page(PAGE)
    at.session_state[table_key(at)] = {"edited_rows": {2: edit}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert_ok(at)
    assert any(cell in e.value and "needs a number" in e.value for e in at.error)
    assert not at.get("plotly_chart")


def test_reset_restores_the_lecture():
    at = run_page(PAGE)
    at.number_input(key="lecture_seed").set_value(3).run()
    at.session_state[table_key(at)] = {
        "edited_rows": {0: {"dim 1": 9.0, "word": "bear"}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    X = X_LECTURE.copy()
    X[0, 0] = 9.0
    assert_matrices(at, X, 3)
    old_key = table_key(at)
    at.button(key="lecture_reset").click().run()
    assert_ok(at)
    assert table_key(at) != old_key  # a fresh editor: the browser drops its edits too
    assert at.number_input(key="lecture_seed").value == 42
    assert_matrices(at, X_LECTURE, 42)
    assert figures(at)["X"]["layout"]["yaxis"]["ticktext"][0] == "word_1"


def test_row_choice_spells_out_that_row():
    at = run_page(PAGE)
    ref = reference(X_LECTURE, 42)
    at.selectbox(key="lecture_row").set_value(2).run()
    assert_ok(at)
    t = texts(at)
    assert r"\alpha_{3} = " in t and r"\text{attention}_{3}" in t
    assert r"\left[" + r",\ ".join(f"{v:.3g}" for v in ref["attention"][2]) + r"\right]" in t
    assert r"\left[" + r",\ ".join(f"{v:.3g}" for v in ref["weights"][2]) + r"\right]" in t
    assert r"\text{attention}_{1}" not in t


@pytest.mark.parametrize(("name", "text"), BAD_INPUTS, ids=[n for n, _ in BAD_INPUTS])
def test_bad_sidebar_sentences_do_not_matter(name, text):
    at = run_page(PAGE, sentence=text)
    assert_ok(at)
    assert_matrices(at, X_LECTURE, 42)


def test_sidebar_sentence_typed_does_not_break_the_page():
    at = run_page(PAGE)
    at.text_area(key="w_sentence").set_value("<script>alert(1)</script>").run()
    assert_ok(at)
    assert_matrices(at, X_LECTURE, 42)
