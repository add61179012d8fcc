"""A script run's events reach the event loop in batches: every event handled, once, in the order sent, with fewer hops
than events (ui/event_batches.py). Every browser test runs through it too: a lost or reordered message would break
the pages they draw."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from streamlit.runtime.app_session import AppSession

from ui import event_batches

UNWRAPPED = getattr(AppSession._on_scriptrunner_event, "__wrapped__", AppSession._on_scriptrunner_event)


class Session:
    """What the wrapper calls on an AppSession: a scheduler that keeps the callbacks until the test runs them (the
    event loop), and the handler, which records each event."""

    def __init__(self, fail_on: object = None):
        self.scheduled, self.handled, self.fail_on = [], [], fail_on

    def _call_soon_on_event_loop(self, callback) -> None:
        self.scheduled.append(callback)

    def _handle_scriptrunner_event_on_event_loop(self, sender, event, forward_msg=None, **rest) -> None:
        if event == self.fail_on:
            raise RuntimeError(f"handling {event}")
        self.handled.append((sender, event, forward_msg, rest))

    def run_loop(self) -> int:
        """Run the scheduled callbacks (and those they schedule) as the event loop would; how many ran."""
        ran = 0
        while self.scheduled:
            callback = self.scheduled.pop(0)
            ran += 1
            try:
                callback()
            except RuntimeError:
                pass  # asyncio logs a callback's exception and goes on with the next one
        return ran


@pytest.fixture
def send():
    return event_batches.batched_events(UNWRAPPED)


def test_events_sent_before_the_loop_runs_are_handled_in_order_by_one_callback(send):
    session = Session()
    for k in range(50):
        send(session, "runner", "ENQUEUE_FORWARD_MSG", forward_msg=f"msg {k}")
    assert len(session.scheduled) == 1  # one hop for 50 messages
    assert session.run_loop() == 1
    assert [h[2] for h in session.handled] == [f"msg {k}" for k in range(50)]
    assert session.handled[0] == ("runner", "ENQUEUE_FORWARD_MSG", "msg 0", {})


def test_every_parameter_reaches_the_handler(send):
    session = Session()
    send(session, "runner", "SCRIPT_STARTED", page_script_hash="p", fragment_ids_this_run=["f"], run_descriptor=7)
    session.run_loop()
    assert session.handled == [
        (
            "runner",
            "SCRIPT_STARTED",
            None,
            {"page_script_hash": "p", "fragment_ids_this_run": ["f"], "run_descriptor": 7},
        )
    ]


def test_an_event_sent_after_a_drain_gets_a_callback_of_its_own(send):
    session = Session()
    send(session, "r", "A")
    session.run_loop()
    send(session, "r", "B")
    assert len(session.scheduled) == 1
    session.run_loop()
    assert [h[1] for h in session.handled] == ["A", "B"]


def test_sessions_keep_queues_of_their_own(send):
    one, two = Session(), Session()
    send(one, "r", "A")
    send(two, "r", "B")
    assert len(one.scheduled) == len(two.scheduled) == 1
    one.run_loop()
    assert [h[1] for h in one.handled] == ["A"] and two.handled == []


def test_an_event_whose_handling_raises_does_not_hold_back_those_after_it(send):
    session = Session(fail_on="B")
    for event in "ABCD":
        send(session, "r", event)
    session.run_loop()
    assert [h[1] for h in session.handled] == ["A", "C", "D"]
    send(session, "r", "E")  # and the session goes on
    session.run_loop()
    assert [h[1] for h in session.handled][-1] == "E"


def test_a_real_event_loop_gets_every_event_of_a_script_thread_in_order():
    """AppSession's own scheduler on a running asyncio loop. While the loop is busy (another session's callback), a
    run's 1,000 messages make one hop; then 2,000 more are sent while the loop drains them."""
    loop = asyncio.new_event_loop()

    class LoopSession:  # an AppSession's scheduler and wrapped event method, without a server
        _event_loop = loop
        _call_soon_on_event_loop = AppSession._call_soon_on_event_loop
        _on_scriptrunner_event = event_batches.batched_events(UNWRAPPED)

    session = LoopSession()
    hops, handled = [], []
    scheduled = session._call_soon_on_event_loop
    session._call_soon_on_event_loop = lambda callback: hops.append(1) or scheduled(callback)
    session._handle_scriptrunner_event_on_event_loop = lambda sender, event, **kw: handled.append(kw["forward_msg"])
    looping, busy, free = threading.Thread(target=loop.run_forever), threading.Event(), threading.Event()
    looping.start()
    try:
        loop.call_soon_threadsafe(lambda: busy.set() or free.wait(10))
        assert busy.wait(10)
        for k in range(1000):
            session._on_scriptrunner_event("runner", "ENQUEUE_FORWARD_MSG", forward_msg=k)
        assert len(hops) == 1 and handled == []
        free.set()
        for k in range(1000, 3000):
            session._on_scriptrunner_event("runner", "ENQUEUE_FORWARD_MSG", forward_msg=k)
        done = threading.Event()
        loop.call_soon_threadsafe(done.set)  # runs after every drain scheduled so far
        assert done.wait(10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        looping.join(10)
        loop.close()
    assert handled == list(range(3000))


def test_install_wraps_streamlit_once(monkeypatch):
    monkeypatch.setattr(AppSession, "_on_scriptrunner_event", UNWRAPPED)  # restored after the test
    event_batches.install()
    wrapped = AppSession._on_scriptrunner_event
    event_batches.install()
    assert wrapped.batched and AppSession._on_scriptrunner_event is wrapped and wrapped.__wrapped__ is UNWRAPPED


def install_warns(monkeypatch, caplog) -> None:
    """install logs one warning and leaves Streamlit's method as it was."""
    monkeypatch.setattr(AppSession, "_on_scriptrunner_event", UNWRAPPED)
    with caplog.at_level(logging.WARNING, logger="atlas.event_batches"):
        event_batches.install()
    assert [r.levelno for r in caplog.records if r.name == "atlas.event_batches"] == [logging.WARNING]
    assert AppSession._on_scriptrunner_event is UNWRAPPED


@pytest.mark.parametrize("missing", [event_batches.SCHEDULE, event_batches.HANDLE])
def test_without_a_method_it_calls_install_warns_once_and_wraps_nothing(monkeypatch, caplog, missing):
    monkeypatch.delattr(AppSession, missing)
    install_warns(monkeypatch, caplog)


def test_with_a_handler_of_other_parameters_install_warns_once_and_wraps_nothing(monkeypatch, caplog):
    monkeypatch.setattr(AppSession, event_batches.HANDLE, lambda self, sender, event, forward_msg=None: None)
    install_warns(monkeypatch, caplog)
