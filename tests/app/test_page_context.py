"""The "Context changes meaning" page through AppTest: cosine, PCA and attention figures equal
independent computations on the traces."""

from __future__ import annotations

import json
import re
from itertools import combinations

import numpy as np
import pytest

from tests.apptest_utils import EACH_BAD_INPUT, array, assert_ok, chart, chart_keys, charts, page_path, run_page, texts
from transformer import Interventions, run_trace
from ui import PRESETS

PAGE = page_path("10_Context")
BEARS = [PRESETS[k] for k in ("I love bears", "She bears the pain", "Bears won the game", "Bear country")]
BANKS = [PRESETS["River bank"], PRESETS["Money bank"]]
FLIES = [PRESETS["Time flies"], PRESETS["Fruit flies"]]
BEAR_FORMS = r"(?<!\w)bear\w*"  # the default: "bear" and longer words starting with it


@pytest.fixture
def page():
    at = run_page(PAGE)
    assert_ok(at)
    return at


def last_token(enc, pattern: str) -> int:
    """Independently: the last token that starts before the end of the first case-insensitive match."""
    end = re.search(pattern, enc.text, re.IGNORECASE).end()
    return max(p for p, (s, _) in enumerate(enc.offsets) if s < end)


def vectors(lm, tr, pos: int) -> np.ndarray:
    """W_E[id] (the model's own parameter), then the stream after each block, float64. (n_layer + 1, d)"""
    W_E = lm.model.W_E.detach().numpy().astype(np.float64)
    return np.stack(
        [W_E[tr.encoding.ids[pos]], *(tr[f"blocks.{i}.hook_resid_post"][pos] for i in range(lm.cfg.n_layer))]
    ).astype(np.float64)


def cos(a, b) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def assert_context(at, lm, sentences, pattern, layer=0, head=0, temperature=1.0, unit=True, every_layer=False):
    """Cosine lines, PCA trajectories and attention bars equal numpy on fresh traces of `sentences` (all containing the
    word): with τ in every layer, traces at τ; else the vectors as trained and the bars of `layer` with τ on its heads
    alone."""
    forward = Interventions(temperature=temperature if every_layer else 1.0)
    traces = [run_trace(lm.model, lm.tokenizer, s, forward) for s in sentences]
    weights = Interventions(head_temperature=() if every_layer else ((layer, None, temperature),))
    shown = [run_trace(lm.model, lm.tokenizer, s, forward if every_layer else weights) for s in sentences]
    pos = [last_token(tr.encoding, pattern) for tr in traces]
    vec = [vectors(lm, tr, p) for tr, p in zip(traces, pos, strict=True)]
    n = len(sentences)
    table = at.dataframe[0].value
    table = table[table["word"] != "—"]  # the sentences that hold the word
    assert (
        table["position"].tolist() == pos
        and table["id"].tolist() == [tr.encoding.ids[p] for tr, p in zip(traces, pos, strict=True)]
    )
    # 1 · cosine per pair and layer
    lines = chart(at, "context_cosine")
    pairs = list(combinations(range(n), 2))
    assert [d["name"] for d in lines["data"]] == [f"sentence {a + 1} vs {b + 1}" for a, b in pairs]
    for d, (a, b) in zip(lines["data"], pairs, strict=True):
        want = cos(vec[a], vec[b])
        np.testing.assert_allclose(array(d["y"]), want, rtol=1e-4, atol=1e-5)
        same = traces[a].encoding.ids[pos[a]] == traces[b].encoding.ids[pos[b]]
        assert (abs(want[0] - 1) < 1e-6) == same  # identical at the embedding exactly when the token is the same
    # short on the axis
    assert lines["layout"]["xaxis"]["ticktext"] == ["emb", *(f"L{i}" for i in range(lm.cfg.n_layer))]
    # in full on hover
    assert lines["data"][0]["text"] == ["embedding W_E[id]", *(f"after block {i}" for i in range(lm.cfg.n_layer))]
    # 2 · PCA of all vectors together (unit length or raw), against an SVD, per component up to sign
    flat = np.concatenate(vec)  # (n·(L+1), d)
    if unit:
        flat = flat / np.linalg.norm(flat, axis=1, keepdims=True)
    xc = flat - flat.mean(0)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    traj = chart(at, "context_pca")
    got = np.concatenate([np.stack([array(d["x"]), array(d["y"])], axis=1) for d in traj["data"]])  # (n·(L+1), 2)
    for k in range(2):
        ref = xc @ vt[k]
        np.testing.assert_allclose(got[:, k], np.sign(got[:, k] @ ref) * ref, rtol=1e-3, atol=1e-4)
    assert traj["data"][0]["text"] == ["emb", *(f"L{i}" for i in range(lm.cfg.n_layer))]
    assert f"{100 * s[0] ** 2 / (s**2).sum():.1f}% of variance" in traj["layout"]["xaxis"]["title"]["text"]
    assert ("unit length" if unit else "raw") in traj["layout"]["title"]["text"]
    # 3 · the word's attention row in every sentence
    for i, (tr, p) in enumerate(zip(shown, pos, strict=True), start=1):
        bars = chart(at, f"context_attn_{i}")
        np.testing.assert_allclose(
            array(bars["data"][0]["y"]), tr[f"blocks.{layer}.attn.hook_pattern"][head, p], rtol=1e-5, atol=1e-7
        )  # two batched float32 passes
        assert bars["layout"]["title"]["text"] == f"Sentence {i} · token {p}"


