"""Classroom features through AppTest: links that carry a page's controls and tab, presenter view, the step keys,
saving charts and numbers (traces: test_trace_file.py), and the guided tour's stops."""

from __future__ import annotations

import ast
import csv
import gc
import io
import json
import time
import weakref

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import ui
from figures.export import to_csv
from tests.apptest_utils import PAGES, ROOT, TIMEOUT, assert_ok, charts_by_key, each_tab, lazy_tabs, run_page
from transformer import Trace, run_trace
from ui import export, navigation, presenter, tour

SHARED = {"present", export.FORMAT_KEY}  # bound controls every page has: tested on their own below
MODEL = {"13_RoPE_and_shared_heads": "smollm2-135m"}  # its controls need a model with RoPE
# what a link needs beside the controls it changes for the page to draw them all (Context: exact words only would
# leave "bear" in one sentence, and the page stops before its other controls)
KEEPS_DRAWING = {"10_Context": {"context_word": "the"}}
# the tab a link opens where the first one has no controls of its own
FIRST_CONTROLS = {"1_Tokens_and_embeddings": {"tokens_part": "3 · A map of the space"}}
TAB_PAGES = [
    "1_Tokens_and_embeddings", "3_One_head", "4_Masking", "5_Softmax_and_temperature", "7_Multi_head",
    "13_RoPE_and_shared_heads", "14_Encoder_vs_decoder",
]


def page_controls(at: AppTest) -> list:
    """The page's own sliders, toggles, checkboxes and selectboxes (not the sidebar's shared ones)."""
    kinds = [at.main.slider, at.main.toggle, at.main.checkbox, at.main.selectbox, at.main.select_slider]
    return [
        w
        for ws in kinds
        for w in ws
        if w.key and not w.key.startswith(("w_", "bar_")) and w.key not in SHARED and not w.disabled
    ]


def other_value(w) -> tuple[str, object]:
    """A value the control does not have, as the address writes it, and as the widget then reads it."""
    kind = type(w).__name__
    if kind in ("Toggle", "Checkbox"):
        return str(not w.value).lower(), not w.value
    if kind == "Slider":
        hi, step = w.max, w.step
        new = w.value + step if w.value + step <= hi else w.value - step
        new = round(new, 6) if isinstance(step, float) else new
        return str(new), new
    options = list(w.options)  # selectbox / select_slider: the formatted option labels
    label = options[1] if w.format_func(w.value) == options[0] else options[0]
    return label, label


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_a_link_brings_back_the_pages_own_controls(page):
    model = {"model": MODEL[page.stem]} if page.stem in MODEL else {}
    model |= FIRST_CONTROLS.get(page.stem, {})
    at = run_page(str(page), **model)
    assert_ok(at)
    controls = page_controls(at)[:3]
    assert controls, "every page has controls of its own"
    query = {}
    expected = {}
    for w in controls:
        query[w.key], expected[w.key] = other_value(w)
    linked = run_page(str(page), **model, **query, **KEEPS_DRAWING.get(page.stem, {}))
    assert_ok(linked)
    shown = {w.key: w for w in page_controls(linked) if w.key in expected}
    assert shown.keys() == expected.keys()  # every control the link set is on the linked page
    for key, w in shown.items():
        got = w.format_func(w.value) if type(w).__name__ in ("Selectbox", "SelectSlider") else w.value
        assert got == pytest.approx(expected[key]) if isinstance(got, float) else got == expected[key], key


def bound_controls(at: AppTest) -> list:
    """The page's own controls kept in the address (widgets with bind="query-params"), in every container."""
    found, stack = [], [at._tree]
    while stack:
        node = stack.pop()
        stack.extend(getattr(node, "children", {}).values())
        key = getattr(getattr(node, "proto", None), "query_param_key", "")
        if key and not key.startswith(("w_", "bar_")) and key not in SHARED:
            found.append(node)
    return found


