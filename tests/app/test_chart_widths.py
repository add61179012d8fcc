"""Charts are drawn at the width the browser last measured for them (ui/widths.py); a bad report is ignored."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from figures.narrow import CELL_NOTE
from tests.apptest_utils import ROOT, TIMEOUT, assert_ok, charts_by_key, page_path
from ui import presenter, widths

PAGE = page_path("4_Masking")  # first part: two charts, masking_mask and masking_row


def run_with(report) -> AppTest:
    """Run the page with `report` as the measuring component's state, as if the browser had sent it."""
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.session_state[widths.KEY] = report
    return at.run()


def drawn_widths(at: AppTest) -> dict:
    return {key: spec["layout"].get("width") for key, spec in charts_by_key(at).items()}


def test_a_measured_chart_is_drawn_at_its_width_and_the_others_as_before():
    at = run_with({"widths": {"masking_mask": 412.5, "some_other_page_chart": 300}})
    assert_ok(at)
    assert drawn_widths(at) == {"masking_mask": 412.5, "masking_row": None}
    at.run()  # and again on the next run (the report is kept)
    assert drawn_widths(at)["masking_mask"] == 412.5


def test_without_a_report_no_chart_gets_a_width():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    assert_ok(at)
    assert set(drawn_widths(at).values()) == {None}


@pytest.mark.parametrize(
    ("report", "drawn"),
    [
        # a phone: Streamlit stacks the page's two columns, each chart as wide as the main column
        ({widths.SCREEN: 390.0, widths.MAIN: 358.0}, {"masking_mask": 358.0, "masking_row": 358.0}),
        # a measured chart keeps its own width
        (
            {widths.SCREEN: 390.0, widths.MAIN: 358.0, "masking_mask": 300.0},
            {"masking_mask": 300.0, "masking_row": 358.0},
        ),
        # from STACKED_PX up columns sit side by side: a chart not measured is drawn as before
        ({widths.SCREEN: widths.STACKED_PX, widths.MAIN: 608.0}, {"masking_mask": None, "masking_row": None}),
        ({widths.SCREEN: 1024.0, widths.MAIN: 564.0}, {"masking_mask": None, "masking_row": None}),
        ({widths.MAIN: 358.0}, {"masking_mask": None, "masking_row": None}),  # no window width: not known to be a phone
    ],
    ids=["phone", "phone-measured", "stacked-px", "laptop", "no-screen"],
)
def test_on_a_phone_a_chart_not_measured_yet_is_as_wide_as_the_column(report, drawn):
    """(On a phone each tab opened for the first time mounted its charts twice: first hidden, at no width or one
    measured for another window, then again after the report said they were narrow.) Below STACKED_PX every chart
    fills the main column, so one the browser has not measured yet is drawn at the column's width, and narrow."""
    at = run_with({"widths": report})
    assert_ok(at)
    assert drawn_widths(at) == drawn
    if drawn["masking_row"] is not None:
        assert at.session_state[widths.NARROW_KEY]["masking_row"] is True


def test_a_report_asks_for_a_redraw_only_for_a_chart_it_measured(monkeypatch):
    """(A phone's first report, sent before the page's first charts were drawn, holds only the window's and the main
    column's widths; the redraw it asked for ran without the sentence the browser had not sent yet, and emptied it.)
    A chart drawn before any report is redrawn narrow once the browser has measured it, not on the column's width."""
    box = {presenter.KEY: False, widths.NARROW_KEY: {"masking_row": False}}  # drawn before any report: not narrow
    monkeypatch.setattr(st, "session_state", box)
    box[widths.KEY] = {"widths": {widths.SCREEN: 390.0, widths.MAIN: 358.0}}
    widths._check_drawn()
    assert widths.REDRAW_KEY not in box
    box[widths.KEY] = {"widths": {widths.SCREEN: 390.0, widths.MAIN: 358.0, "masking_row": 358.0}}
    widths._check_drawn()
    assert box[widths.REDRAW_KEY] is True


BAD_REPORTS = {
    "not_a_number": {"widths": {"masking_mask": "wide"}},
    "nan": {"widths": {"masking_mask": float("nan")}},
    "infinite": {"widths": {"masking_mask": float("inf")}},
    "bool": {"widths": {"masking_mask": True}},
    "too_narrow": {"widths": {"masking_mask": widths.MIN_W - 1}},
    "too_wide": {"widths": {"masking_mask": widths.MAX_W + 1}},
    "widths_not_a_dict": {"widths": [412]},
    "too_many_charts": {"widths": {f"chart{i}": 400 for i in range(widths.MAX_CHARTS)} | {"masking_mask": 412}},
    "no_widths": {"other": 1},
}