def test_default_is_the_four_bear_sentences(page, lm):
    assert page.text_area(key="context_sentences").value.splitlines() == BEARS
    assert page.text_input(key="context_word").value == "bear" and page.toggle(key="context_forms").value
    assert page.dataframe[0].value["word"].tolist() == ["bears", "bears", "Bears", "bear"]
    assert_context(page, lm, BEARS, BEAR_FORMS)
    assert (
        chart_keys(page)
        == ["context_cosine", "context_pca", "context_attn_1", "context_attn_2", "context_attn_3", "context_attn_4"]
    )
    assert "different tokens" in texts(page)  # ␣bears, ears and ␣bear are different tokens


def test_bank_pair_is_identical_at_the_embedding_then_diverges(page, lm):
    page.selectbox(key="context_set").set_value("River bank vs money bank").run()
    assert_ok(page)
    assert (
        page.text_area(key="context_sentences").value.splitlines() == BANKS
        and page.text_input(key="context_word").value == "bank"
    )
    assert_context(page, lm, BANKS, r"\bbank")
    y = array(chart(page, "context_cosine")["data"][0]["y"])
    assert abs(y[0] - 1) < 1e-6 and np.all(y[1:] < 0.9999)
    assert "same token" in texts(page) and "cos = 1.000 at the embedding" in texts(page)


def test_flies_preset(page, lm):
    page.selectbox(key="context_set").set_value("Time flies vs fruit flies").run()
    assert_ok(page)
    assert page.text_input(key="context_word").value == "flies"
    assert_context(page, lm, FLIES, r"\bflies")


def test_word_and_forms_toggle_choose_the_matches(page, lm):
    page.toggle(key="context_forms").set_value(False).run()  # exact "bear": only sentence 4
    assert_ok(page)
    warnings = [w.value for w in page.warning]
    assert len(warnings) == 3 and all(f"Sentence {n} " in w for n, w in zip((1, 2, 3), warnings, strict=True))
    assert "«I love bears\\.»" in warnings[0]
    assert not charts(page) and "at least two sentences" in texts(page)
    page.text_input(key="context_word").set_value("BEARS").run()  # exact, any case: sentences 1–3
    assert_ok(page)
    assert [w.value.split(" ")[1] for w in page.warning] == ["4"]
    assert page.dataframe[0].value["word"].tolist() == ["bears", "bears", "Bears", "—"]
    assert chart_keys(page) == ["context_cosine", "context_pca", "context_attn_1", "context_attn_2", "context_attn_3"]
    assert_context(page, lm, BEARS[:3], r"\bbears\b")
    page.text_input(key="context_word").set_value("  ").run()
    assert_ok(page)
    assert not charts(page) and "Type the word" in texts(page)


