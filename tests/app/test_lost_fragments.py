"""A move made in a fragment the session does not hold (a new session after a reconnect) runs the whole page
(ui/lost_fragments.py). The browser test tests/browser/test_class_server_browser.py shows the real case: a student
whose process died moves the head on the live one, and the chart follows."""

from __future__ import annotations

import logging

import pytest
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.app_session import AppSession

from ui import lost_fragments


class Session:
    """What the wrapper reads of an AppSession: the fragments it holds."""

    def __init__(self, held: set[str]):
        self.held = held

    def has_fragment(self, fragment_id: str) -> bool:
        return fragment_id in self.held


@pytest.fixture
def asked() -> tuple[list, object]:
    """The requests the wrapped request_rerun passes on, and the wrapped method."""
    passed = []
    return passed, lost_fragments.whole_run_for_lost_fragments(lambda session, state: passed.append(state))


def move(fragment: str, auto: bool = False) -> ClientState:
    state = ClientState(fragment_id=fragment, is_auto_rerun=auto, query_string="head=3", page_script_hash="p")
    state.widget_states.widgets.add(id="$$ID-abc-w_head").double_array_value.data.append(3.0)
    return state


def test_a_move_in_a_fragment_the_session_does_not_hold_runs_the_whole_page(asked):
    passed, request = asked
    sent = move("page")
    request(Session(set()), sent)
    [state] = passed
    assert state.fragment_id == ""  # the whole page
    assert state.query_string == "head=3" and state.page_script_hash == "p"
    assert [w.double_array_value.data[0] for w in state.widget_states.widgets] == [3.0]  # with the move
    assert sent.fragment_id == "page"  # the browser's message is left as it came


def test_a_move_in_a_fragment_the_session_holds_runs_that_fragment(asked):
    passed, request = asked
    request(Session({"page"}), move("page"))
    assert [s.fragment_id for s in passed] == ["page"]


def test_a_timer_of_a_lost_fragment_and_a_whole_run_are_passed_on_as_they_are(asked):
    passed, request = asked
    request(Session(set()), move("poll", auto=True))  # Streamlit drops it, as it should: the timer's page is gone
    request(Session(set()), move(""))
    request(Session(set()), None)  # the session's own rerun (a source file saved)
    assert [s.fragment_id if s is not None else None for s in passed] == ["poll", "", None]


def test_install_wraps_streamlit_once(monkeypatch):
    monkeypatch.setattr(AppSession, "request_rerun", AppSession.request_rerun)  # restored after the test
    lost_fragments.install()
    wrapped = AppSession.request_rerun
    lost_fragments.install()
    assert wrapped.whole_for_lost and AppSession.request_rerun is wrapped


def test_without_has_fragment_install_warns_once_and_wraps_nothing(monkeypatch, caplog):
    monkeypatch.setattr(AppSession, "request_rerun", AppSession.request_rerun)
    unwrapped = AppSession.request_rerun
    monkeypatch.delattr(AppSession, "has_fragment")
    with caplog.at_level(logging.WARNING, logger="atlas.lost_fragments"):
        lost_fragments.install()
    assert [r.levelno for r in caplog.records if r.name == "atlas.lost_fragments"] == [logging.WARNING]
    assert AppSession.request_rerun is unwrapped
