"""A live class's rules on both stores: only the teacher leads, codes are not guessed, answers are capped, the class
expires, the CSV is safe in a spreadsheet."""

from __future__ import annotations

import csv
import io
import json
import math
import time

import pytest
import redis

from scripts.serve import free_port
from tests.live.conftest import subscribers, wait_for
from ui.live.classroom import (
    ALPHABET,
    CODE_LEN,
    MAX_ANSWER,
    SEEN_S,
    TTL,
    Classroom,
    LiveError,
    NotTeacher,
    Question,
    StoreDown,
    client_address,
    new_code,
    normal_code,
)
from ui.live.redis_store import RedisStore, own_server
from ui.live.store import MemoryStore

VIEW = {"page": "pages/3_One_head.py", "params": {"layer": ["1"], "head": ["2"]}}
LOOK = Question("look", "Where will «it» look?", ("The", "cat", "it"), truth=(("The", 0.2), ("cat", 0.7), ("it", 0.1)))
CLIENT = ("session-1", "10.0.0.7")


@pytest.fixture
def room(store):
    return Classroom(store)


def test_a_code_has_40_bits_from_an_unambiguous_alphabet():
    assert len(ALPHABET) == 32 and not set("ILOU") & set(ALPHABET)
    assert CODE_LEN * math.log2(len(ALPHABET)) >= 40
    codes = {new_code() for _ in range(2000)}
    assert len(codes) == 2000 and all(len(c) == CODE_LEN and set(c) <= set(ALPHABET) for c in codes)
    assert normal_code(" abcd-efg0 ") == "ABCDEFG0" and normal_code("OIL1") == "0111"


def test_a_student_joins_and_follows_the_teachers_view(room):
    code, secret = room.start(VIEW)
    assert room.join(code.lower()[:4] + "-" + code[4:], CLIENT) == code
    s = room.state(code)
    assert (s.view, s.qid, s.question) == (VIEW, 0, None)
    moved = {**VIEW, "params": {"layer": ["3"], "head": ["0"]}}
    v = room.publish(code, secret, moved)
    assert v == s.version + 1 and room.state(code).view == moved
    assert room.publish(code, secret, moved) == v  # the same view again: no new version, students do not rerun


def test_without_the_secret_no_teacher_action_is_done(room):
    code, secret = room.start(VIEW)
    other, other_secret = room.start(VIEW)
    room.ask(code, secret, LOOK)
    before = room.state(code)
    forged = {**VIEW, "page": "pages/9_Next_token.py"}
    for wrong in ("", "x", secret[:-1], other_secret, secret + "x"):
        with pytest.raises(NotTeacher):
            room.publish(code, wrong, forged)
        with pytest.raises(NotTeacher):
            room.ask(code, wrong, LOOK)
        with pytest.raises(NotTeacher):
            room.reveal(code, wrong)
        with pytest.raises(NotTeacher):
            room.end(code, wrong)
        with pytest.raises(NotTeacher):
            room.answers(code, wrong, 1)
        with pytest.raises(NotTeacher):
            room.csv(code, wrong)
    assert room.state(code) == before  # nothing moved, nothing revealed, the class lives
    assert room.state(other).qid == 0  # and the other class never saw this one's question


def test_a_wrong_code_is_refused_and_too_many_stop_the_client(room):
    code, _ = room.start(VIEW)
    for k in range(10):
        with pytest.raises(LiveError, match="No class has this code"):
            room.join(f"ZZZZ{k:04d}", CLIENT)
    with pytest.raises(LiveError, match="Too many wrong class codes"):
        room.join(code, CLIENT)  # even the right code: the client is not answered for a minute
    assert room.join(code, ("session-2", "10.0.0.8")) == code  # another client is
    with pytest.raises(LiveError, match="No class"):
        room.join("<script>", ("session-3", "10.0.0.8"))


def test_many_wrong_codes_from_one_address_stop_it(room):
    for k in range(100):
        with pytest.raises(LiveError, match="No class"):
            room.join("WRONG", (f"session-{k}", "10.0.0.9"))
    with pytest.raises(LiveError, match="Too many"):
        room.join("WRONG", ("session-new", "10.0.0.9"))


