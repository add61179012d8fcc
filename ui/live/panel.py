"""The live class on the page: the teacher's bar (join code, QR code, counts, questions) and the students' (follow or
explore, answer). app.py has navigation.run draw `bar()` before the page, and calls `publish()` after it.

The view a student follows is exactly what the teacher's address holds: the page, and every parameter of the address
(sentence, model, layer, head, τ, the open tab, the page's own controls) but presenter view and the class code.
The teacher's secret lives in the teacher's session only, never in an address (the projector would show it): a
teacher whose browser reconnects to the same process keeps the class; a reload starts without it. A following
student's page is rerun as soon as the class changes (wake.py) and polls it every few seconds besides (a fragment);
a whole run that finds the teacher's view changed opens it before drawing anything (`follow`).
"""

from __future__ import annotations

import io
import os
import secrets
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

import segno
import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from figures.common import grouped_bars
from lessons.words import md, quote
from transformer.errors import AtlasError

from .. import a11y, navigation, state
from ..caches.heads import head_scores
from ..models import get_model, get_trace
from . import questions, room, wake
from .classroom import (
    BEAT_S,
    BEHIND_PROXY_ENV,
    KINDS,
    POLL_S,
    LiveError,
    Question,
    StoreDown,
    client_address,
    shown_code,
)

ROLE_KEY = "live_role"
CLIENT_KEY = "live_client"  # this browser session, for the limit on wrong codes
NOTE_KEY = "live_note"  # a message for the next run ("This class has ended.")
OPEN_KEY = "live_open"  # whether the sidebar's "Live class" is open
CLASS_PARAM = "class"
PRIVATE = {"present", CLASS_PARAM}  # address parameters each person keeps for themselves
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}  # a join link with these works only on the teacher's computer
FOLLOW_S = 10.0  # within this long of opening a view, a following page that does not show it opens it again…
OPENS = 3  # …at most this many times in all
QR_SCALE = 5  # pixels per module of the QR code: ~200 px for a join link


@dataclass
class Teacher:
    code: str
    secret: str
    published: dict | None = None  # the view last published


@dataclass
class Student:
    code: str
    id: str = field(default_factory=lambda: secrets.token_hex(8))  # anonymous: this browser session, nothing else
    following: bool = True
    version: int = -1  # the class version whose view this page opened (-1: none yet)…
    opened_at: float = 0.0  # …when (time.monotonic())…
    opened: int = 0  # …and how many times
    unshown: int = 0  # polls in a row whose page did not show it
    beat: tuple[float, bool] | None = None  # when this page last told the class it is open, and whether following
    qid: int = 0
    question: Question | None = None
    answer: str = ""  # this student's answer to the current question


def role() -> Teacher | Student | None:
    return st.session_state.get(ROLE_KEY)


def current_view() -> dict:
    """The page this session shows and its address's parameters (but PRIVATE ones), as a student's page opens it."""
    params = {k: st.query_params.get_all(k) for k in st.query_params if k not in PRIVATE}
    return {"page": navigation.current(), "params": params}


def _leave(note: str) -> None:
    """Leave the class (it ended, or cannot be reached): the note shows on the next run."""
    st.session_state.pop(ROLE_KEY, None)
    wake.follow(None)
    st.session_state[NOTE_KEY] = note
    if CLASS_PARAM in st.query_params:
        del st.query_params[CLASS_PARAM]


# -- the teacher


def _start() -> None:
    try:
        code, secret = room().start(current_view())
    except LiveError as err:  # the class server does not answer
        st.session_state[NOTE_KEY] = str(err)
        return
    st.session_state[ROLE_KEY] = Teacher(code, secret)


def _end() -> None:
    t = role()
    try:
        room().end(t.code, t.secret)
    except LiveError:
        pass  # it had ended already
    _leave("The class has ended; its answers are deleted.")


