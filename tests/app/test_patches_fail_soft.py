"""Streamlit internals the app leans on fail soft: when one is missing, one warning and Streamlit's default behaviour.

ui/serving.py wraps the private ScriptRunner._run_script; ui/widths.py mounts a components-v2 component whose
JavaScript reads Streamlit's DOM test ids, and ui/menu.py one that tells Streamlit's router a link was followed;
ui/navigation.py clears PagesManager's private uses_pages_directory flag.
Each test removes one of them and checks the app goes on without it, and one test per patch checks that with
everything present the patch is in place.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys

import pytest
import streamlit as st
from streamlit.runtime import pages_manager
from streamlit.runtime.scriptrunner import script_runner
from streamlit.testing.v1 import AppTest

from ui import a11y, fit, menu, navigation, page_script, serving, widths
from ui.watcher import script

from ..apptest_utils import ROOT, TIMEOUT, assert_ok, charts_by_key, mounted, page_path

PAGE = page_path("4_Masking")  # first part: two charts, masking_mask and masking_row
REPORT = {"widths": {"masking_mask": 412.5}}  # as the browser would send it


def warnings_from(caplog, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == name and r.levelno == logging.WARNING]


def fake_runner(monkeypatch) -> type:
    """A new class in ScriptRunner's place, so a test can patch it without touching the real one."""

    class Runner:
        def _run_script(self, rerun_data):
            return rerun_data

    monkeypatch.setattr(script_runner, "ScriptRunner", Runner)
    return Runner


def hooked(module):
    """What ScriptRunner._run_script is now in `module` (None if missing)."""
    return getattr(getattr(module, "ScriptRunner", None), "_run_script", None)


def no_module(monkeypatch):
    monkeypatch.setitem(sys.modules, serving.TARGET[0], None)  # importing it raises ImportError


def no_class(monkeypatch):
    monkeypatch.delattr(script_runner, "ScriptRunner")


def no_method(monkeypatch):
    del fake_runner(monkeypatch)._run_script


def not_callable(monkeypatch):
    fake_runner(monkeypatch)._run_script = 42


@pytest.mark.parametrize("remove", [no_module, no_class, no_method, not_callable])
def test_serving_without_its_hook_warns_once_and_patches_nothing(monkeypatch, caplog, remove):
    monkeypatch.delenv(serving.RUNS_ENV, raising=False)
    real = script_runner.ScriptRunner.__dict__["_run_script"]
    remove(monkeypatch)
    before = hooked(script_runner)
    with caplog.at_level(logging.WARNING, logger="atlas.serving"):
        serving.install()  # must not raise
    [message] = warnings_from(caplog, "atlas.serving")
    assert "_run_script" in message and "default" in message
    assert hooked(script_runner) is before  # nothing patched
    monkeypatch.undo()
    assert script_runner.ScriptRunner.__dict__["_run_script"] is real  # the real runner was never touched


def test_serving_with_its_hook_patches_without_warning(monkeypatch, caplog):
    Runner = fake_runner(monkeypatch)
    monkeypatch.delenv(serving.RUNS_ENV, raising=False)
    with caplog.at_level(logging.WARNING, logger="atlas.serving"):
        serving.install()
    assert not warnings_from(caplog, "atlas.serving")
    assert hasattr(Runner._run_script, "places") and Runner()._run_script("data") == "data"