@pytest.mark.parametrize("report", BAD_REPORTS.values(), ids=BAD_REPORTS.keys())
def test_a_bad_report_is_ignored(report):
    at = run_with(report)
    assert_ok(at)
    assert drawn_widths(at)["masking_mask"] is None


def panel_rows(spec: dict) -> list[int]:
    """How many maps of a panel figure sit in each row (maps of a row share their y axis)."""
    rows: dict[str, int] = {}
    for trace in spec["data"]:
        rows[trace.get("yaxis", "y")] = rows.get(trace.get("yaxis", "y"), 0) + 1
    return list(rows.values())


@pytest.mark.parametrize(("width", "rows"), [(None, [4]), (358.0, [1, 1, 1, 1]), (570.0, [2, 2]), (1100.0, [4])])
def test_the_heads_of_a_layer_wrap_into_as_many_rows_as_the_width_needs(width, rows):
    """(At 390 px the four heads of a layer were crushed into one row, their titles overprinting.) Each map gets at
    least widths.PANEL_PX: the bundled model's four heads one per row on a phone, two by two on a laptop with the
    sidebar open, four in a row on a wide screen, and four in a row before any width is known."""
    at = AppTest.from_file(page_path("7_Multi_head"), default_timeout=TIMEOUT)
    at.query_params["model"] = "shakespeare-gpt"
    if width is not None:
        at.session_state[widths.KEY] = {"widths": {"multihead_heads": width}}
    at.run()
    assert_ok(at)
    assert panel_rows(charts_by_key(at)["multihead_heads"]) == rows


def test_in_presenter_view_the_heads_of_a_layer_take_the_rows_that_give_each_map_the_most_room():
    """(On a 1024 × 768 projector SmolLM2's nine heads went three a row, each map 3.5 times wider than tall.) In
    presenter view, once the browser has reported the chart's room on the first screen, its maps go in the rows that
    give each the largest square: the bundled model's four heads in a 570 px column 330 px above the screen's bottom
    edge go in one row (margins 336 px across, 53 + 163 px down: one row gives each 234 × 0.91 / 4 = 53 px across and
    318 − 216 = 102 px down, two rows 113 px across but (102 − 40) / 2 = 31 px down), where the width alone puts two
    in a row."""
    at = AppTest.from_file(page_path("7_Multi_head"), default_timeout=TIMEOUT)
    at.query_params["model"] = "shakespeare-gpt"
    at.query_params["present"] = "true"
    at.session_state[widths.KEY] = {"widths": {"multihead_heads": 570.0}}
    at.session_state[widths.ROOM_KEY] = {"rooms": {"screen": 768, "rooms": {"multihead_heads": 330}}}
    at.run()
    assert_ok(at)
    drawn = charts_by_key(at)["multihead_heads"]
    assert panel_rows(drawn) == [2, 2]  # its margins are not known before it is drawn
    m = drawn["layout"]["margin"]
    assert at.session_state[widths.FRAMES_KEY]["multihead_heads"] == (m["l"] + m["r"], m["t"], m["b"])
    assert (m["l"] + m["r"], m["t"], m["b"]) == (336, 53, 163)  # the margins the docstring's sums use
    at.run()  # (in the browser: the next report's redraw)
    assert panel_rows(charts_by_key(at)["multihead_heads"]) == [4]
    at.session_state[widths.ROOM_KEY] = {"rooms": {"screen": 768, "rooms": {"multihead_heads": 420}}}
    at.run()  # 102 px more down: two rows give each map 76 px, one row 53
    assert panel_rows(charts_by_key(at)["multihead_heads"]) == [2, 2]


@pytest.mark.parametrize(
    ("width", "height", "n", "per_row"),
    [
        (872.0, 406.0, 9, 5),  # SmolLM2 on a 1024 × 768 projector: 89 × 59 px a map in rows of 5 (3 a row: 158 × 26)
        (1128.0, 403.0, 9, 9),  # on a 1280 × 720 one: 64 × 155 px in one row (5 a row: 134 × 58)
        (872.0, 406.0, 12, 6),  # MiniLM's twelve heads: 71 × 59 px in rows of 6 (12 a row: 28 px across)
        (872.0, 2000.0, 9, 2),  # a tall screen: 244 px across two a row (one a row: 195 px between maps, 21 px down)
    ],
)
def test_per_row_on_screen_gives_each_map_the_largest_square(width, height, n, per_row):
    """Margins of SmolLM2's heads in presenter view (184 + 184 across, 53 + 195 down), maps 3 % of the plot's width
    apart, rows ROW_GAP_PX apart (a single column: the bottom margin apart)."""
    assert widths.per_row_on_screen(width, n, height, (368.0, 53.0, 195.0)) == per_row


