"""A teacher and two students in one process (three AppTests sharing the in-memory store): the students' pages follow
the teacher's, explore and come back, answer a question; the teacher sees the answers and reveals the model's."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import ui.live
from lessons.words import md
from tests.apptest_utils import ROOT, TIMEOUT, array, charts_by_key, lazy_tabs, mounted, run_with_dropped_box
from transformer.head_scores import probe_scores
from transformer.trace import run_trace
from ui import a11y, state
from ui.live import panel
from ui.live.classroom import BEAT_S, PRESENT_S, WOKEN_POLL_S, ClassState, StoreDown
from ui.live.store import MemoryStore

pytestmark = pytest.mark.slow
ONE_HEAD = "pages/3_One_head.py"


@pytest.fixture(autouse=True)
def own_room(monkeypatch):
    """A fresh in-memory class store for each test, shared by its AppTests (one process)."""
    room = ui.live.Classroom(MemoryStore())
    monkeypatch.setattr(ui.live, "room", lambda: room)
    monkeypatch.setattr(panel, "room", lambda: room)
    return room


def app(**query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def ok(*ats: AppTest) -> None:
    for at in ats:
        assert not at.exception, at.exception


def shared_state(at: AppTest) -> tuple:
    """What the page shows of the sidebar's state, and the page."""
    keys = ("sentence", "layer", "head", "temperature")
    return (at.session_state["atlas_page"], *(at.session_state["atlas_" + k] for k in keys))


def histogram(at: AppTest) -> dict | None:
    """The class's histogram (plotly's spec, checked), if the page shows it."""
    return charts_by_key(at).get("live_histogram")


def open_live_class(at: AppTest) -> AppTest:
    """Open the sidebar's "Live class" (its controls are drawn only when it is open)."""
    at.session_state[panel.OPEN_KEY] = True
    return at.run()


def class_of_two():
    teacher = open_live_class(app())
    teacher.button(key="live_start").click().run()
    code = teacher.session_state[panel.ROLE_KEY].code
    students = [app(**{"class": code}) for _ in range(2)]
    ok(teacher, *students)
    return teacher, students


def tab_to(at: AppTest, key: str, label: str) -> None:
    """A click on a tab: the control's value and the address (where the browser writes it)."""
    at.session_state[key] = label
    at.query_params[key] = label


def tab_of(at: AppTest) -> str | None:
    return at.session_state["onehead_step"] if "onehead_step" in at.session_state else None


def test_students_follow_the_teachers_page_tab_and_controls():
    teacher, students = class_of_two()
    for s in students:
        assert isinstance(s.session_state[panel.ROLE_KEY], panel.Student)
        assert shared_state(s) == shared_state(teacher)
    labels = []
    moves = [
        lambda: teacher.switch_page(str(ROOT / ONE_HEAD)),
        lambda: labels.extend(lazy_tabs(teacher)["onehead_step"]) or tab_to(teacher, "onehead_step", labels[2]),
        lambda: teacher.sidebar.slider(key="w_layer").set_value(2),
        lambda: teacher.sidebar.slider(key="w_head").set_value(3),
        lambda: teacher.sidebar.slider(key="w_temperature").set_value(0.5),
        lambda: tab_to(teacher, "onehead_step", labels[4]),  # a tab bound on the students' page already
    ]
    for move in moves:
        move()
        teacher.run()
        ok(teacher)
        for s in students:
            s.run()
            ok(s)
            assert shared_state(s) == shared_state(teacher)
            assert tab_of(s) == tab_of(teacher)
    assert shared_state(teacher) == (ONE_HEAD, teacher.session_state["atlas_sentence"], 2, 3, 0.5)
    for s in students:
        opened = [t for t in s.tabs if t.label == labels[4]]
        assert opened and len(opened[0].children) > 0  # the student's page drew the teacher's tab
        assert s.query_params["class"] == teacher.session_state[panel.ROLE_KEY].code


def test_a_move_reaches_a_student_in_one_drawn_run(monkeypatch):
    """A student's whole run opens the teacher's new view before it draws anything (panel.follow): on the same page
    in that run, on another page through a page switch whose first run draws nothing. Either way the page is drawn
    once per move, not once as it was and again."""
    teacher, (student, _) = class_of_two()
    drawn = []
    skip_link = a11y.skip_link  # the first thing a run draws once it knows its page (navigation.run)
    monkeypatch.setattr(a11y, "skip_link", lambda: drawn.append(1) or skip_link())
    moves = [
        lambda: teacher.sidebar.slider(key="w_layer").set_value(2),
        lambda: teacher.switch_page(str(ROOT / ONE_HEAD)),
        lambda: teacher.sidebar.slider(key="w_head").set_value(1),
    ]
    for move in moves:
        move()
        teacher.run()
        drawn.clear()
        student.run()
        ok(teacher, student)
        assert shared_state(student) == shared_state(teacher)
        assert len(drawn) == 1
    assert shared_state(student)[0] == ONE_HEAD and student.session_state["atlas_layer"] == 2