def run_masking() -> AppTest:
    """The masking page, opened through the app's router (which mounts the measurer), with a width report for
    masking_mask, as if the browser had sent it."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state[widths.KEY] = REPORT
    return at.switch_page(PAGE).run()


def drawn_widths(at: AppTest) -> dict:
    return {key: spec["layout"].get("width") for key, spec in charts_by_key(at).items()}


@pytest.mark.parametrize("missing", ["v2", "component"])
def test_widths_without_components_v2_warn_once_and_draw_default_widths(monkeypatch, caplog, missing):
    owner = st.components if missing == "v2" else st.components.v2
    monkeypatch.delattr(owner, missing)
    with caplog.at_level(logging.WARNING, logger="atlas.watcher"):
        monkeypatch.setattr(widths, "_measure", widths.measurer())  # what `import ui` does, on this Streamlit
    [message] = warnings_from(caplog, "atlas.watcher")
    assert "components.v2" in message and "default" in message
    assert widths._measure is None
    at = run_masking()
    assert_ok(at)
    assert not mounted(at, widths.KEY)  # no measurer in the sidebar
    assert drawn_widths(at) == {"masking_mask": None, "masking_row": None}  # the report is not used


def test_widths_with_components_v2_measure_and_draw_measured_widths(caplog):
    with caplog.at_level(logging.WARNING, logger="atlas.watcher"):
        assert callable(widths.measurer())
    assert not warnings_from(caplog, "atlas.watcher")
    at = run_masking()
    assert_ok(at)
    assert len(mounted(at, widths.KEY)) == 1
    assert drawn_widths(at) == {"masking_mask": 412.5, "masking_row": None}


# The measuring JavaScript in a stub page: the charts found, each with its frame, container and key class or
# without (a renamed test id), and the main column (900 px, 16 px padding each side) or not. Prints what the script
# reported.
JS_STUB = """
const page = JSON.parse(process.argv[1]);
const main = page.main ? { getBoundingClientRect: () => ({ width: 900 }) } : null;
const charts = page.charts.map(({ frame, box, cls }) => ({
  closest: (sel) => (sel.includes('stFullScreenFrame') && frame ? { getBoundingClientRect: () => ({ width: 400 }) }
    : sel.includes('stElementContainer') && box
      ? { classList: ['stElementContainer', ...(cls ? ['st-key-chart'] : [])] } : null),
}));
const frames = [];
Object.assign(globalThis, {
  document: { body: {}, querySelectorAll: () => charts, querySelector: () => main },
  window: { addEventListener() {}, removeEventListener() {} },
  MutationObserver: class { observe() {} disconnect() {} },
  requestAnimationFrame: (cb) => frames.push(cb),
  cancelAnimationFrame: () => {},
  getComputedStyle: () => ({ position: 'static', paddingLeft: '16px', paddingRight: '16px' }),
  innerWidth: 1300,
});
const sent = [];
const { default: measure } = await import('data:text/javascript,' + encodeURIComponent(process.argv[2]));
measure({ setStateValue: (name, value) => sent.push([name, value]) });
while (frames.length) frames.shift()();
console.log(JSON.stringify(sent));
"""

ALL_PRESENT = [{"frame": True, "box": True, "cls": True}]
PAGES = {
    "no_charts": {"main": True, "charts": []},  # stMain or stPlotlyChart renamed: nothing matches
    "no_frame": {"main": True, "charts": [{"frame": False, "box": True, "cls": True}]},
    "no_container": {"main": True, "charts": [{"frame": True, "box": False, "cls": True}]},
    "no_key_class": {"main": True, "charts": [{"frame": True, "box": True, "cls": False}]},
    "no_main_column": {"main": False, "charts": ALL_PRESENT},  # stMainBlockContainer renamed
    "all_present": {"main": True, "charts": ALL_PRESENT},
}


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
@pytest.mark.parametrize("page", PAGES.values(), ids=PAGES.keys())
def test_the_javascript_reports_no_chart_whose_test_id_is_missing(page):
    """A chart whose frame, container or key class is not found is left out of the report, which still gives the
    window's width (the screen under the key widths.SCREEN), and the main column's inside width (widths.MAIN) when
    the column is found."""
    out = subprocess.run(
        ["node", "--input-type=module", "-e", JS_STUB, json.dumps(page), script(widths.SCAN)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    sent = json.loads(out.stdout)
    charts = {"chart": 400} if page["charts"] == ALL_PRESENT else {}
    column = {widths.MAIN: 868} if page["main"] else {}
    assert sent == [["widths", {widths.SCREEN: 1300, **column, **charts}]]


def test_the_page_script_without_components_v2_warns_once_and_is_left_out(monkeypatch, caplog):
    monkeypatch.delattr(st.components.v2, "component")
    with caplog.at_level(logging.WARNING, logger="atlas.watcher"):
        monkeypatch.setattr(page_script, "_script", page_script.component())
    [message] = warnings_from(caplog, "atlas.watcher")
    assert "components.v2" in message and "hover" in message and "scrolls" in message and "takes no focus" in message
    at = run_masking()
    assert_ok(at)
    assert not mounted(at, page_script.KEY) and len(mounted(at, widths.KEY)) == 1


def menu_of(at: AppTest) -> dict:
    """The data the sidebar's menu component was mounted with (its sections and the current page's address)."""
    [element] = mounted(at, a11y.MENU_KEY)
    return json.loads(element.proto.json)


def test_the_menu_is_one_component_with_every_page_and_the_current_one_marked():
    """The menu is one element: the sections and pages of ui/navigation.SECTIONS in reading order, each with its
    icon, title and address, and the address of the page shown; no Streamlit page link in the sidebar."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    assert_ok(at)
    data = menu_of(at)
    assert [name for name, _ in data["sections"]] == list(navigation.SECTIONS)
    listed = [tuple(page) for _, pages in data["sections"] for page in pages]
    assert listed == [(p.icon, p.title, p.url_path) for p in navigation.ORDER]
    assert listed[0] == ("🧭", "Home", "") and ("🔍", "One head", "One_head") in listed and len(listed) == 17
    assert data["here"] == "" and not at.sidebar.get("page_link")
    at.switch_page("pages/3_One_head.py").run()
    assert_ok(at)
    assert menu_of(at)["here"] == "One_head"