@pytest.mark.parametrize(
    ("width", "expected"), [(None, 6), (150.0, 1), (358.0, 1), (570.0, 2), (736.0, 3), (980.0, 4), (8000.0, 6)]
)
def test_panels_per_row_leaves_each_map_its_width(width, expected):
    assert widths.per_row_at(width) == expected
    if width is not None and 1 < expected < 6:
        assert (
            (width - widths.PANEL_FRAME_PX) / expected
            >= widths.PANEL_PX
            > (width - widths.PANEL_FRAME_PX) / (expected + 1)
        )  # one more would not fit


@pytest.mark.parametrize(
    ("width", "below"),
    [(None, False), (358.0, True), (widths.NARROW_PX - 1, True), (widths.NARROW_PX, False), (900.0, False)],
)
def test_a_narrow_chart_has_its_colour_bar_under_the_plot(width, below):
    """(At 390 px the colour bar beside a map left its plot 134 px of a 358 px column.) A chart measured narrower
    than NARROW_PX is drawn with its colour bar under the plot, the others as before."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["model"] = "shakespeare-gpt"
    if width is not None:
        at.session_state[widths.KEY] = {"widths": {"home_pattern": width}}
    at.run()
    assert_ok(at)
    assert (charts_by_key(at)["home_pattern"]["data"][0]["colorbar"].get("orientation") == "h") is below


@pytest.mark.parametrize(
    ("screen", "present", "drawn"),
    [(None, False, True), (390.0, False, True), (900.0, False, True), (901.0, False, False), (1300.0, False, False),
     (1300.0, True, True), (390.0, True, True)],
)
def test_the_controls_bar_is_drawn_where_its_css_can_show_it(screen, present, drawn):
    """The bar above the page shows (CSS) on a screen of at most NARROW_PX and in presenter view: a browser that said
    its window is wider gets no bar; one that has not said yet gets it. The sidebar draws its own sentence, layer,
    head and τ controls except on a screen said to be at most NARROW_PX wide, where the bar holds them (the sidebar's
    presets stay: the bar hides its own there)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["model"] = "shakespeare-gpt"
    if present:
        at.query_params["present"] = "true"
    if screen is not None:
        at.session_state[widths.KEY] = {"widths": {widths.SCREEN: screen}}
    at.run()
    assert_ok(at)
    bar = [s for s in at.slider if s.key.startswith(presenter.BAR_PREFIX)]
    assert bool(bar) is drawn
    if drawn:
        assert {s.key for s in bar} == {presenter.BAR_PREFIX + k for k in ("layer", "head", "temperature")}
    side = {w.key for w in [*at.sidebar.slider, *at.sidebar.text_area, *at.sidebar.toggle, *at.sidebar.selectbox]}
    values = {"w_" + k for k in ("sentence", "layer", "head", "temperature", "tau_every_layer")}
    if screen is not None and screen <= presenter.NARROW_PX:
        assert values.isdisjoint(side)
    else:
        assert values <= side
    assert {"w_preset", "w_model"} <= side


def test_a_report_of_a_narrower_screen_brings_the_bar_back():
    """The bar goes once a report says the screen is wide, and comes back with the first run after one says it is
    narrow (the report itself reruns the page then: the browser test of the phone width); the sidebar's copy of its
    controls goes on the narrow screen and comes back on a wider one, showing what was set with the bar."""
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.session_state[widths.KEY] = {"widths": {widths.SCREEN: 1300.0}}
    at.run()
    assert_ok(at)
    assert not [s for s in at.slider if s.key.startswith(presenter.BAR_PREFIX)]
    assert at.session_state[widths.BAR_DRAWN_KEY] is False
    at.session_state[widths.KEY] = {"widths": {widths.SCREEN: 700.0}}
    at.run()
    assert at.session_state[widths.BAR_DRAWN_KEY] is True
    assert at.session_state[widths.SIDE_DRAWN_KEY] is False
    assert "w_layer" not in {s.key for s in at.slider}
    at.slider(key=presenter.BAR_PREFIX + "layer").set_value(1).run()
    assert_ok(at)
    at.session_state[widths.KEY] = {"widths": {widths.SCREEN: 1300.0}}
    at.run()
    assert at.session_state[widths.SIDE_DRAWN_KEY] is True
    assert at.slider(key="w_layer").value == 1


