"""The Tokens & embeddings page through AppTest: figure data equals the model's W_E and the
trace, every control changes the page."""

from __future__ import annotations

import numpy as np
import pytest

from figures.common import esc
from tests import apptest_utils as u
from transformer.trace import run_trace
from ui import PRESETS

PAGE = u.page_path("1_Tokens_and_embeddings")


@pytest.fixture(scope="module")
def W_E(lm) -> np.ndarray:
    return lm.model.W_E.detach().numpy().astype(np.float64)  # (V, d)


@pytest.fixture(scope="module")
def default_page():
    at = u.run_page(PAGE)
    u.assert_ok(at)
    return at


def cosines(W: np.ndarray, v: np.ndarray) -> np.ndarray:
    """cos(W_i, v) for every row, by the formula."""
    return W @ v / (np.linalg.norm(W, axis=1) * np.linalg.norm(v))


def brute_top(W: np.ndarray, v: np.ndarray, k: int, exclude: set[int]) -> tuple[list[int], np.ndarray]:
    cos = cosines(W, v)
    order = [i for i in np.argsort(-cos, kind="stable") if i not in exclude][:k]
    return order, cos[order]


def first_merged(tok, n: int) -> list[int]:
    """The first n ids whose byte-level string is longer than one byte (skipping special tokens), by id."""
    specials = {t.content for t in tok.hf.get_added_tokens_decoder().values()}
    return [
        i for i in range(tok.vocab_size) if len(tok.hf.id_to_token(i)) > 1 and tok.hf.id_to_token(i) not in specials
    ][:n]


def escaped(tok, ids) -> list[str]:
    return [esc(tok.vocab_labels()[i]) for i in ids]


def strings(node) -> list[str]:
    """Every string inside a figure's JSON (labels, hover texts, titles)."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in strings(v)]
    return []


def sentence_of(at) -> str:
    return at.text_area(key="w_sentence").value


def part(at, n: int):
    """Open part n's tab ("3 · A map of the space" for 3); only the open part runs."""
    return u.open_tab(at, "tokens_part", f"{n} ·")


# ---- the default page: every figure against the engine ------------------------------------------------


def test_chips_show_every_token_with_id_and_covered_characters(default_page, lm):
    part(default_page, 1)
    enc = lm.tokenizer.encode(sentence_of(default_page))
    bar = u.chart(default_page, "tokens_chips")["data"][0]
    assert len(bar["text"]) == len(enc)
    for pos, (label, i, (s, e)) in enumerate(zip(enc.labels, enc.ids, enc.offsets, strict=True)):
        assert bar["text"][pos].startswith(label) and f">{i}<" in bar["text"][pos]
        assert (
            f"id {i}" in bar["hovertext"][pos]
            and f"characters {s}–{e}: «{enc.text[s:e].replace(' ', '␣')}»" in bar["hovertext"][pos]
        )
    assert any(t.startswith("␣") for t in bar["text"])  # whitespace is visible
    table = default_page.dataframe[0].value
    assert list(table["token"]) == list(enc.labels) and list(table["id"]) == list(enc.ids)


def test_embedding_heatmap_equals_trace_and_W_E(default_page, lm, W_E):
    tr = run_trace(lm.model, lm.tokenizer, sentence_of(default_page))
    z = u.array(u.chart(part(default_page, 2), "tokens_embed")["data"][0]["z"])
    np.testing.assert_array_equal(z, tr["hook_embed"])
    np.testing.assert_allclose(z, W_E[list(tr.encoding.ids)], rtol=1e-6)


def independent_pca(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, components) from numpy's SVD of the centred data."""
    mean = x.mean(0)
    return mean, np.linalg.svd(x - mean, full_matrices=False)[2][:k]


def assert_same_up_to_sign(coords: np.ndarray, ref: np.ndarray):
    for k in range(ref.shape[1]):
        sign = np.sign(coords[:, k] @ ref[:, k])
        np.testing.assert_allclose(coords[:, k], sign * ref[:, k], atol=2e-5)


