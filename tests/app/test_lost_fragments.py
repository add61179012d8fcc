"""A move made in a fragment the session does not hold (a new session after a reconnect) runs the whole page, as does
a request that moves a widget drawn outside its fragment; and a fragment's request sent from a page the browser has left
runs on the page the session shows (ui/lost_fragments.py).
The browser tests show the real cases: tests/browser/test_class_server_browser.py (a student whose process died moves
the head on the live one, and the chart follows) and tests/browser/test_page_alone.py (a request from the old page
does not blank the new one)."""

from __future__ import annotations

import contextlib
import logging
from types import SimpleNamespace

import pytest
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData
from streamlit.runtime.state.query_params import QueryParams

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
    return passed, lost_fragments.whole_run_when_needed(lambda session, state: passed.append(state))


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


class Drawn(Session):
    """A session that holds the fragments "page" and "widths", and has drawn the head slider in the page's fragment,
    the width report in its own and the model box in the whole run (no fragment)."""

    def __init__(self):
        super().__init__({"page", "widths"})
        fragments = {"$$ID-abc-w_head": "page", "$$ID-def-widths": "widths", "$$ID-ghi-w_model": None}
        metadata = {wid: SimpleNamespace(fragment_id=f) for wid, f in fragments.items()}
        self._session_state = SimpleNamespace(_new_widget_state=SimpleNamespace(widget_metadata=metadata))


def request_of(fragment: str, head_to: float, widths: str, model: str = "smollm2-135m") -> ClientState:
    """A request for `fragment` with the head slider, the width report and the model box as the browser holds them."""
    state = ClientState(fragment_id=fragment, query_string="", page_script_hash="p")
    state.widget_states.widgets.add(id="$$ID-abc-w_head").double_array_value.data.append(head_to)
    state.widget_states.widgets.add(id="$$ID-def-widths").json_value = widths
    state.widget_states.widgets.add(id="$$ID-ghi-w_model").string_value = model
    return state


def test_a_request_that_moves_a_widget_outside_its_fragment_runs_the_whole_page(asked):
    """(A tab opened in presenter view while a width report was due went as the report's rerun: the page kept the old
    tab's charts under the new tab.) Against what the browser sent before: a report with a moved page control runs
    the whole page; the report alone, or a page move alone, its fragment; a changed model box (drawn by the whole
    run) with a page move, the whole page. A widget sent for the first time (drawn since) is not a move."""
    passed, request = asked
    session = Drawn()
    request(session, request_of("", 0, '{"w": 1}'))  # the first whole run: nothing to compare with
    request(session, request_of("widths", 0, '{"w": 2}'))  # a report alone
    request(session, request_of("widths", 3, '{"w": 3}'))  # a report and a page move together
    request(session, request_of("page", 4, '{"w": 3}'))  # a page move alone
    request(session, request_of("page", 5, '{"w": 3}', model="minilm-l6"))  # a page move and the model box
    assert [s.fragment_id for s in passed] == ["", "widths", "", "page", ""]
    assert [s.widget_states.widgets[0].double_array_value.data[0] for s in passed] == [0, 0, 3, 4, 5]  # with the move
    fresh = Drawn()
    request(fresh, ClientState(fragment_id="", page_script_hash="p"))  # a page's first run: no widget drawn yet
    request(fresh, request_of("widths", 3, '{"w": 3}'))  # every widget sent for the first time
    assert passed[-1].fragment_id == "widths"


def head(value: float) -> WidgetState:
    state = WidgetState(id="$$ID-abc-w_head")
    state.double_array_value.data.append(value)
    return state


class Runner:
    """What the wrapper reads of a ScriptRunner: the page of the session's last run, its address and its widgets."""

    def __init__(self, shown: str, address: str, held: list[WidgetState]):
        self._pages_manager = SimpleNamespace(current_page_script_hash=shown)
        params = QueryParams()
        params.populate_from_query_string(address)
        self._session_state = SimpleNamespace(
            query_params=contextlib.contextmanager(lambda: (yield params)), get_widget_states=lambda: held
        )


@pytest.fixture
def ran() -> tuple[list, object]:
    """The rerun data the wrapped _run_script runs, and the wrapped method."""
    runs = []
    return runs, lost_fragments.on_the_page_shown(lambda runner, data: runs.append(data))


def sent(page: str, fragments: list[str], value: float = 5.0) -> RerunData:
    return RerunData(
        query_string="sentence=old&head=5",
        widget_states=WidgetStates(widgets=[head(value)]),
        page_script_hash=page,
        page_name="Home",
        fragment_id_queue=fragments,
        is_auto_rerun=True,
    )


def test_a_fragment_request_from_the_page_the_browser_left_runs_on_the_page_shown(ran):
    runs, run = ran
    run(Runner("one_head", "sentence=new&head=2&head=3", [head(2.0)]), sent("home", ["poll"]))
    [data] = runs
    assert data.page_script_hash == "one_head" and data.page_name == ""
    assert data.query_string == "sentence=new&head=2&head=3"  # the address the session holds, every value
    assert [w.double_array_value.data[0] for w in data.widget_states.widgets] == [2.0]  # its values, not the move
    assert data.fragment_id_queue == ["poll"] and data.is_auto_rerun  # still that fragment's run


def test_requests_on_the_page_shown_whole_runs_and_first_runs_run_as_sent(ran):
    runs, run = ran
    asked = [sent("one_head", ["page"]), sent("home", []), sent("home", ["page"]), sent("", ["page"])]
    shown = ["one_head", "one_head", "", "one_head"]  # same page; a whole run; no run yet; no page in the request
    for data, page in zip(asked, shown, strict=True):
        run(Runner(page, "head=2", [head(2.0)]), data)
    assert runs == asked


def test_install_wraps_streamlit_once(monkeypatch):
    monkeypatch.setattr(AppSession, "request_rerun", AppSession.request_rerun)  # restored after the test
    monkeypatch.setattr(ScriptRunner, "_run_script", ScriptRunner._run_script)
    lost_fragments.install()
    wrapped, run = AppSession.request_rerun, ScriptRunner._run_script
    lost_fragments.install()
    assert wrapped.whole_for_lost and AppSession.request_rerun is wrapped
    assert run.on_page_shown and ScriptRunner._run_script is run


def test_without_has_fragment_install_warns_once_and_wraps_nothing(monkeypatch, caplog):
    monkeypatch.setattr(AppSession, "request_rerun", AppSession.request_rerun)
    unwrapped = AppSession.request_rerun
    monkeypatch.delattr(AppSession, "has_fragment")
    with caplog.at_level(logging.WARNING, logger="atlas.lost_fragments"):
        lost_fragments.install()
    assert [r.levelno for r in caplog.records if r.name == "atlas.lost_fragments"] == [logging.WARNING]
    assert AppSession.request_rerun is unwrapped


def test_without_the_runner_attributes_install_warns_once_and_leaves_run_script(monkeypatch, caplog):
    monkeypatch.setattr(ScriptRunner, "_run_script", ScriptRunner._run_script)
    unwrapped = ScriptRunner._run_script
    monkeypatch.setattr(ScriptRunner, "__init__", lambda self: None)  # sets none of what the wrapper reads
    with caplog.at_level(logging.WARNING, logger="atlas.lost_fragments"):
        lost_fragments.install()
    assert [r.levelno for r in caplog.records if r.name == "atlas.lost_fragments"] == [logging.WARNING]
    assert ScriptRunner._run_script is unwrapped
