"""A move made in a fragment the session does not hold runs the whole page, instead of nothing.

Every page runs as a fragment (ui/navigation.page_alone), so the browser sends each move of a page's controls as a
rerun of that fragment. Streamlit ignores a rerun of a fragment the session does not hold. A session holds none
before its first whole run: a student whose process died reconnects, through the proxy, to a new session on a live
process (docs/serving.md), and the first request the browser sends there can be a fragment's (the move it was
making, or a chart-width report). Ignored, the page keeps what the dead process drew and every later move is
ignored too: the slider moves, the chart never does.

`install` wraps AppSession.request_rerun: a user's move (not a fragment's timer, `is_auto_rerun`) in a fragment the
session does not hold runs the whole page, which draws the page and its fragments again, with the move's widget
states. request_rerun and has_fragment are Streamlit's (private to its runtime): if a release renames them, `install`
logs one warning and leaves Streamlit's behaviour.
"""

from __future__ import annotations

import functools
import importlib
import logging

log = logging.getLogger("atlas.lost_fragments")
TARGET = ("streamlit.runtime.app_session", "AppSession", "request_rerun")  # module, class, method


def whole_run_for_lost_fragments(request_rerun):
    """`request_rerun` (AppSession's) that turns a user's rerun of a fragment the session does not hold into a rerun
    of the whole page."""

    @functools.wraps(request_rerun)
    def request(session, client_state, *args, **kwargs):
        fragment = getattr(client_state, "fragment_id", "")
        if fragment and not client_state.is_auto_rerun and not session.has_fragment(fragment):
            whole = type(client_state)()
            whole.CopyFrom(client_state)
            whole.fragment_id = ""
            client_state = whole
        return request_rerun(session, client_state, *args, **kwargs)

    request.whole_for_lost = True  # marks the wrapper (install is idempotent)
    return request


def install() -> None:
    """Wrap AppSession.request_rerun (whole_run_for_lost_fragments); idempotent; one warning and nothing wrapped if
    Streamlit lacks request_rerun or has_fragment."""
    module, cls_name, method = TARGET
    try:
        cls = getattr(importlib.import_module(module), cls_name, None)
    except ImportError:
        cls = None
    found = isinstance(cls, type) and all(callable(getattr(cls, name, None)) for name in (method, "has_fragment"))
    if not found:
        log.warning(
            "%s.%s.%s or has_fragment not found: a move in a fragment a session does not hold is ignored "
            "(Streamlit's default behaviour)",
            *TARGET,
        )
        return
    if not getattr(cls.request_rerun, "whole_for_lost", False):
        cls.request_rerun = whole_run_for_lost_fragments(cls.request_rerun)
