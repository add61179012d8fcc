"""Waking the pages that follow a class (ui/live/wake.py): which sessions are woken, and how. Streamlit's runtime is
replaced by a stand-in that records the reruns asked for; the browser tests (tests/browser/test_live_class.py) show
the real thing: students follow within 2 s while their pages poll only every WOKEN_POLL_S."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ui.live import wake
from ui.live.classroom import POLL_S, WOKEN_POLL_S


class FakeLoop:
    """A session's event loop as wake uses it: callbacks scheduled from another thread, run when the loop turns."""

    def __init__(self):
        self.scheduled = []

    def call_soon_threadsafe(self, callback, *args) -> None:
        self.scheduled.append((callback, args))

    def turn(self) -> None:
        scheduled, self.scheduled = self.scheduled, []
        for callback, args in scheduled:
            callback(*args)


class FakeSession:
    """What wake reads of an AppSession: its event loop, its last client state, request_rerun."""

    def __init__(self, loop: FakeLoop):
        self._event_loop, self._client_state, self.reruns = loop, object(), []
        self._scriptrunner = None  # the ScriptRunner that has the session (its requests: `_requests`)

    def request_rerun(self, client_state) -> None:
        self.reruns.append(client_state)


@pytest.fixture
def sessions(monkeypatch):
    """Three live sessions of this process (ids a, b, c) on one event loop; how a page follows a class; a way to run
    what was scheduled; how a run ends."""
    loop = FakeLoop()
    live = {sid: FakeSession(loop) for sid in "abc"}

    def active(sid: str):
        return SimpleNamespace(session=live[sid]) if sid in live else None

    manager = SimpleNamespace(get_active_session_info=active)
    monkeypatch.setattr(wake.runtime, "exists", lambda: True)
    monkeypatch.setattr(wake.runtime, "get_instance", lambda: SimpleNamespace(_session_mgr=manager))
    monkeypatch.setattr(wake, "_FOLLOWERS", {})

    def follow(sid: str, code: str | None) -> None:
        monkeypatch.setattr(wake, "get_script_run_ctx", lambda: SimpleNamespace(session_id=sid))
        wake.follow(code)

    def run_ends(sid: str, requests: object) -> None:
        """A run of session `sid` (its ScriptRunner's requests: `requests`) ends: it asks to see its messages out."""
        ctx = SimpleNamespace(session_id=sid, script_requests=requests)
        monkeypatch.setattr(wake, "get_script_run_ctx", lambda: ctx)
        wake.see_delivered()

    return live, follow, loop.turn, run_ends


def test_the_pinned_streamlit_lets_a_page_be_woken():
    """Without it the students' pages would poll every POLL_S again; a Streamlit upgrade that removes it fails here."""
    assert wake.available()
    assert wake.poll_s() == WOKEN_POLL_S > POLL_S


def test_only_the_pages_following_the_class_are_rerun_at_their_own_address(sessions):
    live, follow, settle, _ = sessions
    follow("a", "CLASS111")
    follow("b", "CLASS111")
    follow("c", "OTHER222")
    assert wake.wake("CLASS111") == 2
    settle()
    assert live["a"].reruns == [live["a"]._client_state] and live["b"].reruns == [live["b"]._client_state]
    assert live["c"].reruns == []


def test_a_page_that_explores_or_leaves_is_not_woken(sessions):
    live, follow, settle, _ = sessions
    follow("a", "CLASS111")
    follow("b", "CLASS111")
    follow("a", None)  # explores
    assert wake.wake("CLASS111") == 1
    settle()
    assert live["a"].reruns == [] and len(live["b"].reruns) == 1


def test_a_page_whose_browser_has_gone_is_forgotten(sessions):
    live, follow, _, _ = sessions
    follow("a", "CLASS111")
    follow("gone", "CLASS111")
    assert wake.wake("CLASS111") == 1
    assert "gone" not in wake._FOLLOWERS and "a" in wake._FOLLOWERS


def test_a_run_whose_messages_were_dropped_is_run_again(sessions):
    """A run's check comes after its messages on the session's loop: if its ScriptRunner still has the session they went
    out; if another took it meanwhile (a request of the browser's as the run ended), Streamlit dropped the rest: the
    page runs again."""
    live, _, settle, run_ends = sessions
    a, b = live["a"], live["b"]
    a._scriptrunner, b._scriptrunner = SimpleNamespace(_requests="a's run"), SimpleNamespace(_requests="b's run")
    run_ends("a", "a's run")
    run_ends("b", "b's run")
    b._scriptrunner = SimpleNamespace(_requests="a poll's run")  # taken before b's messages were sent
    settle()
    assert a.reruns == [] and b.reruns == [b._client_state]
