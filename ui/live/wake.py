"""Waking the students' pages: when their class changes (the teacher moved, asked, revealed or ended it), each page
of this process that follows the class runs again at once, instead of at its next poll.

Without it a move reaches a student only at the page's next poll: up to a second later, with a second's poll for
every student all the time (100 students: 100 runs a second before anybody moves). With it a page polls only every
WOKEN_POLL_S: for the counts of who follows, for students who explore, and as a fallback for news lost while the
class's store was away.

Streamlit has no public call that reruns another session's page. This takes the one Streamlit itself uses when a
page's source file is saved (AppSession.request_rerun with the session's last client state: its page and address),
reached through the runtime's session manager, and calls it on the session's own event loop. `available()` says
whether this Streamlit has them; without them the pages poll every POLL_S as before.
"""

from __future__ import annotations

import threading

from streamlit import runtime
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from .classroom import POLL_S, WOKEN_POLL_S

SESSION_ATTRIBUTES = {"_client_state", "_event_loop"}  # the page and address of the last run; its event loop
_FOLLOWERS: dict[str, str] = {}  # session id → the code of the class its page follows
_LOCK = threading.Lock()


def available() -> bool:
    """Whether this Streamlit lets a page be rerun from outside it (see the module's docstring): its AppSession has
    request_rerun, and sets the two attributes read here in its __init__."""
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
    if not (available() and runtime.exists()):
        return 0
    manager = getattr(runtime.get_instance(), "_session_mgr", None)
    if manager is None:
        return 0
    with _LOCK:
        followers = [sid for sid, c in _FOLLOWERS.items() if c == code]
    woken = 0
    for sid in followers:
        info = manager.get_active_session_info(sid)
        if info is None:
            with _LOCK:
                _FOLLOWERS.pop(sid, None)
            continue
        session = info.session
        session._event_loop.call_soon_threadsafe(_rerun, session)
        woken += 1
    return woken


def _rerun(session: AppSession) -> None:
    """On the session's event loop: run its page again, at the page and address of its last run."""
    session.request_rerun(session._client_state)