def start_and_shown(w) -> tuple[object, object]:
    """A bound control's declared start value and the value it shows, both as its widget message writes them
    (indices for the choice widgets, a list of numbers for a slider)."""
    kind = type(w).__name__
    if kind == "Expander":  # a folded section kept in the address (ui/pairs.py): open or not
        return w.proto.default_expanded, w.proto.expanded
    start = w.proto.default
    if kind == "Slider":
        return list(start), list(w.value) if isinstance(w.value, tuple) else [w.value]
    if kind == "SelectSlider":
        values = w.value if isinstance(w.value, tuple) else (w.value,)
        return list(start), [list(w.options).index(w.format_func(v)) for v in values]
    if kind in ("Selectbox", "Radio"):
        return start, w.index
    if kind == "Multiselect":
        return list(start), sorted(w.indices)
    return start, w.value  # checkbox, toggle, text box


LINKED_MODEL = {"13_RoPE_and_shared_heads": "smollm2-135m"}  # the RoPE views need a model with RoPE


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_a_control_the_link_leaves_out_opens_at_its_start_value(page):
    """The browser leaves a bound control out of the address while it shows its declared start value, so a link
    opened without that parameter must show exactly the start value. A page that picks its own value instead (the
    sidebar's head, position 3, a model's example words) could not share a view where the control is back at the
    start. Checked on every tab, with the sidebar away from layer 0, head 0."""
    query = {"model": LINKED_MODEL.get(page.stem, "shakespeare-gpt"), "layer": "1", "head": "2"}
    views = [{}] + [
        {key: label} for key, labels in lazy_tabs(run_page(str(page), **query)).items() for label in labels[1:]
    ]
    checked = 0
    for view in views:
        at = run_page(str(page), **query, **view)
        assert_ok(at)
        for w in bound_controls(at):
            start, shown = start_and_shown(w)
            assert shown == pytest.approx(start), (view, w.proto.query_param_key)
            checked += 1
    assert checked > 0, "the page has bound controls"


@pytest.mark.parametrize("name", TAB_PAGES)
def test_a_link_opens_the_tab_it_names(name):
    path = str(ROOT / "pages" / f"{name}.py")
    ((key, labels),) = lazy_tabs(run_page(path)).items()
    at = run_page(path, **{key: labels[-1]})
    assert_ok(at)
    assert at.session_state[key] == labels[-1]
    opened = [t for t in at.tabs if t.label == labels[-1]]
    assert opened and len(opened[0].children) > 0  # the last tab's part ran and drew something
    closed = [t for t in at.tabs if t.label in labels[:-1]]
    assert len(closed) == len(labels) - 1 > 0 and all(len(t.children) == 0 for t in closed)  # and only that one


def styles(at: AppTest) -> str:
    return " ".join(e.proto.body for e in at.get("html"))


def test_the_controls_bar_edits_the_same_state_as_the_sidebar():
    at = run_page("pages/3_One_head.py")
    assert (
        {s.key for s in at.sidebar.slider} >= {"w_layer", "w_head", "w_temperature"}
        and "w_sentence" in {t.key for t in at.sidebar.text_area}
    )
    assert (
        {s.key for s in at.main.slider} >= {"bar_layer", "bar_head", "bar_temperature"}
        and "bar_sentence" in {t.key for t in at.main.text_area}
    )
    # the bar shows on narrow screens only
    assert "display: none" in styles(at) and f"max-width: {presenter.NARROW_PX}px" in styles(at)
    at.slider(key="bar_layer").set_value(2).run()
    at.text_area(key="bar_sentence").set_value("I love bears.").run()
    assert at.slider(key="w_layer").value == 2 and at.text_area(key="w_sentence").value == "I love bears."
    assert at.query_params["layer"] == "2" and at.query_params["sentence"] == "I love bears."
    at.slider(key="w_head").set_value(3).run()
    assert at.slider(key="bar_head").value == 3


