"""Load test: N simulated students on a real Streamlit server, over Streamlit's own websocket protocol.

Each student opens a session on a page (a browser tab without the browser, see bench/st_client.py),
then, after a think time, moves the sidebar's attention temperature or head, types a new sentence, or opens
another tab where a page has lazy tabs (One head's steps);
every move is one rerun carrying the full widget state, like the frontend sends it. Measures rerun
latency (sent -> script_finished), errors, bytes per rerun, and the server's RSS and CPU every second.
Prints a report; asserts nothing (except in --check mode, which verifies the protocol use itself).

    .venv/bin/python bench/load_students.py --students 30 --duration 90 --warmup 20
    .venv/bin/python bench/load_students.py --check
    .venv/bin/python bench/load_students.py --url http://127.0.0.1:8501 --page mix --students 50
    .venv/bin/python bench/load_students.py --students 50 --model smollm2-135m
    .venv/bin/python bench/load_students.py --students 51 --model smollm2-135m,minilm-l6,shakespeare-gpt   (round-robin)
    .venv/bin/python bench/load_students.py --page mix --students 100 --screen 1300   (laptops: see --screen)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from st_client import DONE, Run, Session  # noqa: E402

from scripts.browser import SHOWN_TAB, serve_app  # noqa: E402
from scripts.serve import WORKERS_ENV, serving, worker_count  # noqa: E402

SENTENCES = [
    "The cat sat on the mat.",
    "I love bears.",
    "She bears the pain without a word.",
    "Time flies like an arrow; fruit flies like a banana.",
    "The animal didn't cross the street because it was too tired.",
    "We sat on the bank of the river and watched the boats go by.",
    "She put the money in the bank before the storm.",
    "ROMEO: But, soft! what light through yonder window breaks?",
    "To be, or not to be, that is the question.",
    "The quick brown fox jumps over the lazy dog.",
    "My teacher said that attention is all you need, but I need coffee too.",
    "The dog chased the cat, and the cat chased the mouse around the kitchen.",
    "Every morning the old fisherman walked down to the harbour to check his nets.",
    "When the rain finally stopped, the children ran outside to play in the puddles.",
    "A transformer reads every word of the sentence at once and lets each word look at the others.",
    "The king and the queen rode to the castle, where the king gave a long speech.",
    "Friends, Romans, countrymen, lend me your ears; I come to bury Caesar, not to praise him.",
    "The students in the back row whispered while the professor drew another matrix on the board.",
    "If you change the temperature, the attention weights become sharper or flatter.",
    "Yesterday I bought three apples, two pears and a melon at the market near the station.",
]
# default weights of the moves ("step": open another tab of a page's lazy tabs)
ACTIONS = {"temperature": 0.4, "head": 0.25, "sentence": 0.15, "step": 0.2}
MIX = [
    "3_One_head",
    "app",
    "1_Tokens_and_embeddings",
    "4_Masking",
    "5_Softmax_and_temperature",
    "7_Multi_head",
    "9_Next_token",
]


def weights(text: str) -> dict[str, float]:
    """ "temperature=0.6,head=0.4" -> {"temperature": 0.6, "head": 0.4}"""
    out = {k.strip(): float(v) for k, v in (item.split("=") for item in text.split(","))}
    if not out.keys() <= ACTIONS.keys():
        raise argparse.ArgumentTypeError(f"moves are {sorted(ACTIONS)}")
    return out


def page_name(page: str) -> str:
    """URL path name of a page: "3_One_head" or "pages/3_One_head.py" -> "One_head"; "app" -> "" (home)."""
    stem = Path(page).stem
    return "" if stem in ("app", "home", "") else stem.split("_", 1)[1] if stem[0].isdigit() else stem


@dataclass
class Record:
    t: float  # s since the test started, when the rerun was sent
    student: int
    page: str
    model: str
    action: str  # load / temperature / head / sentence
    latency: float
    first_msg: float
    nbytes: int
    status: str
    exceptions: int


# --------------------------------------------------------------------------- server process


@contextlib.contextmanager
def spinning():
    """Another process busy on the CPU until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