def controls(at: AppTest) -> set[str]:
    """The keys of the shared controls the page draws (sidebar and bar), and "menu" if the sidebar has the page menu."""
    keys = {w.key for kind in ("slider", "selectbox", "text_area", "toggle") for w in at.get(kind)}
    shared = {k for k in keys if k and k.split("_", 1)[-1] in state.KEYS + ("preset",)}
    return shared | ({"menu"} if mounted(at, a11y.MENU_KEY) else set())


def says(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown)


def test_a_following_student_sees_the_teachers_settings_without_their_controls():
    """While a student follows, the page, model, sentence, layer, head and τ are the teacher's: the page draws no
    menu and none of the controls that set them, and the class's bar says their values. Exploring brings them back
    with the values followed; following again takes them away."""
    teacher, (a, _) = class_of_two()
    assert {"w_layer", "w_head", "w_temperature", "w_model", "menu"} <= controls(teacher)
    teacher.sidebar.slider(key="w_layer").set_value(2).run()
    teacher.sidebar.slider(key="w_temperature").set_value(0.5).run()
    a.run()
    ok(teacher, a)
    assert controls(a) == set()
    assert f"Model {md(teacher.session_state['atlas_model'])}, layer 2, head 0, τ 0.50." in says(a)
    teacher.switch_page(str(ROOT / ONE_HEAD)).run()
    a.run()
    assert "(set by the teacher)" in says(a) and "(sidebar)" in says(teacher)  # where the page's words send them
    a.button(key="live_explore").click().run()
    ok(a)
    assert {"w_layer", "w_head", "w_temperature", "w_model", "w_sentence", "menu"} <= controls(a)
    assert (a.sidebar.slider(key="w_layer").value, a.sidebar.slider(key="w_temperature").value) == (2, 0.5)
    assert "τ 0.50" not in says(a)
    a.button(key="live_follow").click().run()
    ok(a)
    assert controls(a) == set()


def test_the_text_box_a_student_leaves_by_following_does_not_set_the_sentence():
    """A student explores, types a sentence of their own, and follows again: the run that follows drops their text box,
    which sends what it held with the next request. The page keeps the teacher's sentence."""
    teacher, (a, _) = class_of_two()
    a.button(key="live_explore").click().run()
    a.text_area(key="w_sentence").set_value("A sentence of my own.").run()
    box = a.text_area(key="w_sentence").id
    a.button(key="live_follow").click().run()
    assert shared_state(a) == shared_state(teacher)
    run_with_dropped_box(a, box, "A sentence of my own.")
    ok(a)
    assert shared_state(a) == shared_state(teacher)


def test_a_student_explores_then_follows_again():
    teacher, (a, b) = class_of_two()
    a.button(key="live_explore").click().run()
    teacher.sidebar.slider(key="w_layer").set_value(3).run()
    a.run(), b.run()
    assert b.session_state["atlas_layer"] == 3 and a.session_state["atlas_layer"] == 0  # a explores: it stays
    assert "you explore on your own" in " ".join(m.value for m in a.markdown)
    a.sidebar.slider(key="w_head").set_value(1).run()  # and moves on its own
    assert a.session_state["atlas_head"] == 1
    counts = teacher.run()  # the teacher's counts
    assert "**1** following · **1** exploring" in " ".join(m.value for m in counts.markdown)
    a.button(key="live_follow").click().run()
    ok(a)
    assert (a.session_state["atlas_layer"], a.session_state["atlas_head"]) == (3, 0)


def test_the_sidebars_live_class_draws_its_controls_only_when_open():
    at = app()
    assert "live_start" not in {b.key for b in at.button}
    assert "live_start" in {b.key for b in open_live_class(at).button}


def test_a_student_has_no_teachers_controls():
    _, (a, _) = class_of_two()
    keys = {w.key for w in open_live_class(a).button} | {w.key for w in a.get("popover")}
    assert "live_leave" in keys  # the sidebar's "Live class", open, has the student's control
    assert not keys & {"live_end", "live_ask", "live_reveal", "live_start"}
    assert "live_csv" not in {d.key for d in a.get("download_button")}


