"""How long the attention-only model takes to form its induction head, and what a live training costs a classroom.

    .venv/bin/python bench/bench_induction.py                 # time to the induction head: 1 and 2 threads, and as
                                                              # the page's live training
    .venv/bin/python bench/bench_induction.py --load 50       # + 50 students (load_students.py) on one server,
                                                              # without and with live trainings

"Induction head" = the first snapshot whose best layer-1 induction score is ≥ 0.5
(transformer.train_induction.induction_step). The live training runs as the page runs it (ui/training.py): in a child
process, one torch thread, niceness 10, ATLAS_TRAIN_DUTY of the time. With --load, a websocket client
(bench/st_client.py, no browser) presses the page's "Train from scratch" button whenever no training runs.
Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from transformer import train_induction as ti  # noqa: E402


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def full_speed(threads: int) -> tuple[float, float, int]:
    """(seconds to the induction head, seconds in all, its step), training at full
    speed with `threads` torch threads."""
    t0 = time.perf_counter()
    replay, _ = ti.train_induction(dataclasses.replace(ti.InductionConfig(), threads=threads))
    formed = ti.induction_step(replay)
    return formed.seconds, time.perf_counter() - t0, formed.step


def as_live() -> tuple[float, float, int, float]:
    """The page's live training (ui.training.LIVE): (seconds to the induction head, in all, its step, duty)."""
    from ui import training  # streamlit is imported, not run

    torch.set_num_threads(1)
    live = training.LiveTraining()
    t0 = time.perf_counter()
    live.start("bench", training.LIVE_CONFIG)
    live.thread.join()
    formed = ti.induction_step(live.replay)
    return formed.seconds, time.perf_counter() - t0, formed.step, training.DUTY


def keep_training(base: str, stop_file: str, log_file: str) -> None:
    """(Run in a subprocess.) Keeps a live training running on the server until stop_file exists: every 20 s a
    websocket session (no browser: it would take the shared cores) opens the page (bundled model), presses "Train
    from scratch" when the button shows (no training runs), logs what it did, and closes."""
    asyncio.run(keep_training_async(base, stop_file, log_file))


async def keep_training_async(base: str, stop_file: str, log_file: str) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from st_client import Session

    t0 = time.time()
    with open(log_file, "a") as log:
        while not os.path.exists(stop_file):
            s = Session(base, "Heads_forming")
            s.query_string = "model=shakespeare-gpt"
            try:
                await s.open()
                # a process's first run restarts once through the page router (FINISHED_EARLY_FOR_RERUN)
                for _ in range(3):
                    if (await s.rerun()).status == "FINISHED_SUCCESSFULLY":
                        break
                if any(w.endswith("-heads_train") for w in s.elements):
                    run = await s.press("heads_train")
                    log.write(f"{time.time() - t0:6.1f} s  started a training ({run.status})\n")
                else:
                    log.write(f"{time.time() - t0:6.1f} s  a training is running\n")
                log.flush()
            finally:
                await s.close()
            for _ in range(20):
                if not os.path.exists(stop_file):
                    await asyncio.sleep(1)


def load_run(base: str, students: int, duration: float, warmup: float, out: str) -> dict:
    """One load_students.py run against the server at `base`; its JSON result."""
    cmd = [
        sys.executable, str(ROOT / "bench" / "load_students.py"), "--url", base, "--students", str(students),
        "--duration", str(duration), "--warmup", str(warmup),
    ]
    cmd += ["--think", "1", "3", "--json", out]
    subprocess.run(cmd, check=True, cwd=ROOT)
    return json.loads(Path(out).read_text().splitlines()[-1])


def with_load(students: int, duration: float, warmup: float) -> None:
    from scripts.browser import serve_app

    tmp = Path(tempfile.mkdtemp(prefix="bench-induction-"))
    with serve_app(port=8645) as base:
        rows = [("no training", load_run(base, students, duration, warmup, str(tmp / "quiet.json")))]
        stop, log = tmp / "stop", tmp / "trainings.log"
        helper = subprocess.Popen([sys.executable, __file__, "--keep-training", base, str(stop), str(log)], cwd=ROOT)
        time.sleep(8)  # the helper opens the page and starts the first training
        try:
            rows.append(
                ("live training running", load_run(base, students, duration, warmup, str(tmp / "training.json")))
            )
        finally:
            stop.touch()
            helper.wait(120)
            # a training still running goes on until it ends (about a minute); the server is stopped below anyway
    print(
        f"\n{students} students on One head (think 1–3 s), "
        f"{duration:.0f} s ({warmup:.0f} s warm-up), one server; load average now {load_average()}"
    )
    print("| server | reruns/s | p50 | p95 | errors |\n|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['reruns_per_s']:.1f} | {r['p50_ms']:.0f} ms | {r['p95_ms']:.0f} ms | {r['errors']} |")
    if log.exists():
        print(
            "the live training meanwhile (seconds since the helper started):", *log.read_text().splitlines(), sep="\n  "
        )


def main() -> None:
    if sys.argv[1:2] == ["--keep-training"]:
        keep_training(*sys.argv[2:5])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--load",
        type=int,
        default=0,
        metavar="STUDENTS",
        help="also run load_students.py with this many students, without and with live trainings",
    )
    ap.add_argument("--duration", type=float, default=100)
    ap.add_argument("--warmup", type=float, default=20)
    ap.add_argument("--skip-training", action="store_true", help="only the load part")
    a = ap.parse_args()
    if not a.skip_training:
        print(f"load average before: {load_average()}")
        print(
            "| run | torch threads | induction head at step | after "
            "| whole training (1,500 steps) |\n|---|---|---|---|---|"
        )
        for threads in (1, 2):
            formed, total, step = full_speed(threads)
            print(f"| full speed | {threads} | {step} | {formed:.1f} s | {total:.1f} s |", flush=True)
        formed, total, step, duty = as_live()
        print(f"| as the page's live training (duty {duty:g}) | 1 | {step} | {formed:.1f} s | {total:.1f} s |")
        print(f"load average after: {load_average()}")
    if a.load:
        with_load(a.load, a.duration, a.warmup)


if __name__ == "__main__":
    main()