def publish() -> None:
    """The teacher's view, as this run leaves the address, becomes the class's (app.py calls this after the page); a
    student's run makes sure its messages reach the browser (wake.see_delivered)."""
    t = role()
    if isinstance(t, Student):
        wake.see_delivered()
    if not isinstance(t, Teacher) or navigation.current() is None:
        return
    view = current_view()
    if view == t.published:
        return
    try:
        room().publish(t.code, t.secret, view)
        t.published = view
    except StoreDown:
        pass  # published on a later run
    except LiveError as err:
        _leave(str(err))


def join_link(code: str) -> str:
    """The address students open: this server's, with ?class=CODE."""
    url = urllib.parse.urlsplit(st.context.url or "http://localhost:8501/")
    return urllib.parse.urlunsplit((url.scheme, url.netloc, "/", urllib.parse.urlencode({CLASS_PARAM: code}), ""))


def qr_png(text: str) -> bytes:
    """A QR code of `text` as PNG bytes, drawn here (segno), nothing fetched."""
    out = io.BytesIO()
    segno.make(text, error="m").save(out, kind="png", scale=QR_SCALE, border=2)
    return out.getvalue()


def _ask(kind: str) -> None:
    """Pose a question of `kind` built from the sidebar's state and the page's trace (a button's callback)."""
    t = role()
    s = state.current()
    try:
        if kind == "change":
            q = questions.change(st.session_state.get("live_when", "") or "the sentence changes")
        elif kind == "head":
            q = questions.which_head(st.session_state["live_head_role"], head_scores(s.model), s.layer)
        else:
            tr = get_trace(s.key)
            if kind == "look":
                weights = tr[f"blocks.{s.layer}.attn.hook_pattern"][s.head]  # (T, T) the weights the page shows
                query = min(st.session_state.get("live_query", len(tr.encoding) - 1), len(tr.encoding) - 1)
                q = questions.look(tr.encoding.labels, weights, query, s.layer, s.head, tr.cfg.causal)
            else:
                vocab = get_model(s.model).tokenizer.vocab_labels()
                q = questions.next_token(s.sentence[-40:], tr.logits_at(len(tr.encoding) - 1), vocab)
        room().ask(t.code, t.secret, q)
    except AtlasError as err:
        st.session_state[NOTE_KEY] = str(err)


def _ask_form() -> None:
    """What the teacher can ask about the page on screen."""
    s = state.current()
    causal = get_model(s.model).cfg.causal
    kinds = [k for k in KINDS if k != "next" or causal]  # an encoder predicts no next token
    kind = st.radio("Question", kinds, format_func=KINDS.get, key="live_kind")
    if kind == "look":
        try:
            labels = get_trace(s.key).encoding.labels
        except AtlasError as err:
            st.info(str(err))
            return
        st.selectbox(
            "Which token asks?", range(len(labels)), index=len(labels) - 1, key="live_query",
            format_func=lambda i: questions.token_option(i, labels[i]),
        )
    elif kind == "head":
        st.selectbox("The head that…", list(questions.ROLES), key="live_head_role")
    elif kind == "change":
        st.text_input("Does this change when…", placeholder="head 3 is switched off", key="live_when", max_chars=120)
    st.button("Ask the class", key="live_ask", on_click=_ask, args=(kind,), type="primary")


def _results(q: Question, answers: list[str], revealed: bool) -> None:
    """The answers' histogram; on reveal, the class's shares beside the model's own numbers."""
    labels, counts = questions.tally(q, answers)
    answered = f"{len(answers)} answer" + ("" if len(answers) == 1 else "s")
    if not revealed or not q.truth:
        fig = grouped_bars({"answers": counts}, labels, title=answered, y_title="students")
    else:
        truth = dict(q.truth)
        shares = counts / max(len(answers), 1)
        series = {"share of the class": shares, f"the model: {q.truth_title}": [truth.get(a, 0.0) for a in labels]}
        fig = grouped_bars(series, labels, title=f"{answered}, and the model's", y_range=(0, 1))
    st.plotly_chart(fig, key="live_histogram", config={"displaylogo": False}, alt=a11y.description(fig))


def _from_class(read: Callable):
    """read() from the class's store, as a polling fragment does: None (and a warning) while the store is down; a
    class that has ended (or a refused action) takes the page out of it."""
    try:
        return read()
    except StoreDown as err:
        st.warning(str(err))
        return None
    except LiveError as err:
        _leave(str(err))
        st.rerun(scope="app")