def pid_listening_on(port: int) -> int | None:
    """PID of the process with a listening TCP socket on `port` (via /proc/net/tcp* and /proc/*/fd)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in list(f)[1:]:
                cols = line.split()
                if int(cols[1].rsplit(":", 1)[1], 16) == port and cols[3] == "0A":  # 0A = LISTEN
                    inodes.add(cols[9])
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return int(pid)
    return None


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process (all threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_jiffies() -> tuple[int, int]:
    """(steal, total) CPU time of the whole machine since boot, /proc/stat;
    steal = time the hypervisor ran others on our CPUs."""
    user, nice, system, idle, iowait, irq, softirq, steal = map(
        int, Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    )
    return steal, user + nice + system + idle + iowait + irq + softirq + steal


async def sample(
    pids: list[int], t0: float, out: list[tuple[float, float, float, float, float]], stop: asyncio.Event
) -> None:
    """Every second: (t, server RSS MiB, server CPU % of one core, 1-min load average, machine CPU steal %); several
    servers are summed."""
    if not pids:
        return
    last_t, last_cpu, last_jiffies = time.perf_counter(), sum(map(cpu_seconds, pids)), machine_jiffies()
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
        now, cpu, jiffies = time.perf_counter(), sum(map(cpu_seconds, pids)), machine_jiffies()
        load = float(Path("/proc/loadavg").read_text().split()[0])
        steal = 100 * (jiffies[0] - last_jiffies[0]) / max(jiffies[1] - last_jiffies[1], 1)
        out.append((now - t0, sum(map(rss_mib, pids)), 100 * (cpu - last_cpu) / (now - last_t), load, steal))
        last_t, last_cpu, last_jiffies = now, cpu, jiffies


# --------------------------------------------------------------------------- students


def control_prefix(s: Session) -> str:
    """The prefix of the controls a student moves: the sidebar's ("w_…"), or the bar's above the page on a window at
    most presenter.NARROW_PX wide (--screen), where the sidebar has no copy of them."""
    prefixes = sorted(k.rsplit("-", 1)[-1].removesuffix("sentence") for k in s.widgets if k.endswith("sentence"))
    return "w_" if "w_" in prefixes or not prefixes else prefixes[0]


def choose(rng: random.Random, s: Session, weights: dict[str, float]) -> tuple[str, dict[str, object]]:
    """One student move, as the widget changes it makes (see control_prefix)."""
    prefix = control_prefix(s)
    have = {
        a: w
        for a, w in weights.items()
        if w > 0 and (bool(s.tabs) if a == "step" else any(k.endswith("-" + prefix + a) for k in s.widgets))
    }
    action = rng.choices(list(have), weights=list(have.values()))[0]
    if action == "step":
        wid = rng.choice(sorted(s.tabs))
        now = s.widgets[wid].string_value
        return action, {wid.rsplit("-", 1)[-1]: rng.choice([t for t in s.tabs[wid] if t != now] or [now])}
    if action == "temperature":
        el = s.element(prefix + "temperature")
        now = s.widgets[s.widget_id(prefix + "temperature")].double_array_value.data[0]
        steps = round((el.max - el.min) / el.step)
        value = now
        while abs(value - now) < 1e-9:
            value = round(el.min + el.step * rng.randint(0, steps), 2)
        return action, {prefix + "temperature": value}
    if action == "head":
        el = s.element(prefix + "head")
        now = s.widgets[s.widget_id(prefix + "head")].double_array_value.data[0]
        choices = [h for h in range(int(el.min), int(el.max) + 1) if h != now] or [now]
        return action, {prefix + "head": rng.choice(choices)}
    return action, {prefix + "sentence": rng.choice(SENTENCES)}


def first_moves(args, s: Session, i: int) -> list[tuple[str, dict[str, object]]]:
    """The moves a student makes right after the page opens: type a sentence of their own (--own-sentence), open the
    lazy tab whose label begins with --tab."""
    moves, sentence = [], control_prefix(s) + "sentence"
    if args.own_sentence and any(k.endswith("-" + sentence) for k in s.widgets):  # (a page may have none)
        moves.append(("sentence", {sentence: f"{SENTENCES[i % len(SENTENCES)]} Student {i} wrote this."}))
    for wid, labels in s.tabs.items() if args.tab else ():
        moves += [("step", {wid.rsplit("-", 1)[-1]: label}) for label in labels if label.startswith(args.tab)][:1]
    return moves


async def student(
    i: int, args, base: str, page: str, model: str, t0: float, records: list[Record], stop_at: float
) -> None:
    """Open the page on `model`, then move a control after every think time until the end of the test."""
    rng = random.Random(args.seed * 100_003 + i)
    await asyncio.sleep(args.ramp * i / max(args.students - 1, 1))
    url_query = (
        urlencode({"model": model} if args.layer is None else {"model": model, "layer": args.layer}) if model else ""
    )  # a reload keeps the address bar, which holds the app's state
    while time.perf_counter() < stop_at:
        s = Session(base, page_name(page), screen=args.screen)
        s.query_string = url_query
        action, changes, first = "load", {}, None
        try:
            await s.open()
            while True:
                sent = time.perf_counter()
                run: Run = await s.rerun(changes, timeout=args.timeout)
                records.append(
                    Record(
                        sent - t0,
                        i,
                        page,
                        model,
                        action,
                        run.latency,
                        run.first_msg,
                        run.nbytes,
                        run.status,
                        len(run.exceptions),
                    )
                )
                if run.exceptions and args.verbose:
                    print(f"student {i} {action}: {run.exceptions[:2]}", file=sys.stderr)
                if not run.ok:
                    break  # an error on screen or a dead connection: the student reloads the tab
                first = first_moves(args, s, i) if first is None else first
                if first:  # no think time: the student is getting the page ready
                    action, changes = first.pop(0)
                    continue
                await asyncio.sleep(rng.uniform(*args.think))
                if time.perf_counter() >= stop_at:
                    return
                action, changes = choose(rng, s, args.actions)
        except (TimeoutError, OSError, KeyError) as err:
            records.append(
                Record(
                    time.perf_counter() - t0,
                    i,
                    page,
                    model,
                    action,
                    0.0,
                    0.0,
                    0,
                    f"CONNECT_ERROR {type(err).__name__}",
                    0,
                )
            )
            if args.verbose:
                print(f"student {i}: {err!r}", file=sys.stderr)
        finally:
            url_query = s.query_string
            with contextlib.suppress(Exception):
                await s.close()
        await asyncio.sleep(rng.uniform(*args.think))


# --------------------------------------------------------------------------- report


def pct(xs: list[float], q: float) -> float:
    return (
        statistics.quantiles(xs, n=100, method="inclusive")[q - 1] if len(xs) > 1 else (xs[0] if xs else float("nan"))
    )


def slope_per_min(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (t s, y) in y per minute."""
    if len(points) < 2:
        return float("nan")
    ts, ys = zip(*points, strict=True)
    mt, my = statistics.fmean(ts), statistics.fmean(ys)
    den = sum((t - mt) ** 2 for t in ts)
    return 60 * sum((t - mt) * (y - my) for t, y in zip(ts, ys, strict=True)) / den if den else float("nan")