def test_a_wider_screen_asks_for_the_sidebar_controls_again(monkeypatch):
    """A report that the window widened past NARROW_PX asks for a page run (the bar's CSS hides the bar there), so
    that the sidebar's controls come back without waiting for the next move; a report of another narrow width does
    not."""
    box = {presenter.KEY: False, widths.BAR_DRAWN_KEY: True, widths.SIDE_DRAWN_KEY: False}
    monkeypatch.setattr(st, "session_state", box)
    box[widths.KEY] = {"widths": {widths.SCREEN: 800.0}}
    widths._check_drawn()
    assert widths.REDRAW_KEY not in box
    box[widths.KEY] = {"widths": {widths.SCREEN: 1300.0}}
    widths._check_drawn()
    assert box[widths.REDRAW_KEY] is True


# pages whose explanation names where the layer (and head) is chosen
WORDS_NAME_THE_LAYER = [
    "3_One_head", "7_Multi_head", "8_Inside_a_block", "11_Query_key_map", "13_RoPE_and_shared_heads",
]


@pytest.mark.parametrize(("screen", "place"), [(None, "sidebar"), (1300.0, "sidebar"), (390.0, "above the page")])
@pytest.mark.parametrize("page", WORDS_NAME_THE_LAYER)
def test_a_page_says_where_its_layer_and_head_are_chosen(page, screen, place):
    """The pages whose words name the layer's (and head's) control say where it is on this screen: in the sidebar,
    or above the page on a screen said to be at most NARROW_PX wide (the sidebar has none there)."""
    at = AppTest.from_file(page_path(page), default_timeout=TIMEOUT)
    if screen is not None:
        at.session_state[widths.KEY] = {"widths": {widths.SCREEN: screen}}
    at.run()
    assert_ok(at)
    words = " ".join(m.value for m in at.markdown)
    assert f"({place})" in words
    assert "(sidebar)" not in words or place == "sidebar"


def scores_at(width: float | None) -> tuple[AppTest, dict]:
    """One head's raw scores (step 3) on a 10-token sentence, drawn for a report of `width` px (None: no report)."""
    at = AppTest.from_file(page_path("3_One_head"), default_timeout=TIMEOUT)
    at.query_params["sentence"] = "The cat sat on the mat."  # 10 tokens on the bundled model: numbers in the cells
    at.query_params["onehead_step"] = "3 · Scores and scaling"
    if width is not None:
        at.session_state[widths.KEY] = {"widths": {widths.SCREEN: 1024.0, "onehead_raw": width}}
    at.run()
    assert_ok(at)
    return at, charts_by_key(at)["onehead_raw"]


def test_cell_numbers_too_small_for_the_chart_are_left_to_the_hover():
    """(Numbers in heatmap cells written at 4–8 px on a phone.) A chart measured too narrow for readable numbers in its
    cells draws none, and says where they are; measured wide enough, or not yet measured, it writes them."""
    at, wide = scores_at(1000.0)
    least, kept = at.session_state[widths.LEAST_KEY]["onehead_raw", "cell numbers"]
    assert kept and 400 < least < 1000 and wide["data"][0]["texttemplate"]
    _, unknown = scores_at(None)
    assert unknown["data"][0]["texttemplate"]
    _, narrow = scores_at(least - 1)
    assert "texttemplate" not in narrow["data"][0]
    assert narrow["layout"]["title"]["subtitle"]["text"] == CELL_NOTE
    assert narrow["data"][0]["z"] == wide["data"][0]["z"]  # the same numbers, on hover


def test_a_report_across_the_width_cell_numbers_need_asks_for_a_redraw(monkeypatch):
    box = {presenter.KEY: False, widths.LEAST_KEY: {("onehead_raw", "cell numbers"): (500.0, True)}}  # with numbers
    monkeypatch.setattr(st, "session_state", box)
    box[widths.KEY] = {"widths": {"onehead_raw": 520.0}}
    widths._check_drawn()
    assert widths.REDRAW_KEY not in box
    box[widths.KEY] = {"widths": {"onehead_raw": 480.0}}  # the window was made narrower
    widths._check_drawn()
    assert box[widths.REDRAW_KEY] is True
