"""Command line: `python -m transformer train | train-translator | train-induction | train-mask | trace | read-trace
| eval | heads`
(`python -m transformer <command> --help` lists its options)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch

from . import head_scores, train_induction, train_mask, train_translator
from .attention import Interventions
from .config import ModelConfig
from .errors import InputError
from .loading import load_model
from .tokenizer import Tokenizer
from .trace import run_trace
from .trace_file import load_trace, save_trace
from .train import TrainConfig, bigram_baseline, evaluate, progress, split_corpus, train, windows


def cmd_train(a: argparse.Namespace) -> None:
    cfg = ModelConfig(
        vocab_size=a.vocab_size, n_ctx=a.n_ctx, d_model=a.d_model, n_layer=a.n_layer, n_head=a.n_head,
        d_mlp=a.d_mlp or 4 * a.d_model, pos_encoding=a.pos_encoding, dropout=a.dropout, tie_embeddings=not a.untied,
    )
    tc = TrainConfig(
        steps=a.steps, batch_size=a.batch_size, lr=a.lr, eval_every=a.eval_every, max_chars=a.max_chars, seed=a.seed,
        threads=a.threads,
    )
    if a.short:  # a quick smoke run for tests
        cfg = ModelConfig(vocab_size=300, n_ctx=32, d_model=32, n_layer=2, n_head=4, d_mlp=64)
        tc = TrainConfig(
            steps=30,
            batch_size=8,
            lr=3e-3,
            warmup=5,
            eval_every=10,
            eval_batches=2,
            max_chars=60_000,
            seed=a.seed,
            threads=1,
        )
    command = "python -m transformer " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    n = train(Path(a.corpus), Path(a.out), cfg, tc, command)
    print(
        f"val loss {n['val_loss']:.4f}  bigram {n['bigram_val_loss']:.4f}  "
        f"params {n['params']:,}  {n['minutes']:.1f} min → {a.out}"
    )


def layer_head(spec: str) -> tuple[int, int]:
    """'L.H' → (layer, head), for --ablate."""
    layer, dot, head = spec.partition(".")
    if not (dot and layer.isdigit() and head.isdigit()):
        raise argparse.ArgumentTypeError(f"{spec!r} is not L.H (layer.head, e.g. 0.1)")
    return int(layer), int(head)


def cmd_trace(a: argparse.Namespace) -> None:
    lm = load_model(a.model)
    if not isinstance(lm.tokenizer, Tokenizer):
        raise InputError(f"{a.model} is a translator: its traces come from the Encoder–decoder page, not from `trace`.")
    if a.text_pair is not None and lm.cfg.family != "bert":
        raise InputError("--text-pair needs an encoder (BERT): a decoder reads one text.")
    for layer, head in a.ablate:
        if layer >= lm.cfg.n_layer or head >= lm.cfg.n_head:
            top = f"layers 0–{lm.cfg.n_layer - 1} and heads 0–{lm.cfg.n_head - 1}"
            raise InputError(f"--ablate {layer}.{head}: this model has {top}.")
    iv = Interventions(temperature=a.temperature, causal=not a.no_mask, ablate=frozenset(a.ablate))
    tr = run_trace(lm.model, lm.tokenizer, a.text, iv, pair=a.text_pair)
    save_trace(a.out, tr, a.model)
    cut = f" (cut from {tr.n_tokens_in})" if tr.truncated else ""
    print(f"{len(tr.encoding)} tokens{cut}, {len(tr.names)} tensors → {a.out}")


def cmd_read_trace(a: argparse.Namespace) -> None:
    """What a trace file holds: its model, interventions and tokens, then each array's name and shape."""
    f = load_trace(a.file)
    iv = f.interventions
    print(f"model {f.model}; τ {iv.temperature:g}; causal mask {'on' if iv.causal else 'off'}", end="")
    print(f"; ablated {' '.join(f'{lay}.{h}' for lay, h in sorted(iv.ablate)) or 'none'}")
    print(f"{len(f.encoding)} tokens: {' '.join(f.encoding.labels)}")
    for name in f.names:
        print(f"  {name:40} {f[name].dtype} {f[name].shape}")