def test_a_question_is_answered_counted_and_revealed_with_the_models_weights(lm):
    teacher, students = class_of_two()
    teacher.sidebar.slider(key="w_layer").set_value(1).run()
    teacher.sidebar.slider(key="w_head").set_value(2).run()
    teacher.radio(key="live_kind").set_value("look").run()
    sentence = teacher.session_state["atlas_sentence"]
    n = len(lm.tokenizer.encode(sentence).ids)
    teacher.selectbox(key="live_query").set_value(n - 1).run()
    teacher.button(key="live_ask").click().run()
    ok(teacher)
    options = ui.live.room().state(teacher.session_state[panel.ROLE_KEY].code).question.options
    assert len(options) == n  # a decoder's last token sees every token
    for s, pick in zip(students, (options[0], options[-1]), strict=True):
        s.run()
        assert "Question 1." in " ".join(m.value for m in s.markdown)
        s.radio(key="live_pick").set_value(pick)
        s.button(key="FormSubmitter:live_answer-Send").click().run()
        ok(s)
        assert s.session_state[panel.ROLE_KEY].answer == pick
    spec = histogram(teacher.run())
    assert [array(t["y"]).tolist() for t in spec["data"]] == [[1] + [0] * (n - 2) + [1]]  # the histogram counts 2
    [alt] = [c.proto.alt for c in teacher.get("plotly_chart") if c.proto.id.endswith("live_histogram")]
    assert alt.startswith("2 answers.")  # its description, for screen readers: the chart's accessible name
    assert histogram(students[0]) is None  # the students see their own answer only
    spec = histogram(teacher.button(key="live_reveal").click().run())
    model = array(spec["data"][1]["y"])
    fresh = run_trace(lm.model, lm.tokenizer, sentence)["blocks.1.attn.hook_pattern"][2, n - 1]  # (T,) fresh pass
    np.testing.assert_allclose(model, fresh, atol=1e-6)
    np.testing.assert_allclose(array(spec["data"][0]["y"]), [0.5] + [0] * (n - 2) + [0.5])
    assert histogram(students[0].run()) == spec  # revealed: the students see it too


def test_a_typed_answer_with_html_is_shown_as_text():
    teacher, (a, _) = class_of_two()
    teacher.radio(key="live_kind").set_value("next").run()
    teacher.button(key="live_ask").click().run()
    a.run()
    a.text_input(key="live_typed").input("<script>alert(1)</script><b>x</b>")
    a.button(key="FormSubmitter:live_answer-Send").click().run()
    ok(a)
    caption = " ".join(c.value for c in a.caption)
    assert "<script>" not in caption and "\\<script\\>" in caption  # markdown shows the text, escaped
    spec = json.dumps(histogram(teacher.run()))
    assert "<script" not in spec and "&lt;script&gt;" in spec


def test_a_wrong_code_says_so_and_the_page_still_works():
    at = app(**{"class": "NOPE-NOPE"})
    ok(at)
    assert any("No class has this code" in i.value for i in at.info)
    assert panel.ROLE_KEY not in at.session_state and "class" not in at.query_params
    assert at.get("plotly_chart")  # the home page drew


def test_ending_the_class_tells_the_students():
    teacher, (a, _) = class_of_two()
    teacher.button(key="live_end").click().run()
    assert panel.ROLE_KEY not in teacher.session_state
    a.run()
    ok(a)
    a.run()
    assert panel.ROLE_KEY not in a.session_state
    assert {"w_layer", "w_model", "menu"} <= controls(a)  # the page is the student's own again


def test_a_following_student_keeps_the_controls_while_the_class_cannot_be_read(own_room, monkeypatch):
    """(Redis restarting.) The bar says so, and the page keeps its menu and controls, with the way out of the class;
    once the class answers again, the page follows the teacher's view without them."""
    teacher, (a, _) = class_of_two()
    assert controls(a) == set()
    state = own_room.state

    def down(*args, **kwargs):
        raise StoreDown("The class's store does not answer.")

    monkeypatch.setattr(own_room, "state", down)
    a.run()
    ok(a)
    assert {"w_layer", "w_model", "menu"} <= controls(a)
    assert any("does not answer" in w.value for w in a.warning)
    monkeypatch.setattr(own_room, "state", state)
    teacher.sidebar.slider(key="w_layer").set_value(2).run()
    a.run()
    ok(a)
    assert controls(a) == set() and a.session_state["atlas_layer"] == 2


