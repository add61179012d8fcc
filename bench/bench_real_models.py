"""The real pretrained models (SmolLM2-135M, all-MiniLM-L6-v2): our engine against Hugging Face transformers, the
load time of SmolLM2 in a fresh process, and the memory of a process holding every model and a warm trace cache.

    .venv/bin/python bench/bench_real_models.py                    # all three parts
    .venv/bin/python bench/bench_real_models.py --forward [--rounds 25] [--tokens 64] [--profile]
        [--models smollm2-135m]
    .venv/bin/python bench/bench_real_models.py --load [--processes 5]
    .venv/bin/python bench/bench_real_models.py --memory [--traces 40]

--forward: at N tokens (default 64), per model and torch thread count (1, 2), in one process:
    HF        Hugging Face's eager forward with output_attentions=True (SmolLM2: AutoModelForCausalLM from the same
              GGUF file, float32; MiniLM: BertModel from the package's zip, extracted to a temporary folder)
    no rec    our model(ids), nothing recorded (for reference)
    (a) rec   our model(ids, rec={}), every intermediate recorded (torch tensors, no copies)
    (a2) −res (a) without hook_result (each head's z·W_O share, which HF does not compute): model(ids, rec=Recorder(…))
    (b) trace run_trace(…).run_blocks(): tokenize, run every block, record what a trace keeps, copy it to numpy
              (what the app does for a page that reads the last layer)
    (c) all   (b), then every layer's internals read (tr["blocks.{l}.attn.hook_q"]: each layer recomputed)
  Rounds run every variant once, in turn (so a change of the machine's speed hits all alike), after 3 warm-up rounds;
  the table gives each variant's median and its ratio to HF's median.
--load: fresh processes (alternating): load_model("smollm2-135m") whole, and split into read_gguf_llama (parse,
  dequantize, tokenizer) and the model build (transformer.loading._build); plus the import time they all pay first,
  and the build in processes that imported torch._dynamo beforehand (what the build spends importing it).
--profile (with --forward): torch.profiler over 10 calls of each variant, the operators with the most own CPU.
--memory: a fresh process loads shakespeare-gpt, smollm2-135m and minilm-l6 through ui.models (as the app does),
  fills ui.models.TRACES with traces of 16–64 tokens across the three models (reading one more layer of each, as a
  page does), and reports its RSS after each step.

Prints tables; asserts nothing (the machine is shared: numbers move with its load).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from texts import cut_to_tokens, passage  # noqa: E402

THREADS = (1, 2)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# --------------------------------------------------------------------------- forward against Hugging Face


def hf_models(which: list[str]):
    """{our name: (HF model in eval mode, how it is called with ids)}; loaded once (SmolLM2 takes ~18 s)."""
    import torch
    from transformers import AutoModelForCausalLM, BertModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    from transformer.formats.packages import MINILM, SMOLLM2, find_package_file

    out = {}
    if "smollm2-135m" in which:
        path = find_package_file(*SMOLLM2)
        t0 = time.perf_counter()
        hf = AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
        ).eval()
        print(f"HF AutoModelForCausalLM.from_pretrained(gguf_file=…): {time.perf_counter() - t0:.1f} s", flush=True)
        out["smollm2-135m"] = (hf, lambda ids, hf=hf: hf(ids, output_attentions=True))
    if "minilm-l6" in which:
        folder = Path(tempfile.mkdtemp(prefix="minilm-"))
        zipfile.ZipFile(find_package_file(*MINILM)).extractall(folder)
        folder = next(p.parent for p in folder.rglob("config.json"))
        hf = BertModel.from_pretrained(folder, attn_implementation="eager").eval()
        out["minilm-l6"] = (hf, lambda ids, hf=hf: hf(ids, output_attentions=True))
    return out


def forward_variants(lm, text: str, ids, call) -> dict:
    """The timed calls, by column: HF's forward, ours without recording, (a) rec, (a2) rec without
    hook_result, (b) trace, (c) all."""
    import torch

    from transformer import run_trace
    from transformer.trace import Recorder

    def hf_forward():
        with torch.inference_mode():
            call(ids)

    def plain():
        with torch.inference_mode():
            lm.model(ids)

    def recorded():
        with torch.inference_mode():
            lm.model(ids, rec={})

    def recorded_without_result():
        with torch.inference_mode():
            lm.model(ids, rec=Recorder(lambda name: not name.endswith("hook_result")))

    def trace():
        return run_trace(lm.model, lm.tokenizer, text).run_blocks()

    def everything():
        tr = trace()
        for layer in range(lm.cfg.n_layer):
            tr[f"blocks.{layer}.attn.hook_q"]  # opens (recomputes) the layer

    return {
        "HF": hf_forward,
        "no rec": plain,
        "rec": recorded,
        "-res": recorded_without_result,
        "trace": trace,
        "all": everything,
    }


def bench_forward(models: list[str], n_tokens: int, rounds: int, profile: bool = False) -> None:
    import torch

    from transformer import run_trace
    from transformer.loading import load_model

    print(f"load average {loadavg()} before loading (2 cores)")
    refs = hf_models(models)
    print(
        f"\nforward at {n_tokens} tokens: medians of {rounds} rounds "
        "(every variant once per round, in turn) after 3 warm-up rounds"
    )
    print(
        f"{'model':14} {'threads':>7} {'HF ms':>8} {'no rec':>8} {'(a) rec':>8} {'(a2) −res':>9} "
        f"{'(b) trace':>10} {'(c) all':>9}   {'a/HF':>5} {'a2/HF':>5} {'b/HF':>5} {'c/HF':>5}   load avg"
    )
    for name in models:
        lm = load_model(name)
        text = cut_to_tokens(lm.tokenizer, passage(), n_tokens)
        enc = lm.tokenizer.encode(text)
        ids = torch.tensor([enc.ids])  # (1, T)
        hf, call = refs[name]
        with torch.inference_mode():  # the same numbers on both sides (their first layer's pattern)
            ours = torch.tensor(run_trace(lm.model, lm.tokenizer, text)["blocks.0.attn.hook_pattern"])
            diff = (ours - call(ids).attentions[0][0]).abs().max().item()
        variants = forward_variants(lm, text, ids, call)
        for threads in THREADS:
            torch.set_num_threads(threads)
            times: dict[str, list[float]] = {k: [] for k in variants}
            for r in range(rounds + 3):
                order = list(variants.items())
                order = order[r % len(order) :] + order[: r % len(order)]  # rotate who goes first
                for key, fn in order:
                    t0 = time.perf_counter()
                    fn()
                    if r >= 3:
                        times[key].append(time.perf_counter() - t0)
            med = {k: 1000 * statistics.median(v) for k, v in times.items()}
            print(
                (
                    f"{name:14} {threads:>7} {med['HF']:8.1f} {med['no rec']:8.1f} "
                    f"{med['rec']:8.1f} {med['-res']:9.1f} {med['trace']:10.1f} {med['all']:9.1f}   "
                    f"{med['rec'] / med['HF']:5.2f} {med['-res'] / med['HF']:5.2f} "
                    f"{med['trace'] / med['HF']:5.2f} {med['all'] / med['HF']:5.2f}   {loadavg()}"
                ),
                flush=True,
            )
        print(f"{'':14} ({len(enc)} tokens; layer 0's attention pattern equals HF's to {diff:.1e})")
        if profile:
            profile_variants(variants)
    torch.set_num_threads(1)
    print("target (issue): (a)/(b) ≤ 1.0 × HF at 64 tokens")


def profile_variants(variants: dict, calls: int = 10, top: int = 10) -> None:
    """torch.profiler over `calls` calls of each variant at 1 thread:
    the operators (by input shapes) with the most own CPU."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(1)
    for key, fn in variants.items():
        for _ in range(3):
            fn()
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for _ in range(calls):
                fn()
        ops = prof.key_averages(group_by_input_shape=True)
        total = sum(e.self_cpu_time_total for e in ops) / calls / 1000
        print(f"    profile of {key}, 1 thread: {total:.1f} ms own CPU per call (load average {loadavg()})")
        for e in sorted(ops, key=lambda e: -e.self_cpu_time_total)[:top]:
            print(
                f"      {e.self_cpu_time_total / calls / 1000:7.2f} ms "
                f"{e.count // calls:4d}× {e.key:20} {str(e.input_shapes)[:80]}"
            )