def report(args, records: list[Record], samples, rss_start: float, client_cpu: float, wall: float) -> dict:
    steady = [r for r in records if r.action != "load" and r.t >= args.warmup]
    ok = [r for r in steady if r.status in DONE and not r.exceptions]
    lat = [1000 * r.latency for r in ok]
    rest_ms = [1000 * (r.latency - r.first_msg) for r in ok]
    loads = [
        1000 * r.latency
        for r in records
        if r.action == "load" and r.status in DONE and not r.exceptions
    ]
    errors: dict[str, int] = {}
    for r in records:
        if r.status not in DONE:
            errors[r.status] = errors.get(r.status, 0) + 1
        if r.exceptions:
            key = f"exception element ({r.action})"
            errors[key] = errors.get(key, 0) + r.exceptions
    after = [(t, rss) for t, rss, *_ in samples if t >= args.warmup]
    cpu = [c for t, _, c, *_ in samples if t >= args.warmup]
    loadavg = [la for *_, la, _ in samples]
    steal = [st for t, *_, st in samples if t >= args.warmup]
    reruns_per_s = len(steady) / max(wall - args.warmup, 1e-9)
    res = {
        "students": args.students,
        "pages": args.page,
        "screen": args.screen,
        "actions": args.actions,
        "duration_s": round(wall, 1),
        "reruns_total": sum(r.action != "load" for r in records),
        "reruns_measured": len(steady),
        "reruns_per_s": round(reruns_per_s, 2),
        "p50_ms": round(pct(lat, 50), 1),
        "p95_ms": round(pct(lat, 95), 1),
        "max_ms": round(max(lat, default=float("nan")), 1),
        "first_msg_p50_ms": round(pct([1000 * r.first_msg for r in ok], 50), 1),
        "first_msg_p95_ms": round(pct([1000 * r.first_msg for r in ok], 95), 1),
        "rest_p50_ms": round(pct(rest_ms, 50), 1),
        "rest_p95_ms": round(pct(rest_ms, 95), 1),
        "page_loads": len(loads),
        "load_p50_ms": round(pct(loads, 50), 1),
        "load_max_ms": round(max(loads, default=float("nan")), 1),
        "errors": errors,
        "kib_per_rerun": round(statistics.fmean([r.nbytes for r in ok]) / 1024, 1) if ok else float("nan"),
        "rss_start_mib": round(rss_start, 1),
        "rss_after_warmup_mib": round(after[0][1], 1) if after else float("nan"),
        "rss_end_mib": round(samples[-1][1], 1) if samples else float("nan"),
        "rss_slope_mib_per_min": round(slope_per_min(after), 2),
        "server_cpu_mean_pct": round(statistics.fmean(cpu), 1) if cpu else float("nan"),
        "server_cpu_max_pct": round(max(cpu), 1) if cpu else float("nan"),
        # CPU per rerun = CPU-s per s / reruns per s: what a move costs, steadier than latency on a noisy machine
        "server_cpu_ms_per_rerun": (
            round(10 * statistics.fmean(cpu) / reruns_per_s, 1) if cpu and reruns_per_s else float("nan")
        ),
        "client_cpu_pct": round(100 * client_cpu / wall, 1),
        "loadavg_1m_max": max(loadavg, default=float("nan")),
        "steal_mean_pct": round(statistics.fmean(steal), 1) if steal else float("nan"),
        "steal_max_pct": round(max(steal), 1) if steal else float("nan"),
        "by_action_p50_ms": {
            a: round(pct([1000 * r.latency for r in ok if r.action == a], 50), 1)
            for a in ACTIONS
            if any(r.action == a for r in ok)
        },
        "model": args.model,
        "by_model_p50_p95_ms": {
            m: [round(pct(v, 50), 1), round(pct(v, 95), 1)]
            for m in args.model.split(",")
            if (v := [1000 * r.latency for r in ok if r.model == m])
        },
    }
    model = args.model or "the server's default"
    print(
        f"\n=== {res['students']} students on {args.page} with model {model}, moves {args.actions}, "
        f"{res['duration_s']} s (warm-up {args.warmup} s excluded from latency, ramp {args.ramp} s)"
        + (f", windows {args.screen:.0f} px wide" if args.screen else "")
    )
    print(f"reruns: {res['reruns_total']} total, {res['reruns_measured']} measured ({res['reruns_per_s']}/s)")
    print(f"page loads: {res['page_loads']} (p50 {res['load_p50_ms']} ms, max {res['load_max_ms']} ms)")
    print(
        f"rerun latency: p50 {res['p50_ms']} ms, p95 {res['p95_ms']} ms, "
        f"max {res['max_ms']} ms   by action p50: {res['by_action_p50_ms']}"
    )
    # When the server is busy its event loop sends a run's messages in bursts: a late first message then
    # means a late flush, not a late start.
    print(
        f"  = first message (new_session) after p50 {res['first_msg_p50_ms']} / p95 {res['first_msg_p95_ms']} ms, "
        f"the rest of the run p50 {res['rest_p50_ms']} / p95 {res['rest_p95_ms']} ms"
    )
    if "," in args.model:
        print(f"  by model (p50, p95 ms): {res['by_model_p50_p95_ms']}")
    print(f"errors: {errors or 'none'}")
    print(f"bytes: {res['kib_per_rerun']} KiB per rerun (websocket payload)")
    print(
        f"server RSS: start {res['rss_start_mib']} MiB, after warm-up {res['rss_after_warmup_mib']} MiB, "
        f"end {res['rss_end_mib']} MiB, slope after warm-up {res['rss_slope_mib_per_min']} MiB/min"
    )
    print(
        f"server CPU: mean {res['server_cpu_mean_pct']}%, max {res['server_cpu_max_pct']}% of one core, "
        f"{res['server_cpu_ms_per_rerun']} ms per rerun; "
        f"load generator {res['client_cpu_pct']}%; 1-min load average max {res['loadavg_1m_max']}"
    )
    print(
        "machine: CPU steal (time the hypervisor gave our CPUs to other machines) "
        f"mean {res['steal_mean_pct']}%, max {res['steal_max_pct']}% over a second"
    )
    if wall >= 240:  # a long run: slow spells show minute by minute
        for m in range(int(args.warmup // 60), int(wall // 60)):
            lat_m = [1000 * r.latency for r in ok if m * 60 <= r.t < (m + 1) * 60]
            sam = [x for x in samples if m * 60 <= x[0] < (m + 1) * 60]
            if lat_m and sam:
                print(
                    f"  minute {m:2d}: p50 {pct(lat_m, 50):6.1f} ms, p95 {pct(lat_m, 95):7.1f} ms, "
                    f"server CPU {statistics.fmean(x[2] for x in sam):4.1f}%, load {max(x[3] for x in sam):.2f}, "
                    f"steal {statistics.fmean(x[4] for x in sam):4.1f}%, RSS {sam[-1][1]:6.1f} MiB"
                )
    return res


async def load_test(args, base: str, pages: list[str], pids: list[int]) -> dict:
    records: list[Record] = []
    samples: list = []
    stop = asyncio.Event()
    rss_start = sum(map(rss_mib, pids)) if pids else float("nan")
    cpu0 = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    t0 = time.perf_counter()
    sampler = asyncio.create_task(sample(pids, t0, samples, stop))
    stop_at = t0 + args.duration
    models = args.model.split(",")
    await asyncio.gather(
        *(
            student(i, args, base, pages[i % len(pages)], models[i % len(models)], t0, records, stop_at)
            for i in range(args.students)
        )
    )
    wall = time.perf_counter() - t0
    stop.set()
    await sampler
    res = report(args, records, samples, rss_start, sum(resource.getrusage(resource.RUSAGE_SELF)[:2]) - cpu0, wall)
    if args.json:
        with open(args.json, "a") as f:
            f.write(
                json.dumps(
                    {**res, "records": [asdict(r) for r in records] if args.json_records else None, "samples": samples}
                )
                + "\n"
            )
    return res


# --------------------------------------------------------------------------- protocol check


async def check(base: str, page: str, model: str = "") -> bool:
    """One session on the page: no exception after any move, the app takes each new value (it mirrors its
    state into the URL), and on the One head page every move changes at least one chart."""
    print(f"--- {page} on {model or 'the default model'}")
    strict = page_name(page) == "One_head"  # other pages may ignore some sidebar controls on purpose
    s = Session(base, page_name(page), keep_content=True)
    s.query_string = urlencode({"model": model}) if model else ""
    await s.open()
    ok = True

    def verdict(name: str, passed: bool, detail: str) -> None:
        nonlocal ok
        ok &= passed
        print(f"[{'PASS' if passed else 'FAIL'}] {name}: {detail}")

    first = await s.rerun()
    verdict(
        "page load",
        first.ok,
        (
            f"{first.status}, {len(first.charts)} charts, "
            f"{len(first.exceptions)} exceptions {first.exceptions[:1]}, {first.nbytes / 1024:.1f} KiB"
        ),
    )
    if model:
        shown = parse_qs(s.query_string).get("model", [""])[0]
        verdict("model", shown == model, f"URL model={shown}")
    prev = first
    label = next((tab for name, tab in SHOWN_TAB.items() if page_name(name) == page_name(page)), None)
    if label:  # open the tab that the moves below change
        wid = next(iter(s.tabs))
        run = await s.rerun({wid.rsplit("-", 1)[-1]: label})
        changed = sum(prev.charts.get(cid) != spec for cid, spec in run.charts.items())
        verdict(
            f"open tab {label!r}",
            run.ok and s.widgets[wid].string_value == label and changed > 0,
            f"{run.status}, {changed}/{len(run.charts)} charts new",
        )
        prev = run
    # The sentence is longer than the default one: a selected token keeps its index but gets a new label.
    for key, value in (("w_temperature", 2.5), ("w_head", 1), ("w_sentence", SENTENCES[10]), ("w_temperature", 0.5)):
        try:
            wid = s.widget_id(key)
        except KeyError as err:
            verdict(key, False, str(err))
            continue
        run = await s.rerun({key: value})
        changed = sum(prev.charts.get(cid) != spec for cid, spec in run.charts.items())
        shown = parse_qs(s.query_string).get(key[2:], [""])[0]
        detail = (
            f"{run.status}, {changed}/{len(run.charts)} charts changed, {len(run.exceptions)} "
            f"exceptions {run.exceptions[:1]}, {1000 * run.latency:.0f} ms, {run.nbytes / 1024:.1f} KiB"
        )
        verdict(
            f"{key} -> {value!r}",
            run.ok and shown == str(value) and (changed > 0 or not strict),
            f"{detail}; URL {key[2:]}={shown[:40]}; id {wid}",
        )
        prev = run
    same = await s.rerun()
    changed = sum(prev.charts.get(cid) != spec for cid, spec in same.charts.items())
    verdict(
        "rerun without a change",
        same.ok and not changed,
        f"{changed} charts changed (expected 0), {same.nbytes / 1024:.1f} KiB",
    )
    await s.close()
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=10)
    ap.add_argument(
        "--duration",
        type=float,
        default=60,
        help="seconds from the first student's start to the end (includes warm-up)",
    )
    ap.add_argument(
        "--warmup", type=float, default=20, help="seconds excluded from the latency statistics and the RSS slope"
    )
    ap.add_argument(
        "--ramp", type=float, default=None, help="seconds over which students arrive (default: min(10, warmup/2))"
    )
    ap.add_argument(
        "--page",
        default="3_One_head",
        help='a page file stem ("3_One_head", "app" = home), a comma-separated list (students round-robin), or "mix"',
    )
    ap.add_argument(
        "--model",
        default="shakespeare-gpt",
        help=(
            "the model the students open (query string model=…); "
            'a comma-separated list: students round-robin; "" = the server\'s default'
        ),
    )
    ap.add_argument(
        "--layer", type=int, help="the layer every student opens (query string layer=…; default: the page's own, 0)"
    )
    ap.add_argument(
        "--think",
        type=float,
        nargs=2,
        default=(1.0, 3.0),
        metavar=("MIN", "MAX"),
        help="think time between moves, seconds (uniform)",
    )
    ap.add_argument(
        "--timeout", type=float, default=60, help="a rerun slower than this counts as an error; the student reloads"
    )
    ap.add_argument(
        "--actions",
        type=weights,
        default=ACTIONS,
        help=(
            'weights of the moves, e.g. "temperature=0.6,head=0.4" (default: '
            "temperature=0.4,head=0.25,sentence=0.15,step=0.2)"
        ),
    )
    ap.add_argument(
        "--own-sentence",
        action="store_true",
        help="each student first types a sentence of their own (a bench sentence with the student's number)",
    )
    ap.add_argument("--tab", help='each student first opens the lazy tab whose label begins with this (e.g. "3 ·")')
    ap.add_argument(
        "--screen",
        type=float,
        help="the students' browser windows are this wide: each request after the first run carries the window's width "
        "report, as a browser's does (default: none, as a first run or a browser without the report)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--url", help="a running server (default: start one with scripts/browser.py serve_app)")
    ap.add_argument("--pid", type=int, help="server PID for RSS/CPU (default: the process listening on the URL's port)")
    default_workers = worker_count(os.environ.get(WORKERS_ENV), os.cpu_count())
    ap.add_argument(
        "--workers",
        type=int,
        default=default_workers,
        help="Streamlit processes behind HAProxy, as `make serve`"
        " starts them (default: one per core, or $ATLAS_WORKERS); 1: one process, no proxy",
    )
    ap.add_argument(
        "--busy",
        type=int,
        default=0,
        metavar="N",
        help="keep N other processes spinning on the CPU meanwhile (a busy machine)",
    )
    ap.add_argument("--check", action="store_true", help="verify the protocol use on one session and exit")
    ap.add_argument("--json", help="append the result (and per-second samples) as one JSON line to this file")
    ap.add_argument("--json-records", action="store_true", help="also store every rerun record in --json")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    args.ramp = min(10.0, args.warmup / 2) if args.ramp is None else args.ramp

    pages = MIX if args.page == "mix" else args.page.split(",")
    with contextlib.ExitStack() as stack:
        if args.workers > 1 and not args.url:
            served = stack.enter_context(serving(args.workers))
            base, pids = served.url, [p.pid for p in served.procs]
        else:
            base = args.url.rstrip("/") if args.url else stack.enter_context(serve_app())
            pids = [args.pid or pid_listening_on(urlparse(base).port or 80)]
        if args.check:
            results = [asyncio.run(check(base, page, model)) for page in pages for model in args.model.split(",")]
            sys.exit(0 if all(results) else 1)
        pids = [p for p in pids if p]
        for _ in range(args.busy):
            stack.enter_context(spinning())
        runs = os.environ.get("ATLAS_CONCURRENT_RUNS", "1")  # ui/serving.py; a server started here inherits it
        print(
            f"server {base}, pids {pids}, script runs at once {runs if runs != '0' else 'unlimited'}, "
            f"{args.busy} spinning processes, load average {Path('/proc/loadavg').read_text().split()[:3]}"
        )
        asyncio.run(load_test(args, base, pages, pids))


if __name__ == "__main__":
    main()