def test_repeated_word_and_split_word(page, lm):
    repeated = "the cat and the dog and the bird"  # "␣the" and "␣and" twice
    page.text_area(key="context_sentences").set_value(f"{repeated}\nthe bird").run()
    page.text_input(key="context_word").set_value("the").run()
    assert_ok(page)
    assert "Sentence 1 contains the word 3 times; the first is followed." in texts(page)
    assert page.dataframe[0].value["position"].tolist() == [0, 0]
    labels = run_trace(lm.model, lm.tokenizer, repeated).encoding.labels
    bars = chart(page, "context_attn_1")
    assert labels.count("␣the") == 2 and bars["layout"]["xaxis"]["ticktext"].count("␣the") == 2  # both keep their bar
    assert array(bars["data"][0]["x"]).tolist() == list(range(len(labels)))
    assert_context(page, lm, [repeated, "the bird"], r"\bthe\b")
    # a word split into several tokens follows its last one
    page.text_area(key="context_sentences").set_value("\n".join(BEARS[2:])).run()
    page.text_input(key="context_word").set_value("bear").run()
    assert_ok(page)
    enc = lm.tokenizer.encode(BEARS[2])
    table = page.dataframe[0].value
    assert table["tokens"][0] == " + ".join(lbl for lbl, (s, e) in zip(enc.labels, enc.offsets, strict=True) if s < 5)
    assert table["followed token"][0] == enc.labels[last_token(enc, r"bears")]
    assert_context(page, lm, BEARS[2:], BEAR_FORMS)


def test_pca_unit_toggle(page, lm):
    before = array(chart(page, "context_pca")["data"][0]["x"])
    page.toggle(key="context_unit").set_value(False).run()
    assert_ok(page)
    assert_context(page, lm, BEARS, BEAR_FORMS, unit=False)
    assert not np.allclose(np.abs(before), np.abs(array(chart(page, "context_pca")["data"][0]["x"])))


def test_sidebar_layer_head_and_temperature(page, lm):
    page.slider(key="w_layer").set_value(2).run()
    page.slider(key="w_head").set_value(3).run()
    assert_ok(page)
    assert_context(page, lm, BEARS, BEAR_FORMS, layer=2, head=3)
    assert "layer 2, head 3" in [h.value for h in page.header][2]
    before = array(chart(page, "context_attn_4")["data"][0]["y"])
    cosines = array(chart(page, "context_cosine")["data"][0]["y"])
    page.slider(key="w_temperature").set_value(0.3).run()  # τ on the weights shown: the bars change, the vectors do not
    assert_ok(page)
    assert_context(page, lm, BEARS, BEAR_FORMS, layer=2, head=3, temperature=0.3)
    assert not np.allclose(before, array(chart(page, "context_attn_4")["data"][0]["y"]))
    np.testing.assert_array_equal(array(chart(page, "context_cosine")["data"][0]["y"]), cosines)
    assert "The word's vectors, sections 1 and 2: the model's as trained (τ = 1)" in texts(page)
    page.toggle(key="w_tau_every_layer").set_value(True).run()  # τ in every layer: the vectors change too
    assert_ok(page)
    assert_context(page, lm, BEARS, BEAR_FORMS, layer=2, head=3, temperature=0.3, every_layer=True)
    assert not np.allclose(cosines, array(chart(page, "context_cosine")["data"][0]["y"]))


def test_sentence_count_limits(page, lm):
    page.text_area(key="context_sentences").set_value("I love bears.").run()
    assert_ok(page)
    assert not charts(page) and "at least two sentences" in texts(page)
    five = "\n\n".join([*BEARS, "A bear again."])  # blank lines are skipped
    page.text_area(key="context_sentences").set_value(five).run()
    assert_ok(page)
    assert "You typed 5 sentences; the first 4 are compared." in texts(page)
    assert_context(page, lm, BEARS, BEAR_FORMS)


