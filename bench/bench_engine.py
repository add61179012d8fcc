"""Engine speed on the bundled model: load time, forward-only and full-trace medians, trace size, and the CPU
a 16-token trace costs when several threads run traces at once (as Streamlit's script threads do), with and
without one-at-a-time gating (ui/serving.py).

    .venv/bin/python bench/bench_engine.py [--model NAME_OR_DIR] [--repeats 50]

Prints a table; asserts nothing (the machine is shared, numbers vary with its load).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import threading
import time
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer.loading import load_model  # noqa: E402
from transformer.trace import run_trace  # noqa: E402

TEXT = (
    "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer the slings and arrows "
    "of outrageous fortune, or to take arms against a sea of troubles and by opposing end them. To die, to sleep, "
    "no more; and by a sleep to say we end the heart-ache and the thousand natural shocks that flesh is heir to. "
)
LENGTHS = (16, 64, 256)
THREADS = (1, 2)


def median_ms(fn, repeats: int, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def forward(model, ids: torch.Tensor) -> None:
    with torch.inference_mode():
        model(ids)


def text_of(tokenizer, n: int) -> str:
    """A prefix of TEXT·k that is exactly n tokens long."""
    text = TEXT * (1 + n // 40)
    enc = tokenizer.encode(text)
    cut = text[: enc.offsets[n - 1][1]]
    assert len(tokenizer.encode(cut)) == n, f"could not cut a text of {n} tokens"
    return cut


def cpu_per_trace_ms(lm, text: str, at_once: int, gated: bool, rounds: int = 12) -> float:
    """Process CPU per run_trace when `at_once` fresh threads run one trace each, all started together."""
    gate = threading.Lock() if gated else contextlib.nullcontext()

    def one() -> None:
        with gate:
            run_trace(lm.model, lm.tokenizer, text).run_blocks()

    t0 = time.process_time()
    for _ in range(rounds):
        threads = [threading.Thread(target=one) for _ in range(at_once)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return 1000 * (time.process_time() - t0) / (rounds * at_once)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="shakespeare-gpt")
    p.add_argument("--repeats", type=int, default=50)
    a = p.parse_args()

    torch.set_num_threads(1)
    loads = []
    for _ in range(5):
        t0 = time.perf_counter()
        lm = load_model(a.model)
        loads.append(time.perf_counter() - t0)
    cfg = lm.cfg
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"model {lm.name}: {cfg.n_layer} layers × {cfg.n_head} heads, "
        f"d_model {cfg.d_model}, n_ctx {cfg.n_ctx}, vocab {cfg.vocab_size}"
    )
    print(
        f"load_model: median {1000 * statistics.median(loads):.1f} ms "
        f"over {len(loads)} fresh loads (first {1000 * loads[0]:.1f} ms)\n"
    )

    print(f"{'tokens':>6} {'threads':>7} {'forward ms':>11} {'run_trace ms':>13} {'trace MiB':>10}")
    print("-" * 51)
    for n in LENGTHS:
        if n > cfg.n_ctx:
            continue
        text = text_of(lm.tokenizer, n)
        ids = torch.tensor([lm.tokenizer.encode(text).ids])  # (1, n)
        size = run_trace(lm.model, lm.tokenizer, text).run_blocks().nbytes / 2**20
        for threads in THREADS:
            torch.set_num_threads(threads)
            fwd = median_ms(partial(forward, lm.model, ids), a.repeats)
            full = median_ms(lambda text=text: run_trace(lm.model, lm.tokenizer, text).run_blocks(), a.repeats)
            print(f"{n:>6} {threads:>7} {fwd:>11.2f} {full:>13.2f} {size:>10.2f}")
    print(f"\nmedians of {a.repeats} runs after 5 warm-up runs; issue target: forward + full trace ≤ 5 ms at 64 tokens")

    torch.set_num_threads(1)
    text = text_of(lm.tokenizer, 16)
    print(
        "\nCPU per 16-token run_trace (ms) when N threads run one each at once; "
        "gated = one at a time, as ui/serving.py does"
    )
    print(f"{'N':>4} {'free':>7} {'gated':>7}")
    for n in (1, 8, 25):
        print(f"{n:>4} {cpu_per_trace_ms(lm, text, n, False):>7.2f} {cpu_per_trace_ms(lm, text, n, True):>7.2f}")


if __name__ == "__main__":
    main()