def test_presenter_view_shows_the_bar_and_enlarges_charts():
    normal = run_page("pages/3_One_head.py")
    plain = json.loads(normal.get("plotly_chart")[0].proto.spec)["layout"]
    assert "font" not in plain and "display: flex !important" not in styles(normal)
    at = run_page("pages/3_One_head.py", present="true")
    assert_ok(at)
    # the bar always, captions hidden
    assert "display: flex !important" in styles(at) and "stCaptionContainer" in styles(at)
    assert {b.key for b in at.main.button} >= {"step_back", "step_next"}
    layout = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]
    assert layout["font"]["size"] >= 16 and layout["title"]["font"]["size"] >= 20
    axes = [a for a in layout if a.startswith(("xaxis", "yaxis"))]
    assert axes and all(layout[a]["tickfont"]["size"] >= 16 for a in axes)
    assert layout["height"] > plain["height"]


@pytest.mark.parametrize("name", ["3_One_head", "5_Softmax_and_temperature", "7_Multi_head", "9_Next_token"])
def test_presenter_view_leaves_the_explanations_out_and_keeps_every_chart(name):
    normal, shown = run_page(f"pages/{name}.py"), run_page(f"pages/{name}.py", present="true")
    assert_ok(shown)
    written = lambda at: {m.value for m in at.main.markdown}  # noqa: E731
    assert written(shown) < written(normal)  # paragraphs left out, nothing added
    assert len(shown.get("plotly_chart")) == len(normal.get("plotly_chart")) > 0


def test_presenter_view_puts_the_home_pages_live_map_first():
    """A projected home page opens on the live attention map, not on the menu of pages;
    the normal view keeps the menu first."""
    order = lambda at: [h.value for h in at.main.subheader]  # noqa: E731
    assert order(run_page("app.py")) == ["The pipeline at a glance", "Attention, live"]
    shown = run_page("app.py", present="true")
    assert_ok(shown)
    assert order(shown) == ["Attention, live", "The pipeline at a glance"] and "home_pattern" in charts_by_key(shown)
    unreadable = run_page("app.py", present="true", sentence="   ")  # the map's message, and the menu still drawn
    assert_ok(unreadable)
    assert (
        order(unreadable) == ["Attention, live", "The pipeline at a glance"]
        and "only whitespace" in unreadable.info[0].value
    )


@pytest.mark.parametrize(
    ("name", "folds"),
    [
        ("10_Context", {"Sentences and word": "text_area", "Where the word is found": "dataframe"}),
        ("14_Encoder_vs_decoder", {"Models and sentence": "selectbox"}),
        ("6_Lecture_example", {"The lecture's code": "code"}),
    ],
)
def test_presenter_view_folds_a_pages_inputs(name, folds):
    """Presenter view moves a page's own inputs (or code) into closed expanders, so that the first screen keeps the
    figure; the normal view draws them on the page, with no expander of that name."""
    normal, shown = run_page(f"pages/{name}.py"), run_page(f"pages/{name}.py", present="true")
    assert_ok(shown)
    assert not {e.label for e in normal.expander} & set(folds)
    expanders = {e.label: e for e in shown.expander}
    for label, kind in folds.items():
        assert not expanders[label].proto.expanded
        # the same element, moved
        assert len(getattr(expanders[label], kind)) >= 1 and len(getattr(normal.main, kind)) >= 1
    assert len(shown.get("plotly_chart")) == len(normal.get("plotly_chart"))


def test_step_keys_walk_the_tabs_then_the_next_page():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["present"] = "true"
    at.run()
    at.switch_page(str(ROOT / "pages/4_Masking.py")).run()
    labels = lazy_tabs(at)["masking_part"]
    seen = [at.session_state["masking_part"]]
    for _ in labels[1:]:
        at.button(key="step_next").click().run()
        seen.append(at.session_state["masking_part"])
    assert seen == labels
    at.button(key="step_pagedown").click().run()  # past the last tab: the next page
    assert_ok(at)
    assert at.session_state[navigation.CURRENT_KEY] == "pages/5_Softmax_and_temperature.py"
    assert any("Softmax" in t.value for t in at.title)
    at.button(key="step_back").click().run()  # no tabs here: back to the page before
    assert at.session_state[navigation.CURRENT_KEY] == "pages/4_Masking.py"