def test_the_menu_without_components_v2_warns_once_and_draws_page_links(monkeypatch, caplog):
    monkeypatch.delattr(st.components.v2, "component")
    with caplog.at_level(logging.WARNING, logger="atlas.watcher"):
        monkeypatch.setattr(navigation, "menu_links", menu.component())
    [message] = warnings_from(caplog, "atlas.watcher")
    assert "components.v2" in message and "page links" in message
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    assert_ok(at)
    assert not mounted(at, a11y.MENU_KEY)
    assert len(at.sidebar.get("page_link")) == 17
    assert [h.value for h in at.sidebar.subheader] == list(navigation.SECTIONS)
    # the home page's pipeline too: the tour's link, then a link per page with what it shows
    pipeline = at.main.get("page_link")[1:]
    pages = [p for p in navigation.ORDER if p not in (navigation.HOME, navigation.TOUR)]
    assert [link.proto.label for link in pipeline] == [f"**{p.title}** · {p.blurb}" for p in pages]
    assert not [c for c in at.main.get("bidi_component") if c.proto.id.endswith(navigation.PIPELINE_KEY)]


# The fitting JavaScript on a stub page: formulas, each (its box's width, the width it needs at 16 px), chart titles
# and x-axis titles, each (its chart's width, where it starts, its width at 14 px).
# Prints the font size set on each ("": as drawn).
FIT_STUB = """
const [boxes, heads, axisTitles] = JSON.parse(process.argv[1]);
const sized = (e, drawn, size) => Object.assign(e, { style: { fontSize: drawn }, dataset: {}, size });
const px = (e) => parseFloat(e.style.fontSize);
const formulas = boxes.map(([room, need]) => {
  const katex = sized({}, '16px');
  return {
    clientWidth: room, get scrollWidth() { return need * px(katex) / 16; }, querySelector: () => katex, katex,
    tabIndex: -1, hasAttribute: () => false,
  };
});
const text = ([width, x, w]) => {
  const t = sized({ ownerSVGElement: { getBoundingClientRect: () => ({ width }) } }, '14px');
  t.getBBox = () => ({ x, width: w * px(t) / 14 });
  return t;
};
const titles = heads.map(text), axes = axisTitles.map(text);
const all = [...formulas.map((f) => f.katex), ...titles, ...axes];
const frames = [];
Object.assign(globalThis, {
  document: {
    body: {},
    addEventListener() {},
    removeEventListener() {},
    querySelectorAll: (sel) => (sel.includes('katex-display') ? formulas : sel.includes('gtitle') ? titles
      : sel.includes('$="title"') ? axes : sel.includes('data-atlas-px') ? all.filter((e) => 'atlasPx' in e.dataset)
      : []),
  },
  window: { addEventListener() {}, removeEventListener() {} },
  MutationObserver: class { observe() {} disconnect() {} },
  requestAnimationFrame: (cb) => frames.push(cb),
  cancelAnimationFrame: () => {},
  getComputedStyle: (e) => ({ fontSize: e.style.fontSize }),
});
const { default: fit } = await import('data:text/javascript,' + encodeURIComponent(process.argv[2]));
fit({ setStateValue: () => {} });
frames.shift()();
const first = all.map((e) => e.style.fontSize);
fit({ setStateValue: () => {} });  // a second pass (the page changed) starts again from the drawn sizes
while (frames.length) frames.shift()();
console.log(JSON.stringify([first, all.map((e) => e.style.fontSize)]));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_the_javascript_sets_a_wide_formula_or_title_smaller_down_to_the_floor():
    # fits; 2 px of rounding; 0.85×; below the floor; hidden
    boxes = [(358, 358), (358, 360), (358, 421), (358, 724), (0, 500)]
    heads = [(358, 4, 300), (358, 4, 414), (358, 4, 700)]  # fits; 0.85×; below the floor
    # x-axis titles (Context at 390 px: "vector: emb = the embedding W_E[id], Lk = after block k" 29 px past the
    # right edge): fits; centred at 200 px, 29 px past the right edge; at the middle, wider than the chart
    axes = [(358, 40, 250), (358, 16, 368), (358, -71, 500)]
    out = subprocess.run(
        ["node", "--input-type=module", "-e", FIT_STUB, json.dumps([boxes, heads, axes]), script(page_script.SCAN)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    first, again = json.loads(out.stdout)
    assert first == again  # refitting from the drawn sizes gives the same sizes, not smaller and smaller ones
    size = [float(s.removesuffix("px")) for s in first]
    assert size[0] == size[1] == 16 and size[4] == 16  # left as drawn
    assert size[2] == pytest.approx(16 * 358 / (421 - fit.SLACK_PX))
    assert size[3] == pytest.approx(16 * fit.FLOOR)  # 16 × 358/724 would be 7.9 px: it scrolls instead
    room = 358 - 4 - fit.MODEBAR_PX - fit.EDGE_PX
    assert size[5] == 14 and size[6] == pytest.approx(14 * room / 414) and size[7] == pytest.approx(14 * fit.FLOOR)
    assert size[8] == 14  # left as drawn
    assert size[9] == pytest.approx(14 * 2 * (358 - 200 - fit.EDGE_PX) / 368)  # the nearer edge: the right one
    assert size[10] == pytest.approx(14 * (358 - 2 * fit.EDGE_PX) / 500)


@pytest.mark.parametrize("missing", ["module", "flag"])
def test_navigation_without_the_pages_flag_warns_once_and_leaves_the_default(monkeypatch, caplog, missing):
    if missing == "module":
        monkeypatch.setitem(sys.modules, "streamlit.runtime.pages_manager", None)  # importing it raises ImportError
    else:
        monkeypatch.delattr(pages_manager.PagesManager, "uses_pages_directory", raising=False)
        monkeypatch.setattr(pages_manager, "PagesManager", type("PagesManager", (), {}))
    with caplog.at_level(logging.WARNING, logger="atlas.navigation"):
        found = navigation.pages_manager()
    [message] = warnings_from(caplog, "atlas.navigation")
    assert found is None and "uses_pages_directory" in message and "default" in message
    reruns = []
    monkeypatch.setattr(navigation, "_pages_manager", found)
    monkeypatch.setattr(navigation.st, "rerun", lambda: reruns.append(1))
    navigation.take_over()
    assert not reruns  # nothing to flip, nothing rerun


def test_navigation_with_the_pages_flag_takes_over_once_without_warning(monkeypatch, caplog):
    with caplog.at_level(logging.WARNING, logger="atlas.navigation"):
        assert navigation.pages_manager() is pages_manager.PagesManager
    assert not warnings_from(caplog, "atlas.navigation")
    fake, reruns = type("PagesManager", (), {"uses_pages_directory": True}), []
    monkeypatch.setattr(navigation, "_pages_manager", fake)
    monkeypatch.setattr(navigation.st, "rerun", lambda: reruns.append(1))
    navigation.take_over()
    navigation.take_over()
    # the old mode left once, then runs go through the router
    assert fake.uses_pages_directory is False and reruns == [1]
