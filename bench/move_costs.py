"""What each kind of move costs the server, page by page: one student, one Streamlit process, no other load.

A class's CPU per rerun is the mean cost of the moves its students make. Here one student opens each page and
makes the class bench's own moves (bench/load_students.py's `choose`: τ, head, a sentence from its list, another
tab), one after the other; the server's CPU time over each move (/proc, all threads) is its cost. The mean over many
moves is the figure: one move is measured to the kernel's tick (10 ms). Prints, per page, the mean CPU per move and
per kind of move; asserts nothing.

    .venv/bin/python bench/move_costs.py --model smollm2-135m
    .venv/bin/python bench/move_costs.py --model smollm2-135m --page 7_Multi_head --moves 150
    .venv/bin/python bench/move_costs.py --url http://127.0.0.1:8611 --model smollm2-135m   (a running server)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlencode, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from load_students import ACTIONS, MIX, choose, cpu_seconds, page_name, pid_listening_on  # noqa: E402
from st_client import Session  # noqa: E402

from scripts.browser import serve_app  # noqa: E402

SKIPPED = 5  # the first moves of each page are not counted: the page's first drawing, its caches' first fill


async def page_costs(base: str, pid: int, page: str, model: str, moves: int, rng: random.Random) -> dict[str, list]:
    """{kind of move: [server CPU seconds of each move]} for `moves` moves of one student on `page`."""
    s = Session(base, page_name(page), screen=1300)  # a laptop's window: its width report comes with each move
    s.query_string = urlencode({"model": model}) if model else ""
    await s.open()
    await s.rerun({})
    costs = defaultdict(list)
    try:
        for i in range(SKIPPED + moves):
            kind, change = choose(rng, s, ACTIONS)
            before = cpu_seconds(pid)
            await s.rerun(change)
            if i >= SKIPPED:
                costs[kind].append(cpu_seconds(pid) - before)
    finally:
        await s.close()
    return costs


def ms(values: list[float]) -> str:
    return f"{1000 * statistics.fmean(values):6.1f}" if values else "     —"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--page", default="mix", help='page file stems, comma-separated, or "mix" (load_students.MIX)')
    ap.add_argument("--model", default="", help='the model the student opens (query string model=…; "" = default)')
    ap.add_argument("--moves", type=int, default=80, help="moves counted per page")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--url", help="a running server, one process (default: start one)")
    args = ap.parse_args()
    pages = MIX if args.page == "mix" else args.page.split(",")
    rng = random.Random(args.seed)
    with contextlib.ExitStack() as stack:
        base = args.url.rstrip("/") if args.url else stack.enter_context(serve_app())
        pid = pid_listening_on(urlparse(base).port or 80)
        if pid is None:
            sys.exit(f"no process listens on {base}: give --url of a server on this machine")
        print(f"server {base} (pid {pid}), model {args.model or 'default'}, {args.moves} moves a page after {SKIPPED}")
        print(f"{'page':28s} {'mean':>6s} " + " ".join(f"{kind:>11s}" for kind in ACTIONS) + "   (ms of CPU a move)")
        every = defaultdict(list)
        for page in pages:
            costs = asyncio.run(page_costs(base, pid, page, args.model, args.moves, rng))
            moves = [c for kind in costs.values() for c in kind]
            for kind, values in costs.items():
                every[kind] += values
            print(f"{page:28s} {ms(moves)} " + " ".join(f"{ms(costs.get(kind, [])):>11s}" for kind in ACTIONS))
        moves = [c for kind in every.values() for c in kind]
        print(f"{'all pages':28s} {ms(moves)} " + " ".join(f"{ms(every.get(kind, [])):>11s}" for kind in ACTIONS))


if __name__ == "__main__":
    main()