def test_which_head_reveals_the_heads_measured_scores(lm):
    teacher, (a, _) = class_of_two()
    teacher.sidebar.slider(key="w_layer").set_value(1).run()
    teacher.radio(key="live_kind").set_value("head").run()
    role = "completes a repeated pattern (induction)"
    teacher.selectbox(key="live_head_role").set_value(role).run()
    teacher.button(key="live_ask").click().run()
    ok(teacher)
    a.run()
    a.radio(key="live_pick").set_value("head 2")
    a.button(key="FormSubmitter:live_answer-Send").click().run()
    spec = histogram(teacher.button(key="live_reveal").click().run())
    expected = probe_scores(lm.model, lm.tokenizer).induction[1]  # (n_head,) measured here, afresh
    np.testing.assert_allclose(array(spec["data"][1]["y"]), expected, atol=1e-6)
    np.testing.assert_allclose(array(spec["data"][0]["y"]), np.eye(len(expected))[2])


def test_does_it_change_takes_the_teachers_words():
    teacher, (a, _) = class_of_two()
    teacher.radio(key="live_kind").set_value("change").run()
    teacher.text_input(key="live_when").input("the word bear becomes bears").run()
    teacher.button(key="live_ask").click().run()
    a.run()
    assert md("Does this change when the word bear becomes bears?") in " ".join(m.value for m in a.markdown)
    assert a.radio(key="live_pick").options == ["yes, a lot", "a little", "no"]


def test_a_link_to_localhost_is_said_to_work_only_here():
    teacher, _ = class_of_two()  # AppTest's address is http://localhost:8501/
    assert any("localhost" in m.value and "Live class" in m.value for m in teacher.markdown)
    assert any("students' devices cannot open it" in c.value for c in teacher.caption)


def test_a_page_that_does_not_show_the_view_it_opened_opens_it_again(monkeypatch):
    """A request that left the browser before the view reached it carries the old address: a whole run within
    FOLLOW_S opens the view again (at most OPENS times); a poll lets the first such address be (it is most likely
    that), and asks for a whole run at the second in a row. After FOLLOW_S a following student's own move stands."""
    view = {"page": ONE_HEAD, "params": {"layer": ["2"], "head": ["1"]}}
    cs = ClassState("CODE1234", 3, view, 0, None, False)
    s = panel.Student("CODE1234", version=3, opened_at=time.monotonic(), opened=1)
    shown = {"page": ONE_HEAD, "params": {"layer": ["0"], "head": ["1"], "present": ["1"]}}
    monkeypatch.setattr(panel, "current_view", lambda: shown)
    assert panel._behind(s, cs)  # a whole run opens it again
    assert not panel._lost(s, cs)  # the first poll without it: let be
    assert panel._lost(s, cs)  # the second in a row: a whole run
    shown["params"]["layer"] = ["2"]
    assert not panel._behind(s, cs) and not panel._lost(s, cs) and s.unshown == 0  # shown: the count starts again
    shown["params"]["layer"] = ["0"]
    s.opened = panel.OPENS
    assert not panel._behind(s, cs)  # opened often enough
    s.opened, s.opened_at = 1, time.monotonic() - panel.FOLLOW_S - 1
    assert not panel._behind(s, cs) and not panel._lost(s, cs) and not panel._lost(s, cs)  # the student's own move
    assert panel._behind(s, ClassState("CODE1234", 4, view, 0, None, False))  # until the teacher's next


def test_a_page_says_it_is_open_at_most_every_beat_s(monkeypatch):
    """A move wakes every following page at once: each tells the class it is open (the teacher's counts) only when
    its last word is BEAT_S old, or it started or stopped following. Its polls, WOKEN_POLL_S apart, keep it counted."""
    assert BEAT_S < WOKEN_POLL_S < PRESENT_S
    told, now = [], [100.0]
    monkeypatch.setattr(panel.time, "monotonic", lambda: now[0])
    r = SimpleNamespace(present=lambda code, student, following: told.append(following))
    s = panel.Student("CODE1234")
    for _ in range(3):  # woken, then polled at once
        panel._present(r, s)
    assert told == [True]
    s.following = False
    panel._present(r, s)
    assert told == [True, False]  # exploring now: said at once
    now[0] += WOKEN_POLL_S  # the next poll
    panel._present(r, s)
    assert told == [True, False, False]