# --------------------------------------------------------------------------- load time, fresh processes

LOAD_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import torch
from transformer.loading import REAL_MODELS, _build, load_model
from transformer.formats.gguf_llama import read_gguf_llama
from transformer.formats.packages import find_package_file
from transformer.tokenizer import Tokenizer
out = {"import": time.perf_counter() - t0}
torch.set_num_threads(1)
if sys.argv[1] == "whole":
    t0 = time.perf_counter()
    load_model("smollm2-135m")
    out["load_model"] = time.perf_counter() - t0
else:
    # what the build costs once torch._dynamo is imported (nn.init on meta tensors imports it)
    if sys.argv[1] == "dynamo":
        t0 = time.perf_counter()
        import torch._dynamo
        out["import torch._dynamo"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    path = find_package_file(*REAL_MODELS["smollm2-135m"].package)
    files = read_gguf_llama(path)
    tokenizer = Tokenizer(files.tokenizer)
    t1 = time.perf_counter()
    model = _build({**files.config, "model_type": "llama"}, files.state)
    model.eval().requires_grad_(False)
    t2 = time.perf_counter()
    out["read_gguf_llama"], out["build" if sys.argv[1] == "split" else "build after it"] = t1 - t0, t2 - t1
print(json.dumps(out))
"""


def bench_load(processes: int) -> None:
    print(f"load average {loadavg()} before (2 cores)")
    print(
        f"SmolLM2 from the wheel to a ready model, {processes} fresh processes of each kind, "
        "alternating (OPENBLAS_NUM_THREADS=1, one torch thread)"
    )
    results: dict[str, list[float]] = {}
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    for _ in range(processes):
        for mode in ("whole", "split", "dynamo"):
            done = subprocess.run(
                [sys.executable, "-c", LOAD_CHILD, mode], cwd=ROOT, env=env, capture_output=True, text=True, check=True
            )
            for key, value in json.loads(done.stdout.strip().splitlines()[-1]).items():
                results.setdefault(key, []).append(value)
    for key in ("import", "load_model", "read_gguf_llama", "build", "import torch._dynamo", "build after it"):
        v = results[key]
        print(f"  {key:20} median {statistics.median(v):5.2f} s  (runs: {', '.join(f'{x:.2f}' for x in v)})")
    print(
        "  (import: torch and transformer.loading, paid before load_model; "
        "the last two rows: other fresh processes that"
    )
    print(
        "   import torch._dynamo before reading and building, "
        "which the build otherwise imports through nn.init on meta tensors)"
    )
    print(f"load average {loadavg()} after; target (issue): load_model ≤ 4 s")


# --------------------------------------------------------------------------- memory

MEMORY_CHILD = """
import json, logging, sys, threading, time
sys.path.insert(0, "bench")
logging.disable(logging.WARNING)  # streamlit's bare-mode warnings (no script run here)
from texts import cut_to_tokens, passage
from pathlib import Path

def rss():
    f = dict(l.split(":", 1) for l in Path("/proc/self/status").read_text().splitlines() if ":" in l)
    return int(f["VmRSS"].split()[0]) / 1024
steps = [("python + ui.models imported (torch, streamlit)", None)]
from ui.models import TRACES, TraceKey, get_model, get_trace
steps[0] = (steps[0][0], rss())
names = ["shakespeare-gpt", "smollm2-135m", "minilm-l6"]
for name in names:
    get_model(name)
    steps.append((f"+ {name} loaded", rss()))
text, count = passage(), int(sys.argv[1])
models = {name: get_model(name) for name in names}
sizes = []
for i in range(count):
    name = names[i % 3]
    n = 16 + (i * 7) % 49  # 16 … 64 tokens
    sentence = cut_to_tokens(models[name].tokenizer, text, n, start=1000 * (i // 3))
    layer = (i * 5) % models[name].cfg.n_layer

    def run():
        tr = get_trace(TraceKey(name, sentence).but(temperature=1.0 + 0.05 * (i % 5)))
        tr[f"blocks.{layer}.attn.hook_q"]  # a page opens a layer's internals
        sizes.append(tr.nbytes)

    worker = threading.Thread(target=run)  # a new thread for each, as Streamlit runs each script run
    worker.start()
    worker.join()
label = f"+ {count} traces of 16-64 tokens requested (TRACES holds {len(TRACES)}, {TRACES.nbytes / 2**20:.0f} MiB)"
steps.append((label, rss()))
import gc
gc.collect()
steps.append(("after gc.collect()", rss()))
f = dict(l.split(":", 1) for l in Path("/proc/self/status").read_text().splitlines() if ":" in l)
print(json.dumps({"steps": steps, "peak": int(f["VmHWM"].split()[0]) / 1024, "trace_mib": [s / 2**20 for s in sizes]}))
"""


def bench_memory(traces: int, processes: int) -> None:
    print(f"load average {loadavg()} before (2 cores)")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    runs = []
    for _ in range(processes):
        done = subprocess.run(
            [sys.executable, "-c", MEMORY_CHILD, str(traces)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"RSS of a fresh process, MiB ({processes} fresh processes, one column each)")
    for k, (label, _) in enumerate(runs[0]["steps"]):
        cells = "  ".join(f"{r['steps'][k][1]:7.0f}" for r in runs)
        print(f"  {label:90} {cells}")
    cells = "  ".join(f"{r['peak']:7.0f}" for r in runs)
    print(f"  {'peak RSS (VmHWM)':90} {cells}")
    sizes = runs[0]["trace_mib"]
    print(
        f"  trace sizes (Trace.nbytes): {min(sizes):.1f}–{max(sizes):.1f} MiB, "
        f"median {statistics.median(sizes):.1f} MiB"
    )
    print(
        f"load average {loadavg()} after; target (issue): "
        "≤ 1.5 GiB = 1536 MiB with the three models and a warm trace cache"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--forward", action="store_true", help="our forward and traces against Hugging Face's eager forward"
    )
    ap.add_argument("--load", action="store_true", help="SmolLM2 load time in fresh processes")
    ap.add_argument("--memory", action="store_true", help="RSS with the three models and a warm trace cache")
    ap.add_argument(
        "--profile", action="store_true", help="with --forward: torch.profiler's top operators of each variant"
    )
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "minilm-l6"], choices=["smollm2-135m", "minilm-l6"])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=25, help="timed rounds per thread count (after 3 warm-up rounds)")
    ap.add_argument("--processes", type=int, default=5, help="fresh processes per kind for --load")
    ap.add_argument("--memory-processes", type=int, default=3, help="fresh processes for --memory")
    ap.add_argument("--traces", type=int, default=40)
    a = ap.parse_args()
    everything = not (a.forward or a.load or a.memory)
    os.environ.setdefault("TQDM_DISABLE", "1")  # transformers' GGUF loader draws a progress bar
    if a.forward or everything:
        bench_forward(a.models, a.tokens, a.rounds, a.profile)
    if a.load or everything:
        print()
        bench_load(a.processes)
    if a.memory or everything:
        print()
        bench_memory(a.traces, a.memory_processes)


if __name__ == "__main__":
    main()
