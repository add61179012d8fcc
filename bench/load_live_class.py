"""A live class under load, with real websocket clients (bench/st_client.py): N students follow a teacher who moves
every few seconds, on `--workers` app processes behind HAProxy sharing one Redis (scripts/serve.py; ATLAS_REDIS_URL).

    python bench/load_live_class.py --students 100 --moves 12   # the issue's measurement: on a quiet machine
    python bench/load_live_class.py --students 5 --moves 3      # a smoke run
    python bench/load_live_class.py --students 100 --moves 12 --screen 1300   # students on laptops (see below)

Each student's page is woken by the class's news (ui/live/wake.py) and polls the class as a browser does (its
fragment's timer, every `wake.poll_s()`); the time of a move is from the teacher's rerun request to the student's first
finished run that shows the new layer (the address's `layer=`); the teacher's own reruns are timed too. Then the
teacher asks a question, every student answers it, and the answers are counted in Redis.

A browser reports its window's width after the first run (ui/widths.py); on a window wider than the controls bar
shows on, the runs that follow leave the bar out, and on a narrower one (a phone, --screen 390) the sidebar's copy of
its controls. --screen makes each student's requests carry that report.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

import redis
from streamlit.proto.WidgetStates_pb2 import WidgetState

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.st_client import Session  # noqa: E402
from scripts.serve import free_port, serving  # noqa: E402
from ui.live import REDIS_ENV, panel  # noqa: E402
from ui.live.redis_store import PREFIX, own_server  # noqa: E402
from ui.live.wake import poll_s  # noqa: E402

SEND = "FormSubmitter:live_answer-Send"  # the answer form's button (Streamlit's key for a form's submit button)


class Student(Session):
    """A student's tab: records when each of its runs finished and the address it left."""

    def __init__(self, base: str, code: str, screen: float | None = None):
        super().__init__(base, screen=screen)
        self.query_string = f"class={code}"
        self.finished: list[tuple[float, str]] = []

    def _finish(self, status: int) -> None:
        self.finished.append((time.perf_counter(), self.query_string))
        super()._finish(status)

    def shows_layer(self, layer: int, since: float) -> float | None:
        """When a run finished after `since` showing `layer` (None: none yet)."""
        return next((t for t, q in self.finished if t >= since and f"layer={layer}&" in q + "&"), None)

    async def poll(self) -> None:
        """One tick of the page's fragment timer (a whole run until the page has drawn it)."""
        await self.rerun(fragment=next(iter(self.fragments), ""))


def class_code(r: redis.Redis) -> str:
    """The code of the class the teacher started (the one record in this bench's Redis)."""
    (key,) = [k for k in r.scan_iter(PREFIX + "*") if k.count(":") == 1]
    return key.removeprefix(PREFIX)


async def keep_polling(s: Student, stop: asyncio.Event) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        await s.poll()
        await asyncio.sleep(max(0.0, poll_s() - (time.perf_counter() - start)))


async def answer(s: Student) -> bool:
    """Pick the first option of the question and send it (the form's button), as a student's click does."""
    pick = next((w for w in s.elements if w.endswith("-live_pick")), None)
    if pick is None:
        return False
    s.widgets[pick] = WidgetState(id=pick, string_value=s.elements[pick].options[0])
    return (await s.press(SEND)).ok


async def lesson(base: str, r: redis.Redis, args) -> dict:
    teacher = Session(base)
    await teacher.open()
    await teacher.rerun()
    await teacher.rerun({panel.OPEN_KEY: True})  # the sidebar's "Live class", whose controls show when it is open
    await teacher.press("live_start")
    code = class_code(r)
    students = [Student(base, code, args.screen) for _ in range(args.students)]
    await asyncio.gather(*(s.open() for s in students))
    await asyncio.gather(*(s.poll() for s in students))  # each opens the class's link
    stop = asyncio.Event()
    pollers = [asyncio.create_task(keep_polling(s, stop)) for s in students]
    delays, missed, teacher_runs = [], 0, []
    for k in range(args.moves):
        layer = (k + 1) % 2
        moved = time.perf_counter()
        teacher_runs.append((await teacher.rerun({"w_layer": float(layer)})).latency)
        await asyncio.sleep(args.every)
        for s in students:
            shown = s.shows_layer(layer, moved)
            if shown is None:
                missed += 1
            else:
                delays.append(shown - moved)
    await teacher.press("live_ask")
    await asyncio.sleep(3)  # every page shows the question (its page is woken)
    stop.set()
    await asyncio.gather(*pollers)
    sent = await asyncio.gather(*(answer(s) for s in students))
    counted = sum(k.startswith("1:") for k in r.hkeys(f"{PREFIX}{code}:t:answers"))
    for s in (teacher, *students):
        await s.close()
    delays.sort()
    return {
        "teacher_rerun_max_s": round(max(teacher_runs), 3),
        "students": args.students,
        "workers": args.workers,
        "moves": args.moves,
        "move_to_student_p50_s": round(statistics.median(delays), 3) if delays else None,
        "move_to_student_p95_s": round(delays[int(0.95 * (len(delays) - 1))], 3) if delays else None,
        "missed": missed,
        "answers_sent": sum(sent),
        "answers_counted": counted,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--moves", type=int, default=12)
    ap.add_argument("--every", type=float, default=5.0, help="seconds between the teacher's moves")
    ap.add_argument("--workers", type=int, default=2, help="app processes behind HAProxy")
    ap.add_argument(
        "--screen", type=float, help="the students' browser windows are this wide (their width report; default: none)"
    )
    args = ap.parse_args()
    os.environ.setdefault("ATLAS_DEFAULT_MODEL", "shakespeare-gpt")
    with own_server(free_port()) as url:
        os.environ[REDIS_ENV] = url  # every app process of the class server reads the same Redis
        with serving(args.workers) as c:
            result = asyncio.run(lesson(c.url, redis.Redis.from_url(url, decode_responses=True), args))
    print(json.dumps(result, indent=2))
    ok = result["missed"] == 0 and result["answers_counted"] == args.students == result["answers_sent"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
