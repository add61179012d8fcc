"""Waking the students' pages: when their class changes (the teacher moved, asked, revealed or ended it), each page
of this process that follows the class runs again at once, instead of at its next poll.

Without it a move reaches a student only at the page's next poll: up to a second later, with a second's poll for
every student all the time (100 students: 100 runs a second before anybody moves). With it a page polls only every
WOKEN_POLL_S: for the counts of who follows, for students who explore, and as a fallback for news lost while the
class's store was away.

Streamlit has no public call that reruns another session's page. This takes the one Streamlit itself uses when a
page's source file is saved (AppSession.request_rerun with the session's last client state: its page and address),
reached through the runtime's session manager, and calls it on the session's own event loop. A student's run also
makes sure its messages reached the browser (`see_delivered`), which under load Streamlit does not. `available()`
says whether this Streamlit has what is read here; without it the pages poll every POLL_S as before.
"""

from __future__ import annotations

import threading

from streamlit import runtime
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from .classroom import POLL_S, WOKEN_POLL_S

# what is read of an AppSession: the page and address of its last run, its event loop, its current ScriptRunner
SESSION_ATTRIBUTES = {"_client_state", "_event_loop", "_scriptrunner"}
_FOLLOWERS: dict[str, str] = {}  # session id → the code of the class its page follows
_LOCK = threading.Lock()


def available() -> bool:
    """Whether this Streamlit lets a page be rerun from outside it (see the module's docstring): its AppSession has
    request_rerun, and sets the attributes read here in its __init__."""
    return callable(getattr(AppSession, "request_rerun", None)) and SESSION_ATTRIBUTES <= set(
        AppSession.__init__.__code__.co_names
    )


def poll_s() -> float:
    """How often a student's page reads its class."""
    return WOKEN_POLL_S if available() else POLL_S


def follow(code: str | None) -> None:
    """This run's page follows the class `code` from now on (None: no class, or it explores on its own)."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return
    with _LOCK:
        if code is None:
            _FOLLOWERS.pop(ctx.session_id, None)
        else:
            _FOLLOWERS[ctx.session_id] = code


def wake(code: str) -> int:
    """Rerun every page of this process that follows the class `code` (from any thread); how many were woken. A page
    whose browser has gone is forgotten (it registers again with its next run, when it comes back)."""
    with _LOCK:
        followers = [sid for sid, c in _FOLLOWERS.items() if c == code]
    woken = 0
    for sid in followers:
        session = _session(sid)
        if session is None:
            with _LOCK:
                _FOLLOWERS.pop(sid, None)
            continue
        session._event_loop.call_soon_threadsafe(_rerun, session)
        woken += 1
    return woken


def see_delivered() -> None:
    """At the end of a student's page run: make sure its messages reach the browser, else run the page again. A
    request of the browser's (a poll, a width report) handled after the run's script ended but before the event loop
    sent all its messages starts a new ScriptRunner, and Streamlit ignores the rest of the old one's (the events of a
    ScriptRunner that is no longer the session's). Under load the script runs ahead of the event loop, so a woken run
    could be lost whole. The loop handles callbacks in order: one posted now runs after this run's messages."""
    ctx = get_script_run_ctx()
    session = _session(ctx.session_id) if ctx is not None else None
    if session is not None and ctx.script_requests is not None:
        session._event_loop.call_soon_threadsafe(_delivered, session, ctx.script_requests)


def _session(session_id: str) -> AppSession | None:
    """The live session of this process with this id (None: gone, or no runtime, or a Streamlit without the calls)."""
    if not (available() and runtime.exists()):
        return None
    manager = getattr(runtime.get_instance(), "_session_mgr", None)
    info = manager.get_active_session_info(session_id) if manager is not None else None
    return info.session if info is not None else None


def _rerun(session: AppSession) -> None:
    """On the session's event loop: run its page again, at the page and address of its last run."""
    session.request_rerun(session._client_state)


def _delivered(session: AppSession, requests) -> None:
    """On the session's event loop, after a run's messages: if another ScriptRunner took the session meanwhile (its
    ScriptRequests are not the run's), what came after was dropped: run the page again."""
    runner = session._scriptrunner
    if runner is None or getattr(runner, "_requests", None) is not requests:
        _rerun(session)
