"""Presenter view sizes each chart from the browser's report of its room (ui/widths.py fitted_height): a chart that
starts on the first screen ends on it, one further down is at most a screen tall, and none is squeezed below its
margins and least plot (19 px a row for numbers in cells)."""

from __future__ import annotations

import pytest
import streamlit as st

from ui import presenter, widths

LAYOUT = {"height": 560, "margin": {"t": 50, "b": 100}}


@pytest.fixture
def state(monkeypatch):
    box = {}
    monkeypatch.setattr(st, "session_state", box)
    return box


def report(state, screen, **rooms):
    state[widths.ROOM_KEY] = {"rooms": {"screen": screen, "rooms": rooms}}


def test_without_a_report_the_chart_keeps_its_height(state):
    assert widths.fitted_height("c", LAYOUT, []) == 560


def test_a_chart_on_the_first_screen_ends_on_it(state):
    report(state, 768, c=768 - 330)  # its top 330 px down
    assert widths.fitted_height("c", LAYOUT, []) == 768 - 330 - widths.SLACK_PX
    assert state[widths.HEIGHTS_KEY]["c"][2] == 426  # remembered as drawn


def test_a_chart_with_room_to_spare_keeps_its_height(state):
    report(state, 768, c=700)
    assert widths.fitted_height("c", LAYOUT, []) == 560


def test_a_chart_further_down_is_at_most_a_screen_tall(state):
    report(state, 720, c=-900)
    assert widths.fitted_height("c", {**LAYOUT, "height": 2000}, []) == 720 - widths.SLACK_PX


def test_no_chart_is_squeezed_below_its_margins_and_least_plot(state):
    report(state, 720, c=210)
    assert widths.fitted_height("c", LAYOUT, []) == 50 + 100 + 90
    # numbers in the cells of a 9-row heatmap: 19 px a row (typed array, as figures.common.plain sends it)
    cells = [{"type": "heatmap", "texttemplate": "%{z:.2f}", "z": {"dtype": "f4", "bdata": "", "shape": "9, 9"}}]
    assert widths.fitted_height("c", LAYOUT, cells) == 50 + 100 + 9 * 19


def test_a_bad_report_is_ignored(state):
    state[widths.ROOM_KEY] = {"rooms": {"screen": "tall", "rooms": {"c": True}}}
    assert widths.fitted_height("c", LAYOUT, []) == 560


def test_token_labels_too_close_keep_every_kth():
    """(Inside a block's 61 stages of SmolLM2's residual stream fitted into ~300 px: each label ran over the next
    three.) A y axis of tick labels closer than TICK_GAP_PX keeps every k-th, the nearest that leaves the gap; one with
    room keeps them all; x axes are left when the chart's width is not known."""
    stages = {"tickvals": list(range(61)), "ticktext": [f"s{i}" for i in range(61)]}
    tokens = {"tickvals": list(range(9)), "ticktext": list("abcdefghi")}
    layout = {"height": 400, "margin": {"t": 50, "b": 50}, "yaxis": stages, "yaxis2": tokens, "xaxis": stages}
    out = presenter.thinned_ticks(layout)
    assert set(out) == {"yaxis"}  # 300 px / 61 rows = 4.9 px a label: every 3rd (14.8 px); 9 rows: 33 px
    assert out["yaxis"]["tickvals"] == list(range(0, 61, 3)) and out["yaxis"]["ticktext"][:2] == ["s0", "s3"]
    # in half the height (a panel's domain), every 5th: 2.5 px a label
    half = presenter.thinned_ticks({**layout, "yaxis": {**stages, "domain": [0.5, 1.0]}})
    assert half["yaxis"]["tickvals"] == list(range(0, 61, 5))
    # every 2nd token already (token_axis on long sentences): the rows between count
    sparse = {"tickvals": list(range(0, 120, 2)), "ticktext": ["t"] * 60}
    assert presenter.thinned_ticks({**layout, "yaxis": sparse})["yaxis"]["tickvals"] == list(range(0, 120, 6))
    # categories and typed arrays are left as they are
    for odd in (["a", "b", "c"], {"dtype": "i4", "bdata": "AAAAAAEAAAA="}):
        assert presenter.thinned_ticks({"height": 60, "yaxis": {"tickvals": odd}}) == {}


def test_token_labels_under_maps_in_rows_keep_every_kth_once_the_width_is_known():
    """(SmolLM2's nine heads in one row on a 1280 × 720 projector: nine tokens on their side under each map of ~64 px,
    7 px apart, ran into each other.) With the chart's width known, an x axis of labels closer than TICK_PX keeps
    every k-th; without it, x axes are left as they are."""
    tokens = {"tickvals": list(range(9)), "ticktext": list("abcdefghi")}
    margin = {"l": 184, "r": 184, "t": 53, "b": 195}
    layout = {"height": 400, "margin": margin, "xaxis": {**tokens, "domain": [0, 0.18]}}
    assert presenter.thinned_ticks(layout) == {}
    out = presenter.thinned_ticks({**layout, "width": 872})  # 504 px × 0.18 / 9 = 10.1 px a label: every 2nd, 20 px
    assert out["xaxis"]["tickvals"] == [0, 2, 4, 6, 8] and out["xaxis"]["ticktext"] == list("acegi")
    assert out["xaxis"]["domain"] == [0, 0.18]
    wide = presenter.thinned_ticks({**layout, "width": 872, "xaxis": {**tokens, "domain": [0, 0.3]}})  # 16.8 px
    assert wide == {}
    # 14 px apart: enough for y labels (TICK_GAP_PX), not for tokens on their side
    close = presenter.thinned_ticks({**layout, "width": 872, "xaxis": {**tokens, "domain": [0, 0.25]}})
    assert close["xaxis"]["tickvals"] == [0, 2, 4, 6, 8]


def test_a_room_that_changes_the_maps_per_row_redraws_the_page(state):
    """A report of a chart's room on the first screen asks for a redraw when the heads' maps it was drawn with are no
    longer the rows that give each map the most room (ui.widths.per_row_on_screen), and only then."""
    state[presenter.KEY] = True
    state[widths.KEY] = {"widths": {"heads": 872.0}}
    state[widths.FRAMES_KEY] = {"heads": (368, 53, 195)}
    state[widths.HEIGHTS_KEY] = {"heads": (1440, 338, 394)}  # asked, least, drawn: the fit of a room of 406 px
    state[widths.PANELS_KEY] = {"heads": (9, 4)}  # as the width alone gives (872 − 260) // 150
    report(state, 768, heads=406)
    widths._check_drawn()
    assert state.pop(widths.REDRAW_KEY, False) is True  # five a row now
    state[widths.PANELS_KEY] = {"heads": (9, 5)}
    widths._check_drawn()
    assert widths.REDRAW_KEY not in state
