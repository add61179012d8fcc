"""What the engine's shortcuts (transformer/shortcuts.py) save on SmolLM2 at 64 tokens, one torch thread.

    .venv/bin/python bench/bench_shortcuts.py [--rounds 15] [--tokens 64] [--model smollm2-135m]

Each row times one way of getting what a page reads, from a text of N tokens (the start of the Shakespeare corpus):
    ablation   a head of layer 25 switched off, read at layer 29: a fresh trace (30 blocks) against one derived from
               the trace without ablation that a page already ran (derive: blocks 25–29)
    typing     the text and one more word, read at layer 29 (and at layer 13, as One head opened there): a fresh trace
               against trace_from with the text's trace at hand (extend: the new tokens alone through the blocks the
               shorter trace ran, then the rest on every token)
    τ          one head of layer 13 at τ = 0.5: softmax of its recorded scores (tempered_pattern), against block 13 run
               again with τ on that head (what the Softmax page did), and a forward pass to layer 13 with that τ
Rounds run every variant once, in turn, after 2 warm-up rounds; the table gives medians in ms.
Prints a table; asserts nothing (the machine is shared: numbers move with its load).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
from texts import cut_to_tokens, passage  # noqa: E402

from transformer import NO_INTERVENTIONS, Interventions, run_trace  # noqa: E402
from transformer.loading import load_model  # noqa: E402
from transformer.shortcuts import derive, tempered_pattern, trace_from  # noqa: E402
from transformer.trace import open_layer  # noqa: E402


def variants(model, tok, text: str) -> list[tuple[str, str, callable]]:
    """(group, name, call) for every way timed; the traces a page would already hold are made here, untimed."""
    last, L, head = model.cfg.n_layer - 1, 13, 8
    ablate = Interventions(ablate=frozenset({(25, 3)}))
    tempered = Interventions(head_temperature=((L, head, 0.5),))
    longer = text + " and"
    base = run_trace(model, tok, text).run_blocks()  # a page read the last layer
    at_13 = run_trace(model, tok, text)
    at_13[f"blocks.{L}.attn.hook_scores_raw"]  # One head or Softmax opened layer 13
    resid_13 = at_13[f"blocks.{L}.hook_resid_pre"]

    def read(make, layer: int):
        """A call that makes a trace and reads layer's pattern (running the blocks up to it)."""
        return lambda: make()[f"blocks.{layer}.attn.hook_pattern"]

    def extended(shorter):
        return lambda: trace_from(model, tok, longer, NO_INTERVENTIONS, [shorter])

    return [
        ("ablation @25, read @29", "fresh trace", read(lambda: run_trace(model, tok, text, ablate), last)),
        ("ablation @25, read @29", "derived", read(lambda: derive(base, ablate), last)),
        ("typing one word, read @29", "fresh trace", read(lambda: run_trace(model, tok, longer), last)),
        ("typing one word, read @29", "extended", read(extended(base), last)),
        ("typing one word, read @13", "fresh trace", read(lambda: run_trace(model, tok, longer), L)),
        ("typing one word, read @13", "extended", read(extended(at_13), L)),
        ("τ on head 13.8", "tempered_pattern", lambda: tempered_pattern(at_13, L, head, 0.5)),
        ("τ on head 13.8", "block 13 again", lambda: open_layer(model, resid_13, L, tempered)),
        ("τ on head 13.8", "forward to 13", read(lambda: run_trace(model, tok, text, tempered), L)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--model", default="smollm2-135m")
    args = parser.parse_args()
    torch.set_num_threads(1)
    lm = load_model(args.model)
    text = cut_to_tokens(lm.tokenizer, passage(), args.tokens)
    runs = variants(lm.model, lm.tokenizer, text)
    times: dict[tuple[str, str], list[float]] = {(group, name): [] for group, name, _ in runs}
    for round_ in range(args.rounds + 2):
        for group, name, call in runs:
            t0 = time.perf_counter()
            call()
            if round_ >= 2:  # warm-up rounds are not counted
                times[group, name].append(1000 * (time.perf_counter() - t0))
    print(f"{args.model}, {args.tokens} tokens, 1 torch thread, median of {args.rounds} rounds")
    print(f"{'what':28} {'how':18} {'ms':>8}")
    for (group, name), ms in times.items():
        print(f"{group:28} {name:18} {statistics.median(ms):8.2f}")


if __name__ == "__main__":
    main()
