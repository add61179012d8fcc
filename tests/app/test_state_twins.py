"""The shared controls come twice (the sidebar's "w_…" and the bar's "bar_…", ui/state.py): a request that carries a
twin's older value, sent before the browser received the run that set it, must not undo the move just made."""

from __future__ import annotations

import time

from tests.apptest_utils import page_path, run_page
from ui import presenter, state

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
