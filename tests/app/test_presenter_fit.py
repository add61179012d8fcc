"""Presenter view sizes each chart from the browser's report of its room (ui/widths.py fitted_height): a chart that
starts on the first screen ends on it, one further down is at most a screen tall, and none is squeezed below its
margins and least plot (19 px a row for numbers in cells)."""

from __future__ import annotations

import pytest
import streamlit as st

from ui import widths

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