def test_pca_map_is_the_vocabulary_pca(default_page, lm, W_E):
    fig = u.chart(part(default_page, 3), "tokens_pca")
    vocab, sent = fig["data"]
    n = default_page.slider(key="tokens_n_vocab").value
    ids = first_merged(lm.tokenizer, n)
    assert vocab["hovertext"] == escaped(lm.tokenizer, ids)
    mean, comps = independent_pca(W_E[ids], 2)
    assert_same_up_to_sign(np.c_[u.array(vocab["x"]), u.array(vocab["y"])], (W_E[ids] - mean) @ comps.T)
    sent_ids = list(lm.tokenizer.encode(sentence_of(default_page)).ids)
    assert_same_up_to_sign(np.c_[u.array(sent["x"]), u.array(sent["y"])], (W_E[sent_ids] - mean) @ comps.T)
    assert "of variance" in fig["layout"]["xaxis"]["title"]["text"]


def test_cosine_matrix_equals_formula(default_page, lm, W_E):
    ids = list(lm.tokenizer.encode(sentence_of(default_page)).ids)
    z = u.array(u.chart(part(default_page, 4), "tokens_cosine")["data"][0]["z"])
    ref = np.array([[cosines(W_E[[a]], W_E[b])[0] for b in ids] for a in ids])
    np.testing.assert_allclose(z, ref, atol=1e-5)


def test_neighbours_are_the_brute_force_nearest(default_page, lm, W_E):
    enc = lm.tokenizer.encode(sentence_of(part(default_page, 5)))
    pos = default_page.selectbox(key="tokens_query").value
    k = default_page.slider(key="tokens_k").value
    qid = enc.ids[pos]
    ref_ids, ref_cos = brute_top(W_E, W_E[qid], k, {qid})
    bar = u.chart(default_page, "tokens_neighbours")["data"][0]
    np.testing.assert_allclose(u.array(bar["y"]), ref_cos, atol=1e-5)
    assert bar["text"] == escaped(lm.tokenizer, ref_ids)


def test_analogy_default_is_the_brute_force_answer(default_page, lm, W_E):
    tok = lm.tokenizer
    part(default_page, 6)
    a, b, c = (tok.encode(" " + w).ids[0] for w in ("king", "he", "she"))
    unit = W_E / np.linalg.norm(W_E, axis=1, keepdims=True)
    ref_ids, ref_cos = brute_top(
        W_E, unit[a] - unit[b] + unit[c], default_page.slider(key="tokens_analogy_k").value, {a, b, c}
    )
    fig = u.chart(default_page, "tokens_analogy")
    np.testing.assert_allclose(u.array(fig["data"][0]["y"]), ref_cos, atol=1e-5)
    assert fig["data"][0]["text"] == escaped(tok, ref_ids)
    assert "␣king − ␣he + ␣she" in fig["layout"]["title"]["text"]
    assert "honest note" in u.texts(default_page)


def test_the_bank_problem_is_told_beside_the_lookup(default_page, lm):
    bank = lm.tokenizer.encode(" bank").labels
    assert ("␣bank is a single token" if len(bank) == 1 else " + ".join(bank)) in u.texts(part(default_page, 2))


def test_formulas_are_shown(default_page):
    latex = " ".join(el.value for n in (2, 4, 6) for el in part(default_page, n).get("latex"))
    assert "W_E" in latex and r"\cos" in latex and r"\hat w_a - \hat w_b + \hat w_c" in latex


# ---- every control changes what is shown ------------------------------------------------------------


def test_vocabulary_size_slider_changes_the_map():
    at = part(u.run_page(PAGE), 3)
    before = u.chart(at, "tokens_pca")["data"]
    n = min(1000, at.slider(key="tokens_n_vocab").max)  # the vocabulary may hold fewer merged tokens
    at.slider(key="tokens_n_vocab").set_value(n).run()
    u.assert_ok(at)
    after = u.chart(at, "tokens_pca")["data"]
    assert len(before[0]["hovertext"]) == 500 and len(after[0]["hovertext"]) == n
    assert not np.allclose(u.array(before[1]["x"]), u.array(after[1]["x"]))  # refitted PCA moves the sentence's points


