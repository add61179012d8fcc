"""A live class's rules, on any ClassStore: who may do what, codes, limits, expiry and the CSV of the answers.

A class is a join code (8 characters of Crockford's base-32 alphabet: 32⁸ = 2⁴⁰ codes) and a teacher secret
(secrets.token_urlsafe, 256 bits) that only the teacher's session holds. Every teacher action carries the secret and
is refused without it (compared in constant time). Students are anonymous: a random id per browser session, never a
name. The record holds the teacher's view (page and address parameters, with a version that grows with each change),
the current question's number and whether it was revealed; the tables hold the questions (with the model's own
numbers for the reveal) and the answers ("question number:student id" → answer). The class expires TTL seconds after
the teacher's last heartbeat; answers go with it. Every change the students must see (a move, a question, a reveal, the
end) is announced through the store (`notify`), which wakes their pages; the pages of a process share one read of the
record a second (`_record`).
"""

from __future__ import annotations

import csv
import hmac
import io
import json
import re
import secrets
import threading
import time
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from transformer.errors import AtlasError

from .store import ClassStore

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base 32: no I, L, O, U
CODE_LEN = 8
READS_AS = str.maketrans("OIL", "011")  # what a student may type for the letters the alphabet leaves out
TTL = 3 * 3600.0  # a class ends this long after the teacher's last heartbeat
POLL_S = 1.0  # the teacher's page reads the class this often (and a student's, when it cannot be woken: wake.py)
WOKEN_POLL_S = 4.0  # a following student's page, woken at once by each change of the class, reads it this often too
PRESENT_S = 10.0  # a student counts as following (or exploring) for this long after their page's last poll
BEAT_S = 3.0  # a student's page tells the class it is open at most this often (every poll: WOKEN_POLL_S apart)
SEEN_S = 1.0  # a class's record, read for a student's page, serves this process's pages this long (news drops it)
FAILED_JOINS = (10, 60.0)  # at most 10 wrong codes a minute per client…
FAILED_JOINS_PER_ADDRESS = (100, 60.0)  # …and per network address (a whole classroom may share one: client_address)
BEHIND_PROXY_ENV = "ATLAS_BEHIND_PROXY"  # "1": the app is reached through this project's HAProxy only
ANSWERS = (3, 1.0)  # at most 3 answers a second per student; more are ignored
MAX_ANSWER = 200  # characters
KINDS = {
    "look": "Where will this token look?",
    "next": "What comes next?",
    "head": "Which head does this?",
    "change": "Does this change when…?",
}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet reads a cell starting so as a formula


class LiveError(AtlasError):
    """What a live-class action cannot do, in words for the person who tried it."""


class NotTeacher(LiveError):
    """A teacher's action without the teacher's secret."""


class StoreDown(LiveError):
    """The shared store does not answer (Redis restarting): the class may come back."""


@dataclass(frozen=True)
class Question:
    kind: str  # one of KINDS
    prompt: str
    options: tuple[str, ...]  # what a student may pick; empty: any typed text
    typed: bool = False  # a student may also type an answer not among the options
    truth: tuple[tuple[str, float], ...] = ()  # the model's numbers, shown on reveal: (label, value)
    truth_title: str = ""  # what those numbers are ("attention weight", "probability")

    def to_json(self) -> str:
        return json.dumps({k: getattr(self, k) for k in self.__dataclass_fields__})

    @classmethod
    def from_json(cls, text: str) -> Question:
        d = json.loads(text)
        return cls(**{**d, "options": tuple(d["options"]), "truth": tuple(map(tuple, d["truth"]))})


@dataclass(frozen=True)
class ClassState:
    """What a student's page reads on each poll."""

    code: str
    version: int
    view: dict  # {"page": page file, "params": {name: [values]}}
    qid: int  # the current question's number (0: none asked yet)
    question: Question | None
    revealed: bool


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LEN))


def normal_code(text: str) -> str:
    """A typed code as stored: upper case, without spaces or dashes, O read as 0 and I, L as 1."""
    return re.sub(r"[\s-]", "", text).upper().translate(READS_AS)[: CODE_LEN * 2]


def client_address(direct: str | None, headers: Mapping[str, str], behind_proxy: bool) -> str:
    """A student's network address, for the limit on wrong codes per address: the connection's own, or behind this
    project's HAProxy (ATLAS_BEHIND_PROXY, set by scripts/serve.py and deploy/compose.yaml) the last address of
    X-Forwarded-For, the one HAProxy appended (`option forwardfor`; any before it came from the browser, which may
    write anything there)."""
    forwarded = [a.strip() for a in headers.get("X-Forwarded-For", "").split(",") if a.strip()]
    return forwarded[-1] if behind_proxy and forwarded else direct or "local"


