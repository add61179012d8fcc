"""The shared controls come twice (the sidebar's "w_…" and the bar's "bar_…", ui/state.py): a request that carries a
twin's older value, sent before the browser received the run that set it, must not undo the move just made."""

from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

from tests.apptest_utils import ROOT, TIMEOUT, assert_ok, page_path, run_page, run_with_dropped_box
from ui import presenter, state, widths

HOME = page_path("3_One_head")
BAR = presenter.BAR_PREFIX


def head_of(at) -> int:
    return at.session_state["atlas_head"]


def test_a_twin_that_still_shows_its_old_value_does_not_undo_a_move():
    at = run_page(HOME)
    assert head_of(at) == 0
    at.slider(key="w_head").set_value(1).run()  # the run sets the bar's head to 1; the browser has not received it…
    assert (head_of(at), at.slider(key=BAR + "head").value) == (1, 1)
    at.slider(key="w_head").set_value(2)
    at.slider(key=BAR + "head").set_value(0)  # …and the next request carries the bar's old head
    at.run()
    assert head_of(at) == 2
    assert (at.slider(key="w_head").value, at.slider(key=BAR + "head").value) == (2, 2)


def test_an_old_value_counts_as_a_move_once_the_browser_showed_the_new_one_or_after_a_while(monkeypatch):
    at = run_page(HOME)
    at.slider(key="w_head").set_value(1).run()
    at.slider(key=BAR + "head").set_value(0).run()  # at once: taken for the old value the browser still showed
    assert head_of(at) == 1
    at.run()  # a request with the bar at 1: the browser shows the value set
    at.slider(key=BAR + "head").set_value(0).run()
    assert head_of(at) == 0
    at.slider(key="w_head").set_value(4).run()
    later = time.monotonic() + presenter.STALE_S + 1
    monkeypatch.setattr(state.time, "monotonic", lambda: later)
    at.slider(key=BAR + "head").set_value(0).run()  # the old value, seconds after the run that set 4
    assert head_of(at) == 0


def test_a_text_box_the_page_dropped_does_not_change_the_sentence():
    """The browser drops the bar's text box once a window widens past NARROW_PX (the sidebar's, once it narrows), and
    the box sends what it holds with the next request. The last run did not draw it: that is no move of the user's
    (under load it came back empty and blanked the page). The box on the page still sets the sentence."""
    at = AppTest.from_file(str(ROOT / HOME), default_timeout=TIMEOUT)
    at.session_state[widths.KEY] = {"widths": {widths.SCREEN: 700.0}}
    at.run()
    bar_box = at.text_area(key=BAR + "sentence").id
    at.session_state[widths.KEY] = {"widths": {widths.SCREEN: 1300.0}}
    at.run()  # the bar's controls go, the sidebar's come
    assert at.session_state[widths.BAR_DRAWN_KEY] is False
    run_with_dropped_box(at, bar_box, "")
    assert_ok(at)
    assert at.session_state["atlas_sentence"] == state.DEFAULT_SENTENCE
    assert at.text_area(key="w_sentence").value == state.DEFAULT_SENTENCE
    at.text_area(key="w_sentence").set_value("A box on the page.").run()
    assert at.session_state["atlas_sentence"] == "A box on the page."


def test_on_a_phone_the_model_still_changes_from_the_sidebar():
    """On a screen at most NARROW_PX wide the sidebar draws no value controls, but its model select box is there and
    sets the model."""
    at = AppTest.from_file(str(ROOT / HOME), default_timeout=TIMEOUT)
    at.session_state[widths.KEY] = {"widths": {widths.SCREEN: 390.0}}
    at.run()
    assert "w_" not in at.session_state[state.DRAWN]
    other = next(m for m in at.selectbox(key="w_model").options if m != at.session_state["atlas_model"])
    at.selectbox(key="w_model").set_value(other).run()
    assert_ok(at)
    assert at.session_state["atlas_model"] == other