def test_answers_one_per_student_the_last_kept(room):
    code, secret = room.start(VIEW)
    qid = room.ask(code, secret, LOOK)
    assert room.state(code).question == LOOK
    assert room.answer(code, "s1", qid, "The")
    assert room.answer(code, "s1", qid, "cat")  # changes their mind
    assert room.answer(code, "s2", qid, "cat")
    assert sorted(room.answers(code, secret, qid)) == ["cat", "cat"]
    with pytest.raises(LiveError, match="Pick one"):
        room.answer(code, "s3", qid, "dog")  # not an option
    room.reveal(code, secret)
    assert room.state(code).revealed
    with pytest.raises(LiveError, match="closed"):
        room.answer(code, "s3", qid, "it")
    q2 = room.ask(code, secret, Question("next", "What comes next?", ("mat", "floor"), typed=True))
    assert room.state(code, seen_qid=qid).question.kind == "next" and room.state(code, seen_qid=q2).question is None
    assert room.answer(code, "s1", q2, "sofa")  # typed
    with pytest.raises(LiveError, match="closed"):
        room.answer(code, "s2", qid, "it")  # the earlier question
    assert room.answers(code, secret, q2) == ["sofa"] and sorted(room.answers(code, secret, qid)) == ["cat", "cat"]


def test_a_10_kb_answer_is_refused_and_control_characters_dropped(room):
    code, secret = room.start(VIEW)
    qid = room.ask(code, secret, Question("next", "What comes next?", (), typed=True))
    with pytest.raises(LiveError, match=f"at most {MAX_ANSWER}"):
        room.answer(code, "s1", qid, "x" * 10_000)
    assert room.answer(code, "s1", qid, "x" * MAX_ANSWER)
    assert room.answer(code, "s2", qid, "a\u202eb\x00c\u200b ")
    assert sorted(room.answers(code, secret, qid)) == ["abc", "x" * MAX_ANSWER]


def test_a_student_sending_100_answers_a_second_is_ignored_after_the_third(room):
    code, secret = room.start(VIEW)
    qid = room.ask(code, secret, Question("change", "Does it change?", ("yes", "no")))
    kept = [room.answer(code, "s1", qid, "yes" if k < 3 else "no") for k in range(100)]
    assert kept == [True] * 3 + [False] * 97
    assert room.answers(code, secret, qid) == ["yes"]
    assert room.answer(code, "s2", qid, "no")  # other students are not slowed


def test_the_class_expires_three_hours_after_the_teachers_last_heartbeat():
    now = [0.0]
    room = Classroom(MemoryStore(clock=lambda: now[0]), clock=lambda: now[0])
    code, secret = room.start(VIEW)
    qid = room.ask(code, secret, LOOK)
    room.answer(code, "s1", qid, "cat")
    now[0] += TTL - 60
    room.heartbeat(code, secret)
    now[0] += TTL - 60
    assert room.state(code).qid == qid
    now[0] += 61
    assert room.state(code) is None
    with pytest.raises(LiveError, match="ended"):
        room.answers(code, secret, qid)
    with pytest.raises(LiveError, match="No class"):
        room.join(code, CLIENT)


def test_ending_deletes_the_answers(room):
    code, secret = room.start(VIEW)
    qid = room.ask(code, secret, LOOK)
    room.answer(code, "s1", qid, "cat")
    room.end(code, secret)
    assert room.state(code) is None and room.store.table(code, "answers") == {}
    with pytest.raises(LiveError, match="ended"):
        room.answer(code, "s1", qid, "cat")


def test_counts_of_students_following_and_exploring(room):
    code, secret = room.start(VIEW)
    for k in range(3):
        room.present(code, f"s{k}", following=True)
    room.present(code, "s1", following=False)
    assert room.counts(code, secret) == {"follow": 2, "explore": 1}


def test_the_csv_has_every_question_and_answer_and_no_formula(room):
    code, secret = room.start(VIEW)
    q1 = room.ask(code, secret, LOOK)
    for student, answer in (("s1", "cat"), ("s2", "it")):
        room.answer(code, student, q1, answer)
    q2 = room.ask(code, secret, Question("next", "=1+1", (), typed=True))
    for student, answer in (("s1", "=HYPERLINK(\"http://x\")"), ("s2", "@SUM(A1)"), ("s3", "-2"), ("s4", "+a")):
        room.answer(code, student, q2, answer)
    room.ask(code, secret, Question("change", "Does it change?", ("yes", "no")))  # no answers yet
    rows = list(csv.reader(io.StringIO(room.csv(code, secret))))
    assert rows[0] == ["question", "kind", "prompt", "options", "model's numbers", "answer"]
    assert [r[0] for r in rows[1:]] == ["1", "1", "2", "2", "2", "2", "3"]
    assert rows[1][1:5] == ["look", LOOK.prompt, "The | cat | it", "The 0.200; cat 0.700; it 0.100"]
    assert sorted(r[5] for r in rows[1:3]) == ["cat", "it"]
    assert rows[3][2] == "'=1+1"
    assert sorted(r[5] for r in rows[3:7]) == ["'+a", "'-2", "'=HYPERLINK(\"http://x\")", "'@SUM(A1)"]
    assert rows[7][5] == ""
    assert not any(cell[:1] in "=+-@" and cell for row in rows for cell in row)