def test_a_request_that_still_shows_the_old_tab_does_not_undo_a_step_key(monkeypatch):
    """A request the browser sent before the step key's run reached it (a chart's width report) carries the tab it
    still showed, in its value and its address; Streamlit takes it for a click. Without the guard the page went back
    to part 3 with the address on part 4 (tests/browser/test_classroom_browser.py pressed → right after a load)."""

    def request(label):  # what the browser sends: the open tab, and the address it shows
        at.session_state["masking_part"] = at.query_params["masking_part"] = label
        return at.run()

    at = AppTest.from_file(str(ROOT / "pages/4_Masking.py"), default_timeout=TIMEOUT)
    at.query_params["present"] = "true"
    part3, part4 = lazy_tabs(request("3 · Seeing the future"))["masking_part"][2:]
    at.button(key="step_next").click().run()
    assert at.session_state["masking_part"] == part4
    request(part3)  # the stale request
    assert at.session_state["masking_part"] == part4
    assert any("padding" in m.value.lower() for m in at.markdown)  # part 4 is drawn, not only its name kept
    at.run()  # a request with part 4 open: the browser shows it; going back is a click now
    assert request(part3).session_state["masking_part"] == part3
    at.button(key="step_next").click().run()
    later = time.monotonic() + presenter.STALE_S + 1
    monkeypatch.setattr(presenter.time, "monotonic", lambda: later)
    assert request(part3).session_state["masking_part"] == part3  # the old tab, seconds after the step: a click


def test_the_charts_save_at_slide_resolution_or_as_svg():
    at = run_page("pages/3_One_head.py")
    config = json.loads(at.get("plotly_chart")[0].proto.config)["toImageButtonOptions"]
    assert config["format"] == "png" and config["scale"] >= 2
    at = run_page("pages/3_One_head.py", **{export.FORMAT_KEY: "SVG"})
    assert json.loads(at.get("plotly_chart")[0].proto.config)["toImageButtonOptions"]["format"] == "svg"


def test_pages_offer_their_numbers_and_the_trace():
    at = run_page("pages/3_One_head.py")
    assert (
        [b.proto.label for b in at.sidebar.get("download_button")]
        == ["Numbers on this page (CSV)", "The model's trace (NPZ)"]
    )
    lecture = run_page("pages/6_Lecture_example.py")  # no model: its numbers, no trace
    assert [b.proto.label for b in lecture.sidebar.get("download_button")] == ["Numbers on this page (CSV)"]


def held_traces(earlier: dict[int, weakref.ref]) -> list[str]:
    """The texts of the traces alive once the shared caches let go of them, but those in `earlier`. (Another page
    runs first: Streamlit's __main__ keeps the globals of the last script run, one per process.)"""
    run_page("pages/6_Lecture_example.py")
    ui.models.TRACES._items.clear()
    st.cache_resource.clear()
    gc.collect()
    return [
        o.encoding.text
        for o in gc.get_objects()
        if isinstance(o, Trace) and (id(o) not in earlier or earlier[id(o)]() is not o)
    ]