@st.fragment(run_every=POLL_S)
def _teacher_live() -> None:
    """Refreshed every second: the class lives on, the counts, the current question's answers."""
    t = role()
    if not isinstance(t, Teacher):
        return
    r = room()

    def read():
        r.heartbeat(t.code, t.secret)
        cs = r.state(t.code)
        return r.counts(t.code, t.secret), cs, r.answers(t.code, t.secret, cs.qid) if cs.qid else []

    if (got := _from_class(read)) is None:
        return
    counts, cs, answers = got
    st.markdown(f"**{counts['follow']}** following · **{counts['explore']}** exploring on their own")
    if cs.question is not None:
        st.markdown(f"**Question {cs.qid}.** {md(cs.question.prompt)}")
        _results(cs.question, answers, cs.revealed)
        if not cs.revealed:
            st.button("Reveal the model's answer", key="live_reveal", on_click=lambda: r.reveal(t.code, t.secret))
    st.download_button(
        "Questions and answers (CSV)", r.csv(t.code, t.secret), file_name=f"class-{t.code}.csv",
        mime="text/csv", key="live_csv", on_click="ignore",
    )


def _teacher_bar(t: Teacher) -> None:
    link = join_link(t.code)
    with st.container(key="live_bar", border=True):
        info, code_col, actions = st.columns([3, 1.4, 1.6])
        with info:
            st.markdown(f"**Live class {shown_code(t.code)}.** Students open {md(link)} or scan the code.")
            if urllib.parse.urlsplit(link).hostname in LOCAL_HOSTS:
                st.caption(
                    "This link names this computer itself: students' devices cannot open it. Open the app at this "
                    "computer's network address (its name or IP address, and the same port), then start the class."
                )
            _teacher_live()
        with code_col:
            if st.toggle("Show the QR code", value=True, key="live_qr"):
                st.image(qr_png(link), caption=shown_code(t.code))
        with actions:
            with st.popover("Ask the class"):
                _ask_form()
            st.button("End the class", key="live_end", on_click=_end)


# -- the students


def _apply(view: dict, code: str) -> None:
    """Open the teacher's view: its page, with its address; the controls the address binds take its values. On the
    page this run shows, in this run (it has drawn nothing yet); on another, through a page switch."""
    if view.get("page") not in {p.path for p in navigation.ORDER}:
        return
    params = {k: v for k, v in view["params"].items() if k not in PRIVATE}
    shown = set(st.query_params) - PRIVATE
    for key in shown | set(params):
        if key in st.session_state:  # a control the address binds: it takes the address's value again
            del st.session_state[key]
    for key in state.KEYS:  # the sidebar's shared state is read from the address again
        st.session_state.pop("atlas_" + key, None)
    address = {**params, **{k: st.query_params.get_all(k) for k in PRIVATE if k in st.query_params}, CLASS_PARAM: code}
    _release(shown | set(params))
    if view["page"] != navigation.current() or not _open_here(address):
        st.switch_page(str(navigation.ROOT / view["page"]), query_params=address)


def _release(keys) -> None:
    """Let the address take new values for `keys` where a control of this page binds them. Streamlit refuses to set a
    bound parameter (the control would disagree with the address); here each such control was reset (_apply deletes
    its value) and takes the address's value when it is next drawn, as on a first visit. Streamlit has no public call
    for this: its binding is dropped through the session's QueryParams; a Streamlit without it leaves them bound."""
    ctx = get_script_run_ctx()
    with ctx.session_state.query_params() as qp:
        if not hasattr(qp, "get_binding_for_param"):
            return
        for key in keys:
            binding = qp.get_binding_for_param(key)
            if binding is not None:
                qp.unbind_widget(binding.widget_id)