def test_a_redis_restart_ends_the_class_clearly():
    """Redis keeps nothing on disk here: while it is down every call says the class server does not answer; once it
    is back the class has ended, and says so."""
    port = free_port()
    with own_server(port) as url:
        room = Classroom(RedisStore(url))
        code, secret = room.start(VIEW)
    with pytest.raises(StoreDown):
        room.state(code)
    with pytest.raises(StoreDown):
        room.heartbeat(code, secret)
    with own_server(port):
        assert room.state(code) is None
        with pytest.raises(LiveError, match="ended"):
            room.heartbeat(code, secret)


def test_behind_the_proxy_the_address_is_the_one_haproxy_appended():
    """HAProxy appends the address it saw to X-Forwarded-For; what came before it, the browser wrote itself."""
    forged = {"X-Forwarded-For": "10.0.0.99, 192.168.1.23"}
    assert client_address("127.0.0.1", forged, behind_proxy=True) == "192.168.1.23"
    assert client_address("127.0.0.1", {}, behind_proxy=True) == "127.0.0.1"  # no header: the connection's
    assert client_address("192.168.1.23", forged, behind_proxy=False) == "192.168.1.23"  # reached directly: ignored
    assert client_address(None, {}, behind_proxy=False) == "local"


def test_every_change_the_students_see_is_announced_and_nothing_else(room, news):
    """A move, a question, a reveal and the end wake the students' pages (the store's news); a view published again
    unchanged, a heartbeat and a student's answer do not."""
    code, secret = room.start(VIEW)
    room.publish(code, secret, {**VIEW, "params": {"layer": ["2"]}})
    room.publish(code, secret, {**VIEW, "params": {"layer": ["2"]}})  # the same view again
    room.heartbeat(code, secret)
    room.ask(code, secret, LOOK)
    room.present(code, "s1", True)
    room.answer(code, "s1", 1, "cat")
    room.reveal(code, secret)
    room.end(code, secret)
    assert [news.get(timeout=5) for _ in range(4)] == [code] * 4  # Redis: heard on the subscriber's thread
    time.sleep(0.2)  # anything more would have come by now
    assert news.empty()


class CountingStore(MemoryStore):
    """An in-memory store that counts the reads of a class's record, and can announce a change in the middle of one
    (news that reaches the process while the read is on its way)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.reads, self.during_read = 0, None

    def read(self, code: str) -> dict[str, str]:
        self.reads += 1
        record = super().read(code)
        if self.during_read is not None:
            self.during_read(code)
            self.during_read = None
        return record


def test_the_pages_of_a_process_share_one_read_of_the_class_and_see_a_change_at_once():
    now = [0.0]
    store = CountingStore(clock=lambda: now[0])
    room = Classroom(store, clock=lambda: now[0])
    code, secret = room.start(VIEW)
    store.reads = 0
    assert all(room.state(code).view == VIEW for _ in range(50))
    assert store.reads == 1  # fifty pages of this process, one read
    moved = {**VIEW, "params": {"layer": ["3"]}}
    room.publish(code, secret, moved)
    assert room.state(code).view == moved  # a change made here: seen at once
    elsewhere = Classroom(store, clock=lambda: now[0])  # another process of the same class server
    again = {**VIEW, "params": {"layer": ["4"]}}
    elsewhere.publish(code, secret, again)
    assert room.state(code).view == again  # a change made there: its news drops this process's copy
    store.write(code, {"view": json.dumps(VIEW)})  # a change whose news was lost (the store was away)
    assert room.state(code).view == again
    now[0] += SEEN_S
    assert room.state(code).view == VIEW  # seen SEEN_S later at the latest
    elsewhere.end(code, secret)
    assert room.state(code) is None


def test_a_read_that_news_of_a_change_overtook_is_not_kept():
    store = CountingStore()
    room = Classroom(store, clock=lambda: 0.0)  # the clock stands still: only news makes the page read again
    code, _ = room.start(VIEW)
    store.during_read = room._heard  # the class changes while this read is on its way: the read may be the older
    room.state(code)
    reads = store.reads
    room.state(code)
    assert store.reads == reads + 1  # read again
    room.state(code)
    assert store.reads == reads + 1  # and kept


def test_news_from_another_process_reaches_this_ones_copy_through_redis(redis_url):
    redis.Redis.from_url(redis_url).flushdb()
    before = subscribers(RedisStore(redis_url))
    here = Classroom(RedisStore(redis_url), clock=lambda: 0.0)  # the clock stands still: only news refreshes
    there = Classroom(RedisStore(redis_url))
    wait_for(lambda: subscribers(here.store) >= before + 2, "the processes did not subscribe")
    code, secret = there.start(VIEW)
    assert here.state(code).view == VIEW
    moved = {**VIEW, "params": {"layer": ["5"]}}
    there.publish(code, secret, moved)
    wait_for(lambda: here.state(code).view == moved, "the other process's move")