def shown_code(code: str) -> str:
    """"ABCD1234" → "ABCD-1234", easier to read aloud and type."""
    return f"{code[:4]}-{code[4:]}"


def clean_answer(text: str) -> str:
    """An answer as kept: control and format characters (invisible ones, direction overrides) dropped, ends trimmed."""
    return "".join(ch for ch in text if unicodedata.category(ch)[0] != "C" or ch == " ").strip()


def safe_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: one that starts like a formula gets a leading quote."""
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


class Classroom:
    """The live classes of one store. Teachers' methods take (code, secret); students' take the code and their id."""

    def __init__(self, store: ClassStore, clock: Callable[[], float] = time.time, ttl: float = TTL):
        self.store, self.clock, self.ttl = store, clock, ttl
        self._seen: dict[str, tuple[float, dict[str, str]]] = {}  # code → (when read, the record), for `_record`
        self._news = 0  # changes heard of so far: a read that overlapped one is not kept
        self._lock = threading.Lock()
        store.listen(self._heard)

    def _heard(self, code: str) -> None:
        """The class `code` changed (here, or in another process: the store's news): read it again next time."""
        with self._lock:
            self._news += 1
            self._seen.pop(code, None)

    def _changed(self, code: str) -> None:
        """Announce a change of the class `code`: to this process at once, to every process through the store."""
        self._heard(code)
        self.store.notify(code)

    def _record(self, code: str) -> dict[str, str]:
        """The class's record as students' pages read it: read from the store at most once per SEEN_S by all of this
        process's pages (after a move, every following page of the process runs at once), and again as soon as the
        class changes. A read that overlapped news of a change may be older than it and is not kept."""
        now = self.clock()
        with self._lock:
            seen, news = self._seen.get(code), self._news
        if seen is not None and now - seen[0] < SEEN_S:
            return seen[1]
        record = self.store.read(code)
        with self._lock:
            if self._news == news:
                self._seen[code] = (now, record)
        return record

    # -- the teacher

    def start(self, view: dict) -> tuple[str, str]:
        """A new class showing `view`: (code, secret)."""
        secret = secrets.token_urlsafe(32)
        while True:  # a code already taken (about one chance in 2⁴⁰ per live class) is drawn again
            code = new_code()
            fields = {"secret": secret, "view": json.dumps(view), "qid": "0", "revealed": "0"}
            if self.store.create(code, fields, self.ttl):
                return code, secret

    def _check(self, code: str, secret: str) -> dict[str, str]:
        """The class's record, when `secret` is its teacher's; else NotTeacher (an ended class: LiveError)."""
        record = self.store.read(code)
        if not record:
            raise LiveError("This class has ended.")
        if not hmac.compare_digest(record["secret"].encode(), str(secret).encode()):
            raise NotTeacher("Only the class's teacher can do this.")
        return record

    def heartbeat(self, code: str, secret: str) -> None:
        """The teacher is here: the class lives TTL seconds more."""
        self._check(code, secret)
        self.store.touch(code, self.ttl)

    def publish(self, code: str, secret: str, view: dict) -> int:
        """Show `view` to the followers (nothing written when it is already shown); the class's version."""
        record = self._check(code, secret)
        if json.loads(record["view"]) == view:
            return int(record["version"])
        version = self.store.write(code, {"view": json.dumps(view)})
        self._changed(code)
        return version

    def ask(self, code: str, secret: str, question: Question) -> int:
        """Pose `question` (the previous one closes); its number."""
        assert question.kind in KINDS, question.kind
        qid = int(self._check(code, secret)["qid"]) + 1
        self.store.put(code, "questions", str(qid), question.to_json())
        self.store.write(code, {"qid": str(qid), "revealed": "0"})
        self._changed(code)
        return qid

    def reveal(self, code: str, secret: str) -> None:
        """Show the class the answers' histogram and the model's numbers; answering stops."""
        self._check(code, secret)
        self.store.write(code, {"revealed": "1"})
        self._changed(code)

    def end(self, code: str, secret: str) -> None:
        """End the class now: its view, questions and answers are deleted."""
        self._check(code, secret)
        self.store.delete(code)
        self._changed(code)

    def answers(self, code: str, secret: str, qid: int) -> list[str]:
        """The answers to question `qid`, one per student (in no particular order)."""
        self._check(code, secret)
        return self._answers_to(code, qid)

    def _answers_to(self, code: str, qid: int) -> list[str]:
        prefix = f"{qid}:"
        return [a for key, a in self.store.table(code, "answers").items() if key.startswith(prefix)]

    def counts(self, code: str, secret: str) -> dict[str, int]:
        """How many students follow and how many explore (those whose page polled in the last PRESENT_S seconds)."""
        self._check(code, secret)
        since = self.clock() - PRESENT_S
        return {group: self.store.count(code, group, since) for group in ("follow", "explore")}

    def csv(self, code: str, secret: str) -> str:
        """Every question of the class and its answers: one row per answer (a question without answers: one row)."""
        self._check(code, secret)
        questions = {int(k): Question.from_json(v) for k, v in self.store.table(code, "questions").items()}
        answers: dict[int, list[str]] = {}
        for key, answer in self.store.table(code, "answers").items():
            answers.setdefault(int(key.split(":", 1)[0]), []).append(answer)
        out = io.StringIO()
        w = csv.writer(out)
        w.writerow(["question", "kind", "prompt", "options", "model's numbers", "answer"])
        for qid in sorted(questions):
            q = questions[qid]
            truth = "; ".join(f"{label} {value:.3f}" for label, value in q.truth)
            for answer in sorted(answers.get(qid, [])) or [""]:
                w.writerow([safe_cell(c) for c in (qid, q.kind, q.prompt, " | ".join(q.options), truth, answer)])
        return out.getvalue()

    # -- the students

    def join(self, text: str, clients: tuple[str, str]) -> str:
        """The class code a student typed or followed, when a class has it; `clients` = (browser session, network
        address) for the limit on wrong codes, which refuses to look a code up once either has tried too many."""
        keys = [(f"join:{clients[0]}", FAILED_JOINS), (f"joinip:{clients[1]}", FAILED_JOINS_PER_ADDRESS)]
        if any(self.store.hit(key, window, 0) >= most for key, (most, window) in keys):
            raise LiveError("Too many wrong class codes. Wait a minute, then try again.")
        code = normal_code(text)
        if len(code) == CODE_LEN and self.store.read(code):
            return code
        for key, (_, window) in keys:
            self.store.hit(key, window)
        raise LiveError("No class has this code. Check it with your teacher (it has 8 letters and digits).")

    def state(self, code: str, seen_qid: int | None = None) -> ClassState | None:
        """The class as a student's page sees it (None: it ended); the question is read only when it is not the one
        `seen_qid` names, which the caller already has (the record changes far more often than the question)."""
        record = self._record(code)
        if not record:
            return None
        qid = int(record["qid"])
        question = None
        if qid and qid != seen_qid:
            question = Question.from_json(self.store.table(code, "questions")[str(qid)])
        view, revealed = json.loads(record["view"]), record["revealed"] == "1"
        return ClassState(code, int(record["version"]), view, qid, question, revealed)

    def results(self, code: str, qid: int) -> list[str]:
        """A student's view of the answers to question `qid`: only once the teacher revealed it."""
        record = self._record(code)
        if not record or int(record["qid"]) != qid or record["revealed"] != "1":
            raise LiveError("The answers show when the teacher reveals them.")
        return self._answers_to(code, qid)

    def present(self, code: str, student: str, following: bool) -> None:
        """The student's page is open, following the teacher or exploring."""
        self.store.beat(code, "follow" if following else "explore", student, self.clock())

    def answer(self, code: str, student: str, qid: int, text: str) -> bool:
        """Record the student's answer to question `qid` (a later one replaces it). False when ignored: sent faster
        than ANSWERS allows. LiveError when it cannot count: too long, not one of the options, or the question is
        no longer open."""
        most, window = ANSWERS
        if self.store.hit(f"answer:{code}:{student}", window) > most:
            return False
        if len(text) > MAX_ANSWER:
            raise LiveError(f"An answer has at most {MAX_ANSWER} characters.")
        text = clean_answer(text)
        record = self.store.read(code)
        if not record:
            raise LiveError("This class has ended.")
        if int(record["qid"]) != qid or record["revealed"] == "1":
            raise LiveError("This question is closed.")
        q = Question.from_json(self.store.table(code, "questions")[str(qid)])
        if not text or (q.options and not q.typed and text not in q.options):
            raise LiveError("Pick one of the answers.")
        return self.store.put(code, "answers", f"{qid}:{student}", text)