def test_3d_toggle_draws_three_components(lm, W_E):
    at = part(u.run_page(PAGE), 3)
    assert u.chart(at, "tokens_pca")["data"][1]["type"] == "scatter"
    at.toggle(key="tokens_pca_3d").set_value(True).run()
    u.assert_ok(at)
    vocab, sent = u.chart(at, "tokens_pca")["data"]
    assert vocab["type"] == sent["type"] == "scatter3d"
    ids = first_merged(lm.tokenizer, 500)
    mean, comps = independent_pca(W_E[ids], 3)
    drawn = np.c_[u.array(vocab["x"]), u.array(vocab["y"]), u.array(vocab["z"])]
    assert_same_up_to_sign(drawn, (W_E[ids] - mean) @ comps.T)
    assert "3 directions" in u.texts(at)


def test_token_choice_and_k_change_the_neighbours(lm, W_E):
    at = part(u.run_page(PAGE), 5)
    first = u.chart(at, "tokens_neighbours")["data"][0]
    at.selectbox(key="tokens_query").set_value(0).run()
    second = u.chart(at, "tokens_neighbours")["data"][0]
    enc = lm.tokenizer.encode(sentence_of(at))
    ref_ids, ref_cos = brute_top(W_E, W_E[enc.ids[0]], 10, {enc.ids[0]})
    np.testing.assert_allclose(u.array(second["y"]), ref_cos, atol=1e-5)
    assert second["text"] != first["text"]
    assert enc.labels[0] in u.chart(at, "tokens_neighbours")["layout"]["title"]["text"]
    at.slider(key="tokens_k").set_value(25).run()
    assert len(u.chart(at, "tokens_neighbours")["data"][0]["text"]) == 25


def test_analogy_boxes_change_the_answer_and_reject_multi_token_words(lm):
    at = part(u.run_page(PAGE), 6)
    before = u.chart(at, "tokens_analogy")["data"][0]["text"]
    at.text_input(key="tokens_analogy_a").input("queen").run()
    assert "␣queen − ␣he + ␣she" in u.chart(at, "tokens_analogy")["layout"]["title"]["text"]
    assert u.chart(at, "tokens_analogy")["data"][0]["text"] != before
    at.text_input(key="tokens_analogy_b").input("antidisestablishment").run()
    u.assert_ok(at)
    assert "tokens_analogy" not in u.chart_keys(at)
    assert "Box b must be ONE token" in u.texts(at)
    assert " + ".join(lm.tokenizer.encode(" antidisestablishment").labels) in [c.value for c in at.code]
    at.text_input(key="tokens_analogy_b").input("").run()
    assert "Box b is empty" in u.texts(at) and "tokens_analogy" not in u.chart_keys(at)
    at.text_input(key="tokens_analogy_b").input("he").run()
    at.text_input(key="tokens_analogy_c").input("wife").run()
    assert "␣queen − ␣he + ␣wife" in u.chart(at, "tokens_analogy")["layout"]["title"]["text"]


def test_leading_space_checkbox_switches_tokens(lm):
    at = part(u.run_page(PAGE), 6)
    at.checkbox(key="tokens_analogy_space").uncheck().run()
    u.assert_ok(at)
    if all(len(lm.tokenizer.encode(w)) == 1 for w in ("king", "he", "she")):  # true of the bundled vocabulary
        title = u.chart(at, "tokens_analogy")["layout"]["title"]["text"]
        assert "king − he + she" in title and "␣" not in title
    else:
        assert "must be ONE token" in u.texts(at) and "tokens_analogy" not in u.chart_keys(at)


def test_analogy_k_slider():
    at = part(u.run_page(PAGE), 6)
    at.slider(key="tokens_analogy_k").set_value(20).run()
    assert len(u.array(u.chart(at, "tokens_analogy")["data"][0]["y"])) == 20