@pytest.mark.parametrize("page", [None, *PAGES], ids=lambda p: "home" if p is None else p.stem)
def test_a_session_keeps_no_trace_of_its_own(monkeypatch, page):
    """Streamlit keeps a session's widgets, with their format functions and callbacks, until its next run, and its
    download buttons' data. A function written in a page file holds the page's globals, and with them the run's
    traces: 50 students would keep 50 traces (~30 MiB each for SmolLM2 at 64 tokens) beyond the shared cache's byte
    budget, and a session that was alive when a model first loaded (ui.models.get_model freezes the collector's
    objects) would keep its last ones for good. So after the page and after each of its tabs, once the shared caches
    let go of their traces, no trace may be left alive while the session is."""
    monkeypatch.setattr(ui.models, "TRACES", ui.models.TraceCache(budget=2**30))
    model = MODEL.get(page.stem, "shakespeare-gpt") if page else "shakespeare-gpt"
    # every model loaded (and the collector's frozen set made) before the page's objects exist:
    for name in ui.models.model_choices():
        ui.get_model(name)  # the objects of a run that loads one are frozen with it (Encoder vs decoder loads two)
    earlier = {id(o): weakref.ref(o) for o in gc.get_objects() if isinstance(o, Trace)}  # (a Trace is not hashable)
    at = run_page(
        "app.py" if page is None else f"pages/{page.name}", model=model, sentence="a sentence no other test runs"
    )
    assert_ok(at)
    if page is None or page.stem == "3_One_head":
        assert "The model's trace (NPZ)" in [b.proto.label for b in at.sidebar.get("download_button")]
    assert held_traces(earlier) == []
    tabs = []
    for label in each_tab(at):
        assert (label, held_traces(earlier)) == (label, [])
        tabs.append(label)
    assert bool(tabs) == (page is not None and "lazy_tabs(" in page.read_text(encoding="utf-8"))  # every tab checked


WIDGET_CALLABLES = ("format_func", "on_change", "on_click", "on_select")


@pytest.mark.parametrize("page", [ROOT / "app.py", ROOT / "home.py", *PAGES], ids=lambda p: p.stem)
def test_no_widget_is_handed_a_function_written_in_a_page(page):
    """The rule behind the test above, for every control (the test above sees only the ones it opens): a widget's
    format function or callback is a module's function, a bound method or a functools.partial of one, never a lambda or
    a function written in the page file."""
    tree = ast.parse(page.read_text(encoding="utf-8"))
    own = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}  # and names given a lambda:
    own |= {
        t.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in WIDGET_CALLABLES:
            v = node.value
            if isinstance(v, ast.Lambda) or (isinstance(v, ast.Name) and v.id in own):
                bad.append(f"line {v.lineno}: {node.arg}={ast.unparse(v)[:60]}")
    assert bad == []


def test_the_csv_holds_the_home_maps_weights():
    at = run_page("app.py", sentence="the cat and the dog", layer="1", head="2")
    rows = list(csv.DictReader(io.StringIO(to_csv(charts_by_key(at)))))
    cells = [r for r in rows if r["chart"] == "home_pattern"]
    lm = ui.get_model("shakespeare-gpt")
    pattern = run_trace(lm.model, lm.tokenizer, "the cat and the dog")["blocks.1.attn.hook_pattern"][2]  # (T, T)
    T = len(pattern)
    assert len(cells) == T * T
    # the blank (future) cells are 0 weight
    got = np.array([float(r["z"]) if r["z"] else 0.0 for r in cells]).reshape(T, T)
    np.testing.assert_allclose(got, pattern, atol=1e-6)


@pytest.mark.parametrize("n", range(1, len(tour.STOPS) + 1))
def test_each_tour_stop_opens_its_page_tab_and_sentence(n):
    stop = tour.STOPS[n - 1]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.switch_page(str(ROOT / "pages/0_Guided_tour.py")).run()
    at.slider(key=tour.INDEX_KEY).set_value(n).run()
    at.button(key="tour_open").click().run()
    assert_ok(at)
    assert at.session_state[navigation.CURRENT_KEY] == stop.page
    assert at.session_state["atlas_sentence"] == tour.SENTENCE
    assert at.title and "tour" not in at.title[0].value.lower()  # the stop's page drew, not the tour
    if stop.tab is not None:
        key, label = stop.tab
        assert label in lazy_tabs(at)[key] and at.session_state[key] == label


def test_the_step_keys_walk_the_tour_in_presenter_view():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["present"] = "true"
    at.run()
    at.switch_page(str(ROOT / "pages/0_Guided_tour.py")).run()
    at.button(key="step_next").click().run()
    at.button(key="step_next").click().run()
    assert at.slider(key=tour.INDEX_KEY).value == 3
    assert presenter.TABS_KEY in at.session_state