def _open_here(address: dict) -> bool:
    """Make `address` this run's address, as if the run had started with it: the controls it binds, not drawn yet,
    take their values from it. Streamlit seeds them from the address a run started with; resetting that is not
    public (the session's QueryParams again): False on a Streamlit without it, and the caller switches pages."""
    st.query_params.from_dict(address)
    with get_script_run_ctx().session_state.query_params() as qp:
        if not hasattr(qp, "set_initial_query_params_from_current"):
            return False
        qp.set_initial_query_params_from_current()
    return True


def _follow(following: bool) -> None:
    s = role()
    s.following = following
    s.version = -1  # following again: open the teacher's view now


def _send(s: Student) -> None:
    """Send the answer picked (or typed) in the form."""
    text = st.session_state.get("live_typed") or st.session_state.get("live_pick") or ""
    try:
        if room().answer(s.code, s.id, s.qid, text):
            s.answer = text
    except LiveError as err:
        st.session_state[NOTE_KEY] = str(err)


def _answer_form(s: Student) -> None:
    q = s.question
    st.markdown(f"**Question {s.qid}.** {md(q.prompt)}")
    with st.form("live_answer", clear_on_submit=True, border=False):
        st.radio("Your answer", q.options, index=None, key="live_pick", horizontal=True)
        if q.typed:
            st.text_input("…or type one", max_chars=200, key="live_typed")
        st.form_submit_button("Send", on_click=_send, args=(s,))
    if s.answer:
        st.caption(f"Your answer: {quote(s.answer)}. You can change it until the teacher reveals the model's answer.")


def _present(r, s: Student) -> None:
    """Tell the class that this page is open (the teacher's counts), at most every BEAT_S unless it started or stopped
    following: a move wakes every following page at once, and their polls come WOKEN_POLL_S apart anyway."""
    now = time.monotonic()
    if s.beat is None or s.beat[1] != s.following or now - s.beat[0] > BEAT_S:
        r.present(s.code, s.id, s.following)
        s.beat = (now, s.following)


@st.fragment(run_every=wake.poll_s())
def _student_live() -> None:
    """With each whole run (a following page is woken by each change of the class: wake.py) and every few seconds:
    follow the teacher's moves, show the question."""
    s = role()
    if not isinstance(s, Student):
        return
    wake.follow(s.code if s.following else None)
    r = room()

    def read():
        cs = r.state(s.code, seen_qid=s.qid)
        if cs is None:
            raise LiveError("The class has ended.")
        _present(r, s)
        return cs

    if (cs := _from_class(read)) is None:
        return
    if cs.qid != s.qid:
        s.qid, s.question, s.answer = cs.qid, cs.question, ""
    if s.following != navigation.led() or s.following and (cs.version != s.version or _lost(s, cs)):
        # the whole page's run opens the view, or draws or leaves out the shared controls as the page now follows or
        # not (follow(): a fragment cannot move the sidebar)
        st.rerun(scope="app")
    with st.container(horizontal=True, vertical_alignment="center"):
        if s.following:
            st.markdown(f"**Live class {shown_code(s.code)}**: you follow the teacher. {_settings()}")
            st.button("Explore on my own", key="live_explore", on_click=_follow, args=(False,))
        else:
            st.markdown(f"**Live class {shown_code(s.code)}**: you explore on your own.")
            st.button("Follow the teacher", key="live_follow", on_click=_follow, args=(True,), type="primary")
    if s.question is not None and not cs.revealed:
        _answer_form(s)
    elif s.question is not None:
        st.markdown(f"**Question {s.qid}.** {md(s.question.prompt)}")
        if s.answer:
            st.caption(f"Your answer: {quote(s.answer)}.")
        _results(s.question, r.results(s.code, s.qid), revealed=True)


def _settings() -> str:
    """The teacher's settings this page shows, in words (the controls that set them are the teacher's)."""
    now = state.current()
    tau = f"τ {now.temperature:.2f}" + (" in every layer" if now.tau_every_layer else "")
    return f"Model {md(now.model)}, layer {now.layer}, head {now.head}, {tau}."


def _join(text: str) -> None:
    client = st.session_state.setdefault(CLIENT_KEY, secrets.token_hex(8))
    try:
        address = client_address(st.context.ip_address, st.context.headers, os.environ.get(BEHIND_PROXY_ENV) == "1")
        st.session_state[ROLE_KEY] = Student(room().join(text, (client, address)))
    except LiveError as err:
        _leave(str(err))