def cmd_eval(a: argparse.Namespace) -> None:
    """Recompute a model card's validation and bigram losses on the same split."""
    lm = load_model(a.model)
    torch.set_num_threads(a.threads)
    train_text, val_text = split_corpus(Path(a.corpus).read_text(encoding="utf-8"), 0.1)
    tok = lm.tokenizer
    train_ids, val_ids = np.array(tok.encode(train_text).ids), torch.tensor(tok.encode(val_text).ids)
    val_x, val_y = windows(val_ids, lm.cfg.n_ctx)
    bigram, k = bigram_baseline(train_ids, val_ids[: val_y.numel() + 1].numpy(), tok.vocab_size)
    val = evaluate(lm.model, val_x, val_y)
    print(f"val loss {val:.4f}  bigram (add-{k:g}) {bigram:.4f}  difference {bigram - val:.4f}")


def cmd_heads(a: argparse.Namespace) -> None:
    """Every head's scores on the repeated-random-token probe, with labels, as JSON."""
    lm = load_model(a.model)
    if not isinstance(lm.tokenizer, Tokenizer):
        raise InputError(f"{a.model} is a translator: `heads` reads a decoder or an encoder.")
    torch.set_num_threads(a.threads)
    half = min(a.half, lm.cfg.n_ctx // 2)
    scores = head_scores.probe_scores(lm.model, lm.tokenizer, half, a.batch, a.seed)
    probe = {
        "what": "random tokens (no special tokens, no repeats), then the same tokens again",
        "tokens_per_copy": half,
        "sequences": a.batch,
        "seed": a.seed,
    }
    report = head_scores.scores_report(scores, lm.name, probe)
    Path(a.out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    for label, found in report["labelled"].items():
        top = ", ".join(f"{h['layer']}.{h['head']} ({h['score']:.2f})" for h in found[:8])
        print(f"{label} heads: {len(found)}{': ' + top if top else ''}{' …' if len(found) > 8 else ''}")
    print(f"{lm.cfg.n_layer} layers × {lm.cfg.n_head} heads → {a.out}")


def cmd_train_induction(a: argparse.Namespace) -> None:
    """Train the attention-only model on repeated runs and write its replay (snapshots of training)."""
    ic = train_induction.InductionConfig(steps=a.steps, lr=a.lr, seed=a.seed, threads=a.threads)
    t0 = time.time()

    def step_done(step: int, loss: float) -> None:
        if step % 10 == 0 or step == ic.steps:
            progress(step, ic.steps, f"loss {loss:.3f}", t0)

    replay, model = train_induction.train_induction(ic, on_step=step_done)
    replay.command = (
        f"python -m transformer train-induction --out {shlex.quote(a.out)} "
        f"--steps {a.steps} --lr {a.lr:g} --seed {a.seed} --threads {a.threads}"
    )
    train_induction.save_replay(a.out, replay, model)
    formed = train_induction.induction_step(replay)
    when = (
        "no induction head (layer 1, score ≥ 0.5)"
        if formed is None
        else f"induction head at step {formed.step} ({formed.seconds:.1f} s)"
    )
    print(
        f"\n{len(replay.snapshots)} snapshots, "
        f"loss {replay.snapshots[0].loss:.3f} → {replay.snapshots[-1].loss:.3f}, {when} → {a.out}"
    )


def cmd_train_mask(a: argparse.Namespace) -> None:
    """Train the attention-only model twice, with and without the causal mask, and write the replay of both."""
    ic = train_induction.InductionConfig(steps=a.steps, lr=a.lr, seed=a.seed, threads=a.threads)
    t0 = time.time()

    def point(kind: str, value) -> None:
        if kind == "point" and value.step:
            losses = ", ".join(f"{run} {loss:.3f}" for run, loss in value.train.items())
            progress(value.step, ic.steps, losses, t0)

    replay = train_mask.train_pair(ic, on_report=point)
    replay.command = (
        f"python -m transformer train-mask --out {shlex.quote(a.out)} "
        f"--steps {a.steps} --lr {a.lr:g} --seed {a.seed} --threads {a.threads}"
    )
    train_mask.save_mask_replay(a.out, replay)
    real = ", ".join(f"{run} {r.loss_real:.3f}" for run, r in replay.results.items())
    print(f"\n{time.time() - t0:.0f} s; loss on the real task (the mask on): {real} → {a.out}")


def training_options(p: argparse.ArgumentParser) -> None:
    """The options of the attention-only model's trainings (their defaults: the bundled replays')."""
    for name, kind in (("steps", int), ("lr", float), ("seed", int), ("threads", int)):
        p.add_argument(f"--{name}", type=kind, default=getattr(train_induction.InductionConfig, name))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["train-translator"]:  # the translator's own options: python -m transformer train-translator --help
        return train_translator.main(argv[1:])
    p = argparse.ArgumentParser(prog="python -m transformer", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("train-translator", help="train or measure the English → French translator (see its --help)")
    t = sub.add_parser("train", help="train a tokenizer and a model on a text file")
    t.add_argument("--corpus", required=True, help="plain-text training file")
    t.add_argument("--out", required=True, help="model directory to write")
    t.add_argument("--steps", type=int, default=3000)
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--eval-every", type=int, default=250)
    t.add_argument("--vocab-size", type=int, default=1024)
    t.add_argument("--n-ctx", type=int, default=256)
    t.add_argument("--d-model", type=int, default=128)
    t.add_argument("--n-layer", type=int, default=4)
    t.add_argument("--n-head", type=int, default=4)
    t.add_argument("--d-mlp", type=int, default=0, help="default 4·d_model")
    t.add_argument("--pos-encoding", choices=["sinusoidal", "learned"], default="sinusoidal")
    t.add_argument("--dropout", type=float, default=0.0)
    t.add_argument(
        "--untied", action="store_true", help="give the unembedding W_U its own weights (default: W_U = W_Eᵀ)"
    )
    t.add_argument("--max-chars", type=int, default=0, help="use only the corpus' first N characters")
    t.add_argument("--seed", type=int, default=1337)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--short", action="store_true", help="a 30-step smoke run on a tiny model (for tests)")
    t.set_defaults(fn=cmd_train)
    r = sub.add_parser("trace", help="write every traced tensor of one text to an .npz file")
    r.add_argument(
        "--model",
        required=True,
        help="a model name (smollm2-135m, minilm-l6, a bundled one), a model directory or a .gguf file",
    )
    r.add_argument("--text", required=True)
    r.add_argument("--text-pair", help="a second sentence, for an encoder: [CLS] text [SEP] pair [SEP]")
    r.add_argument("--out", required=True, help="output .npz path")
    r.add_argument("--temperature", type=float, default=1.0, help="attention temperature τ")
    r.add_argument("--no-mask", action="store_true", help="switch the causal mask off")
    r.add_argument(
        "--ablate", nargs="*", type=layer_head, default=[], metavar="L.H", help="heads to ablate, e.g. 0.1 2.3"
    )
    r.set_defaults(fn=cmd_trace)
    rt = sub.add_parser("read-trace", help="list what a trace file (.npz from `trace` or the app) holds")
    rt.add_argument("file", help="a trace file (docs/trace_format.md)")
    rt.set_defaults(fn=cmd_read_trace)
    e = sub.add_parser("eval", help="recompute a model card's validation and bigram losses")
    e.add_argument("--model", required=True)
    e.add_argument("--corpus", required=True)
    e.add_argument("--threads", type=int, default=2)
    e.set_defaults(fn=cmd_eval)
    ti = sub.add_parser(
        "train-induction", help="train the tiny attention-only model on repeated runs; write its replay"
    )
    ti.add_argument(
        "--out", required=True, help="replay directory to write (the bundled one: assets/replays/induction)"
    )
    training_options(ti)
    ti.set_defaults(fn=cmd_train_induction)
    tm = sub.add_parser("train-mask", help="train the same model with and without the causal mask; write both curves")
    tm.add_argument("--out", required=True, help="replay directory to write (the bundled one: assets/replays/mask)")
    training_options(tm)
    tm.set_defaults(fn=cmd_train_mask)
    h = sub.add_parser("heads", help="score every head (previous-token, induction, …) and label it; writes JSON")
    h.add_argument("--model", required=True, help="a model name, a model directory or a .gguf file")
    h.add_argument("--out", required=True, help="output .json path")
    h.add_argument("--half", type=int, default=head_scores.PROBE_HALF, help="random tokens in each copy of the probe")
    h.add_argument("--batch", type=int, default=head_scores.PROBE_BATCH, help="probe sequences averaged")
    h.add_argument("--seed", type=int, default=head_scores.PROBE_SEED)
    h.add_argument("--threads", type=int, default=2)
    h.set_defaults(fn=cmd_heads)
    a = p.parse_args(argv)
    try:
        a.fn(a)
    except (ValueError, OSError) as err:  # every AtlasError (a ValueError), and Interventions' check of τ
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
