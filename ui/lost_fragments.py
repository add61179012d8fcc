"""A fragment's request that cannot run as the browser sent it runs as the page the session shows needs.

Every page runs as a fragment (ui/navigation.page_alone), so the browser sends each move of a page's controls as a
rerun of that fragment, as it sends the live class's polls (ui/live/panel.py) and the chart-width reports
(ui/widths.py). Three such requests go wrong in Streamlit:

- **A fragment the session does not hold.** Streamlit ignores it. A session holds none before its first whole run:
  a student whose process died reconnects, through the proxy, to a new session on a live process
  (docs/serving.md), and the first request the browser sends there can be a fragment's (the move it was making, or
  a chart-width report). Ignored, the page keeps what the dead process drew and every later move is ignored too:
  the slider moves, the chart never does. `whole_run_when_needed` runs the whole page instead, with the
  move's widget states, for a user's move (not a fragment's timer, `is_auto_rerun`).
- **Moves of two fragments in one request.** The browser sends the widget changes of one turn of its event loop
  together, as a rerun of the first one's fragment. A tab opened in presenter view while a chart-width report was
  due went as a rerun of the report's fragment: the server ran the report alone, took the new tab as seen, and the
  page kept the old tab's charts, hidden under the new tab, until the next move (on a busy machine, several times in
  ten). `whole_run_when_needed` runs the whole page when a request changes a widget drawn outside its fragment
  (`moved_outside`).
- **A fragment of the page the browser has left.** The server opened another page (a following student's, when the
  teacher opened one; or a menu link, while a control of the old page was still moved) and the browser, which had
  not drawn it yet, sent a request with the old page's hash. Streamlit runs it after the run that opens the new
  page, with the old page's hash, and its frontend, which now shows the new page, clears all of it and draws only
  that fragment back (App.handleNewSession: another page → clearAppState): a blank page until the next move.
  `on_the_page_shown` runs it on the page the session shows, at its address and with its controls' values as the
  server holds them (the old page's move is dropped: its controls are gone).

`install` wraps AppSession.request_rerun and ScriptRunner._run_script; they and the attributes read here are
private to Streamlit's runtime: if a release renames them, `install` logs one warning for each and leaves
Streamlit's behaviour.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import urllib.parse

from streamlit.proto.WidgetStates_pb2 import WidgetStates

from .serving import TARGET as RUNNER
from .serving import streamlit_class

log = logging.getLogger("atlas.lost_fragments")
SESSION = ("streamlit.runtime.app_session", "AppSession", "request_rerun")  # module, class, method
RUNNER_ATTRIBUTES = {"_pages_manager", "_session_state"}  # what on_the_page_shown reads of a ScriptRunner


def whole_run_when_needed(request_rerun):
    """`request_rerun` (AppSession's) that turns a user's rerun of a fragment the session does not hold, or one that
    moves a widget drawn outside that fragment, into a rerun of the whole page."""

    @functools.wraps(request_rerun)
    def request(session, client_state, *args, **kwargs):
        fragment = getattr(client_state, "fragment_id", "")
        outside = client_state is not None and moved_outside(session, client_state)
        if fragment and (outside or not client_state.is_auto_rerun and not session.has_fragment(fragment)):
            whole = type(client_state)()
            whole.CopyFrom(client_state)
            whole.fragment_id = ""
            client_state = whole
        return request_rerun(session, client_state, *args, **kwargs)

    request.whole_for_lost = True  # marks the wrapper (install is idempotent)
    return request


def moved_outside(session, client_state) -> bool:
    """Whether a request for a fragment changes, from what the browser sent before, a widget the session drew outside
    that fragment (its WidgetMetadata.fragment_id); remembers what the browser sent. A widget the browser sends for
    the first time (drawn since) is not a move. False when the session's widgets cannot be read."""
    sent = {w.id: w.SerializeToString() for w in client_state.widget_states.widgets}
    before, session.atlas_sent_widgets = getattr(session, "atlas_sent_widgets", None) or {}, sent
    state = getattr(getattr(session, "_session_state", None), "_new_widget_state", None)
    drawn = getattr(state, "widget_metadata", None)
    if not client_state.fragment_id or not isinstance(drawn, dict):
        return False
    return any(
        (meta := drawn.get(wid)) is not None and meta.fragment_id != client_state.fragment_id
        for wid, value in sent.items()
        if before.get(wid, value) != value
    )


def on_the_page_shown(run_script):
    """`run_script` (ScriptRunner._run_script) that runs a fragment's request sent from another page than the one the
    session's last run showed on the page shown, at its address, with the widget values the session holds."""

    @functools.wraps(run_script)
    def run(runner, rerun_data, *args, **kwargs):
        shown = runner._pages_manager.current_page_script_hash  # the page of the session's last run ("" before one)
        sent = rerun_data.page_script_hash
        if rerun_data.fragment_id_queue and sent and shown and sent != shown:
            state = runner._session_state
            with state.query_params() as qp:
                address = urllib.parse.urlencode([(k, v) for k in qp for v in qp.get_all(k)])
            held = WidgetStates(widgets=state.get_widget_states())
            rerun_data = dataclasses.replace(
                rerun_data, page_script_hash=shown, page_name="", query_string=address, widget_states=held
            )
        return run_script(runner, rerun_data, *args, **kwargs)

    run.on_page_shown = True  # marks the wrapper (install is idempotent)
    return run


def install() -> None:
    """Wrap AppSession.request_rerun (whole_run_when_needed) and ScriptRunner._run_script
    (on_the_page_shown); idempotent; for each, one warning and nothing wrapped if Streamlit lacks what it reads."""
    session = streamlit_class(SESSION)
    if session is None or not callable(getattr(session, "has_fragment", None)):
        log.warning(
            "%s.%s.%s or has_fragment not found: a move in a fragment a session does not hold is ignored "
            "(Streamlit's default behaviour)",
            *SESSION,
        )
    elif not getattr(session.request_rerun, "whole_for_lost", False):
        session.request_rerun = whole_run_when_needed(session.request_rerun)
    runner = streamlit_class(RUNNER)
    if runner is None or not RUNNER_ATTRIBUTES <= set(runner.__init__.__code__.co_names):
        log.warning(
            "%s.%s.%s or its %s not found: a fragment's request sent from a page the browser has left may blank "
            "the page it opened (Streamlit's default behaviour)",
            *RUNNER,
            " and ".join(sorted(RUNNER_ATTRIBUTES)),
        )
    elif not getattr(runner._run_script, "on_page_shown", False):
        runner._run_script = on_the_page_shown(runner._run_script)