def test_changing_the_sentence_changes_every_sentence_figure(lm):
    at = u.run_page(PAGE)
    chips = u.chart(at, "tokens_chips")["data"][0]["text"]
    embed = u.array(u.chart(part(at, 2), "tokens_embed")["data"][0]["z"])
    cos = u.array(u.chart(part(at, 4), "tokens_cosine")["data"][0]["z"])
    at.text_area(key="w_sentence").set_value("We sat on the bank of the river.").run()
    u.assert_ok(at)
    assert u.array(u.chart(at, "tokens_cosine")["data"][0]["z"]).shape != cos.shape
    assert u.array(u.chart(part(at, 2), "tokens_embed")["data"][0]["z"]).shape != embed.shape
    new = u.chart(part(at, 1), "tokens_chips")["data"][0]["text"]
    assert new != chips and [t.split("<br>")[0] for t in new] == [
        esc(s) for s in lm.tokenizer.encode("We sat on the bank of the river.").labels
    ]


# ---- repeated tokens, presets, bad inputs -----------------------------------------------------------------


def test_repeated_token_keeps_both_rows(lm):
    at, labels, the = u.run_repeated(PAGE, lm.tokenizer)
    T = len(labels)
    assert len(u.chart(at, "tokens_chips")["data"][0]["text"]) == T
    z = u.array(u.chart(part(at, 2), "tokens_embed")["data"][0]["z"])
    assert z.shape[0] == T
    np.testing.assert_array_equal(z[the[0]], z[the[1]])
    assert u.chart(at, "tokens_embed")["layout"]["yaxis"]["tickvals"] == list(range(T))
    assert "Your sentence has 1 repeated token:" in u.texts(at)
    assert len(u.array(u.chart(part(at, 3), "tokens_pca")["data"][1]["x"])) == T
    cos = u.array(u.chart(part(at, 4), "tokens_cosine")["data"][0]["z"])
    assert cos.shape == (T, T) and cos[the[0], the[1]] == pytest.approx(1, abs=1e-6)


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets(name):
    at = u.run_page(PAGE)
    at.selectbox(key="w_preset").set_value(name).run()
    u.assert_ok(at)
    assert sentence_of(at) == PRESETS[name]
    chips, embed = u.chart(at, "tokens_chips"), u.chart(part(at, 2), "tokens_embed")
    assert len(chips["data"][0]["text"]) == len(u.array(embed["data"][0]["z"]))


@u.EACH_BAD_INPUT
def test_bad_inputs(name, text):
    at = u.run_page(PAGE, sentence=text)
    u.assert_ok(at)
    shown = u.texts(at)
    if not text.strip():
        assert "type" in shown.lower() and not at.get("plotly_chart")
        return
    if name == "very_long":
        assert "reads at most 256" in shown and len(u.chart(at, "tokens_chips")["data"][0]["text"]) == 256
    charts = {key: u.chart(at, key) for _ in u.each_tab(at) for key in u.chart_keys(at)}
    assert {
        "tokens_chips",
        "tokens_embed",
        "tokens_pca",
        "tokens_cosine",
        "tokens_neighbours",
        "tokens_analogy",
    } <= set(charts)
    shown = " ".join(s for fig in charts.values() for s in strings(fig))
    # no markup, no invisible text reversal
    assert "<script" not in shown and "<img" not in shown and "\u202e" not in shown
    if name in ("script", "img"):
        assert "&lt;" in shown
    if name == "control":
        assert "⟨U+202E⟩" in shown and "␛" in shown


# ---- the parts ------------------------------------------------------------------------------------------------


def test_only_the_open_part_is_drawn_and_its_controls_are_kept_while_closed():
    at = u.run_page(PAGE)
    assert u.chart_keys(at) == ["tokens_chips"]  # the other five parts send nothing
    at = part(at, 5)
    assert u.chart_keys(at) == ["tokens_neighbours"]
    at.slider(key="tokens_k").set_value(25).run()
    at = part(part(at, 3), 5)  # away and back
    assert at.slider(key="tokens_k").value == 25
    assert len(u.chart(at, "tokens_neighbours")["data"][0]["text"]) == 25