def _sidebar(current: Teacher | Student | None) -> None:
    """The sidebar's "Live class": its controls are drawn only when it is opened (on_change="rerun"), so a closed one
    costs each run one element."""
    box = st.sidebar.expander("Live class", key=OPEN_KEY, on_change="rerun")
    if not box.open:
        return
    with box:
        if current is None:
            st.caption("Lead the class: every student's page follows yours, and you can ask them questions.")
            st.button("Start a class", key="live_start", on_click=_start)
            st.text_input("Join a class: its code", key="live_code", max_chars=20, placeholder="ABCD-1234")
            st.button("Join", key="live_join", on_click=lambda: _join(st.session_state.get("live_code", "")))
        elif isinstance(current, Teacher):
            st.caption(f"You lead the class {shown_code(current.code)}.")
        else:
            st.caption(
                f"You are in the class {shown_code(current.code)}. While you follow the teacher, the page, the model, "
                "the sentence and the controls are the teacher's; **Explore on my own** (above the page) gives them "
                "back to you."
            )
            st.button("Leave the class", key="live_leave", on_click=_leave, args=("You left the class.",))


def follow() -> bool:
    """A following student's page, first thing in each whole run (before anything is drawn): open the teacher's view
    when the page is behind it (`_behind`). Whether the page follows: it then draws the teacher's view without the
    controls that set it (navigation.led). A class that cannot be read is left to the bar to say, and meanwhile the
    page has its controls."""
    s = role()
    if not isinstance(s, Student) or not s.following:
        return False
    try:
        cs = room().state(s.code, seen_qid=s.qid)
    except LiveError:  # the store is down: the student keeps the controls until the class can be read again
        return False
    if cs is None or not _behind(s, cs):
        return True
    if cs.version != s.version:
        s.version, s.opened_at, s.opened = cs.version, time.monotonic(), 0
    s.opened += 1
    _apply(cs.view, s.code)
    return True


def _lost(s: Student, cs) -> bool:
    """In a poll: whether the page lost the view it opened. A poll whose address is not the view's may have left the
    browser before the view reached it; two in a row (WOKEN_POLL_S apart), within FOLLOW_S of opening it, mean the
    page never showed it. The run that opened it can be lost: a request of the browser's handled after that run's script
    ended, but before the server sent all its messages, starts a new run, and Streamlit drops what the old run had
    not sent yet (it ignores the events of a ScriptRunner that is no longer the session's)."""
    if time.monotonic() - s.opened_at > FOLLOW_S or not _behind(s, cs):
        s.unshown = 0
        return False
    s.unshown += 1
    return s.unshown >= 2


def _behind(s: Student, cs) -> bool:
    """Whether a following student's page must open the teacher's view: it changed since the page opened one; or,
    within FOLLOW_S of that, this run does not show it (a request the browser sent before the view reached it, a
    poll or a chart's width report, carries the old address and controls, and may come after the run that opened it),
    at most OPENS times a view. Later, a following student's own move stands until the teacher's next."""
    if cs.version != s.version:
        return True
    if time.monotonic() - s.opened_at > FOLLOW_S or s.opened >= OPENS:
        return False
    shown = current_view()
    return shown["page"] != cs.view["page"] or any(shown["params"].get(k) != v for k, v in cs.view["params"].items())


def bar() -> None:
    """The live class's controls, before the page: in the sidebar, start or join; above the page, the teacher's bar
    or the student's. A first visit of an address with ?class=CODE joins that class."""
    if role() is None and CLASS_PARAM in st.query_params:
        _join(st.query_params[CLASS_PARAM])
    note = st.session_state.pop(NOTE_KEY, None)
    if note:
        st.info(note)
    current = role()
    _sidebar(current)
    if isinstance(current, Teacher):
        _teacher_bar(current)
    elif isinstance(current, Student):
        with st.container(key="live_bar", border=True):
            _student_live()