def test_sidebar_sentence_button(page, lm):
    page.selectbox(key="w_preset").set_value("Money bank").run()
    page.button(key="context_use_sidebar").click().run()
    assert_ok(page)
    assert page.text_area(key="context_sentences").value.splitlines()[0] == PRESETS["Money bank"]
    assert page.warning[0].value.startswith(
        "Sentence 1 «She put the money in the bank\\.» does not contain the word «bear»"
    )
    page.text_area(key="context_sentences").set_value("\n".join(BEARS)).run()
    page.text_area(key="w_sentence").set_value("My brown bear\nsleeps all winter.").run()
    assert_ok(page)
    assert page.text_area(key="context_sentences").value.splitlines() == BEARS  # the sidebar alone changes nothing here
    page.button(key="context_use_sidebar").click().run()
    assert_ok(page)
    want = ["My brown bear sleeps all winter.", *BEARS[1:]]
    assert page.text_area(key="context_sentences").value.splitlines() == want
    assert_context(page, lm, want, BEAR_FORMS)


@EACH_BAD_INPUT
def test_bad_inputs_in_the_sidebar(name, text, lm):
    at = run_page(PAGE)
    at.text_area(key="w_sentence").set_value(text).run()
    assert_ok(at)
    assert len(chart_keys(at)) == 6  # the sidebar sentence is not used until the button is pressed
    at.button(key="context_use_sidebar").click().run()
    assert_ok(at)
    if not text.strip():
        assert (
            "The sidebar sentence is empty" in texts(at)
            and at.text_area(key="context_sentences").value.splitlines() == BEARS
        )
        return
    first = at.text_area(key="context_sentences").value.splitlines()[0]
    assert first == " ".join(text.split())
    assert_safe(at)
    if re.search(BEAR_FORMS, first, re.IGNORECASE):  # the emoji sentence has "bears"
        assert len(chart_keys(at)) == 6
    else:
        assert at.warning and at.warning[0].value.startswith("Sentence 1 ")
        assert len(chart_keys(at)) == 5  # sentences 2–4 still compared
    if name == "very_long":
        assert "in its first 256 tokens" in at.warning[0].value and "the model reads only its first 256" in texts(at)


@EACH_BAD_INPUT
def test_bad_inputs_in_the_page(name, text):
    at = run_page(PAGE)
    at.text_area(key="context_sentences").set_value(text).run()  # the whole box
    assert_ok(at)
    assert not charts(at) and "at least two sentences" in texts(at)
    at.text_area(key="context_sentences").set_value(f"I love bears.\n{text}").run()  # one line of it
    assert_ok(at)
    assert_safe(at)
    lines = [s for s in text.splitlines() if s.strip()]
    if not lines:
        assert not charts(at) and "at least two sentences" in texts(at)
    elif "bear" in text:
        assert len(chart_keys(at)) == 4  # both sentences: cosine, PCA, two attention rows
    else:
        assert [w.value.split(" ")[:2] for w in at.warning] == [["Sentence", str(n)] for n in range(2, 2 + len(lines))]
        assert not charts(at) and "at least two sentences" in texts(at)
    at.text_area(key="context_sentences").set_value("\n".join(BEARS)).run()
    at.text_input(key="context_word").set_value(text[:40]).run()  # as the word
    assert_ok(at)
    assert_safe(at)
    if not text.strip():
        assert "Type the word" in texts(at)


def assert_safe(at):
    """User text reaches plotly only escaped, and messages only with markdown characters escaped."""
    for c in charts(at):
        assert "<script" not in json.dumps(c) and "<img" not in json.dumps(c)
    for w in at.warning:  # each quotes the user's text, «…», with every markdown character escaped
        quotes = re.findall(r"«(.*?)»", w.value)
        assert quotes, w.value
        for quoted in quotes:
            assert not re.search(r"(?<!\\)[<>\[\]()`*_]", quoted), w.value
