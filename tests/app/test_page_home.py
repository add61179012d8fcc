"""The home page (app.py) and the shared sidebar state it introduces."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ui
from tests import apptest_utils as apptest
from tests.apptest_utils import BAD_INPUTS, array, assert_ok, chart, run_page, texts
from transformer import Interventions, run_trace
from transformer.loading import real_models
from ui import navigation
from ui.state import DEFAULT_SENTENCE, PRESETS


def pattern(sentence: str, layer: int, head: int, tau: float = 1.0, every_layer: bool = False) -> np.ndarray:
    """The head's weights with τ in every layer, or (the sidebar's default) on the heads of its layer alone."""
    lm = ui.get_model("shakespeare-gpt")
    iv = Interventions(temperature=tau) if every_layer else Interventions(head_temperature=((layer, None, tau),))
    return run_trace(lm.model, lm.tokenizer, sentence, iv)[f"blocks.{layer}.attn.hook_pattern"][head]


def shown(at) -> np.ndarray:
    """The live heatmap's weights, masked (future) cells read as 0."""
    return np.nan_to_num(array(chart(at, "home_pattern")["data"][0]["z"]))


def test_default_page_shows_the_models_pattern_and_the_pipeline():
    at = run_page("app.py")
    assert_ok(at)
    np.testing.assert_allclose(shown(at), pattern(DEFAULT_SENTENCE, 0, 0), atol=1e-6)
    assert "Model card: shakespeare-gpt" in [e.label for e in at.expander]
    [tour] = at.main.get("page_link")
    assert tour.proto.page == navigation.TOUR.url_path
    # the pipeline, one element (ui/menu.py): every other page, once, in reading order, with what the page shows
    [pipeline] = [c for c in at.main.get("bidi_component") if c.proto.id.endswith(navigation.PIPELINE_KEY)]
    data = json.loads(pipeline.proto.json)
    assert (data["label"], data["heading"], data["here"]) == ("The pipeline", "h4", "")
    assert [name for name, _ in data["sections"]] == ["Inputs", "One head", "The whole model", "Beyond"]
    listed = [tuple(link) for _, links in data["sections"] for link in links]
    pages = [p for p in navigation.ORDER if p not in (navigation.HOME, navigation.TOUR)]
    assert listed == [(p.icon, p.title, p.url_path, p.blurb) for p in pages] and len(listed) == 15
    assert ("🎭", "Masking", "Masking", "A decoder may not look at the future.") in listed


def test_the_tests_page_lists_are_the_menus():
    """Tests parametrized over tests.apptest_utils.PAGES (every page file) run on every page of the menu, and those
    that check the sidebar sentence on SENTENCE_PAGES on every page that reads it: a list found empty or short would
    let them pass on fewer pages."""
    menu = sorted(p.path for p in navigation.ORDER if p.path.startswith("pages/"))
    assert len(menu) >= 16 and sorted(str(p.relative_to(apptest.ROOT)) for p in apptest.PAGES) == menu
    own_inputs = {  # the pages that read a text of their own, not the sidebar's sentence (the home page reads it)
        "pages/0_Guided_tour.py",
        "pages/6_Lecture_example.py",
        "pages/10_Context.py",
        "pages/12_Cross_attention.py",
        "pages/14_Encoder_vs_decoder.py",
        "pages/15_Heads_forming.py",
    }
    assert set(apptest.PAGE_FILES) - apptest.SENTENCE_PAGES == own_inputs


def test_controls_change_the_heatmap():
    at = run_page("app.py")
    at.slider(key="w_layer").set_value(2).run()
    at.slider(key="w_head").set_value(3).run()
    np.testing.assert_allclose(shown(at), pattern(DEFAULT_SENTENCE, 2, 3), atol=1e-6)
    assert "layer 2, head 3" in chart(at, "home_pattern")["layout"]["title"]["text"]
    at.slider(key="w_temperature").set_value(0.5).run()
    np.testing.assert_allclose(shown(at), pattern(DEFAULT_SENTENCE, 2, 3, 0.5), atol=1e-6)
    at.toggle(key="w_tau_every_layer").set_value(True).run()
    np.testing.assert_allclose(shown(at), pattern(DEFAULT_SENTENCE, 2, 3, 0.5, every_layer=True), atol=1e-6)
    assert not np.allclose(shown(at), pattern(DEFAULT_SENTENCE, 2, 3, 0.5), atol=1e-4)  # layers 0 and 1 changed too
    at.selectbox(key="w_preset").select("The cat sat").run()
    assert at.text_area(key="w_sentence").value == PRESETS["The cat sat"]
    np.testing.assert_allclose(shown(at), pattern(PRESETS["The cat sat"], 2, 3, 0.5, every_layer=True), atol=1e-6)
    assert at.query_params["sentence"] == PRESETS["The cat sat"]  # the address bar follows, for sharing


def test_query_string_opens_the_same_state():
    at = run_page("app.py", sentence="the cat and the dog", layer="3", head="1", temperature="0.25")
    assert_ok(at)
    assert at.text_area(key="w_sentence").value == "the cat and the dog"
    assert (
        (at.slider(key="w_layer").value, at.slider(key="w_head").value, at.slider(key="w_temperature").value)
        == (3, 1, 0.25)
    )
    z = shown(at)
    np.testing.assert_allclose(z, pattern("the cat and the dog", 3, 1, 0.25), atol=1e-6)
    # "the" twice: both rows kept
    assert z.shape[0] == len(ui.get_model("shakespeare-gpt").tokenizer.encode("the cat and the dog"))


@pytest.mark.parametrize(
    "query",
    [
        {"layer": "99", "head": "-4", "temperature": "nan"},
        {"model": "../../etc", "layer": "x"},
        {"temperature": "1e9"},
        {"model": "translator-en-fr"},
    ],
)
def test_bad_query_values_fall_back_to_valid_ones(query):
    at = run_page("app.py", **query)
    assert_ok(at)
    assert at.selectbox(key="w_model").value == "shakespeare-gpt"
    # the translator has its own page, not this picker
    assert at.selectbox(key="w_model").options == [*real_models(), "shakespeare-gpt"]
    assert 0 <= at.slider(key="w_layer").value <= 3 and 0 <= at.slider(key="w_head").value <= 3
    assert 0.05 <= at.slider(key="w_temperature").value <= 5.0


@pytest.mark.parametrize(("name", "text"), BAD_INPUTS, ids=[n for n, _ in BAD_INPUTS])
def test_bad_inputs(name, text):
    at = run_page("app.py", sentence=text)
    assert_ok(at)
    if not text.strip():
        assert "home_pattern" not in [c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")]
        assert "empty" in texts(at) or "whitespace" in texts(at)
        return
    z = shown(at)
    assert np.allclose(z.sum(axis=1), 1.0, atol=1e-5)
    if name == "very_long":
        assert z.shape == (256, 256) and "reads at most 256" in texts(at)
    spec = str(chart(at, "home_pattern"))
    assert "<script" not in spec and "<img" not in spec


def test_a_session_keeps_its_own_pages_between_runs():
    """The menu's st.Page objects are made at a session's first run and kept: st.navigation marks the one it returns
    as the one to run, so two sessions never share them."""
    a, b = run_page("app.py"), run_page("app.py")
    pages = a.session_state[navigation.PAGES_KEY]
    a.slider(key="w_head").set_value(1).run()
    assert_ok(a)
    assert a.session_state[navigation.PAGES_KEY] is pages
    mine = {id(p) for section in pages.values() for p in section}
    assert not mine & {id(p) for section in b.session_state[navigation.PAGES_KEY].values() for p in section}
