"""Train the English → French translator on the synthetic phrase task, and measure it.

    python -m transformer train-translator --out assets/models/translator-en-fr     # train, write the model directory
    python -m transformer train-translator --eval assets/models/translator-en-fr    # held-out exact-match accuracy

Held out: test phrases are drawn with another seed (data seed + 1) and only from the one phrase in
ten that `data.phrases.held_out` sets aside, which training never sees. Exact match = the greedy
translation equals the reference token for token. Alignment agreement = the share of target words for which a
cross-attention head gives the most weight to a source word the gold alignment links them to (also shown on the
Cross-attention page).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .cards import config_table, parameter_count
from .data import phrases as td
from .decoding import greedy_decode
from .families.seq2seq import Seq2Seq, Seq2SeqConfig
from .loading import get_translator, save_model
from .train import learning_rate
from .vocabulary import BOS, EOS, PAD, Vocab


@dataclass(frozen=True)
class TranslatorTrainConfig:
    steps: int = 6000  # optimizer steps
    batch_size: int = 128  # phrase pairs per step
    lr: float = 1e-3  # peak learning rate (linear warm-up, cosine decay to lr/10)
    warmup: int = 300
    weight_decay: float = 0.01  # on matrices only
    n_train: int = 300_000  # training pairs (drawn once, then sampled with replacement)
    n_test: int = 2_000  # held-out pairs for the final accuracy
    eval_every: int = 500  # steps between held-out checks (on 300 pairs)
    seed: int = 0  # data seed; the model's initialisation uses seed + 2
    threads: int = 1  # torch CPU threads


def build_vocab() -> Vocab:
    return Vocab.build(td.english_words(), td.french_words())


def tensors(pairs: list[td.Pair], vocab: Vocab) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Padded ids: source (N, S), decoder input [BOS] y (N, T), decoder target y [EOS] (N, T)."""
    S = max(len(p.source) for p in pairs)
    T = max(len(p.target) for p in pairs) + 1
    src = torch.full((len(pairs), S), PAD)
    tgt_in = torch.full((len(pairs), T), PAD)
    tgt_out = torch.full((len(pairs), T), PAD)
    for i, p in enumerate(pairs):
        s, t = vocab.encode(p.source), vocab.encode(p.target)
        src[i, : len(s)] = torch.tensor(s)
        tgt_in[i, : len(t) + 1] = torch.tensor([BOS, *t])
        tgt_out[i, : len(t) + 1] = torch.tensor([*t, EOS])
    return src, tgt_in, tgt_out


def exact_match(
    model: Seq2Seq, vocab: Vocab, pairs: list[td.Pair], batch_size: int = 250
) -> tuple[float, list[tuple[td.Pair, tuple[str, ...]]]]:
    """Fraction of pairs whose greedy translation equals the reference; and the misses (pair, output)."""
    model.eval()
    misses = []
    for i in range(0, len(pairs), batch_size):
        chunk = pairs[i : i + batch_size]
        src, _, _ = tensors(chunk, vocab)
        ids, _ = greedy_decode(model, src, max(len(p.target) for p in chunk) + 2)
        for p, row in zip(chunk, ids.tolist(), strict=True):
            out = tuple(vocab.decode(row[: row.index(EOS)] if EOS in row else row))
            if out != p.target:
                misses.append((p, out))
    return 1 - len(misses) / len(pairs), misses


def alignment_agreement(pattern: np.ndarray, gold, n_rows: int) -> np.ndarray:
    """Per head: the fraction of target words whose most-attended source word is a gold-aligned one.

    pattern: (nh, T, S) cross-attention weights (row j writes target word j); gold: (source, target)
    index pairs; only the first n_rows rows (the target words, not [EOS]) with a gold link count.
    Returns (nh,) values in [0, 1] (NaN when no row has a gold link).
    """
    links: dict[int, set[int]] = {}
    for s, t in gold:
        if t < n_rows:
            links.setdefault(t, set()).add(s)
    if not links:
        return np.full(pattern.shape[0], np.nan, dtype=np.float32)
    rows = sorted(links)
    best = pattern[:, rows, :].argmax(-1)  # (nh, n_linked)
    hits = np.array([[b in links[r] for b, r in zip(head, rows, strict=True)] for head in best])  # (nh, n_linked)
    return hits.mean(axis=1).astype(np.float32)


@torch.inference_mode()
def head_agreement(model: Seq2Seq, vocab: Vocab, pairs: list[td.Pair]) -> np.ndarray:
    """Mean alignment agreement of every cross-attention head with the gold alignment,
    (n_layer, nh), reading the reference."""
    model.eval()
    total = np.zeros((model.cfg.n_layer, model.cfg.n_head))
    for p in pairs:
        rec: dict[str, torch.Tensor] = {}
        model(torch.tensor([vocab.encode(p.source)]), torch.tensor([[BOS, *vocab.encode(p.target)]]), rec=rec)
        for layer in range(model.cfg.n_layer):
            pattern = rec[f"decoder.blocks.{layer}.cross_attn.hook_pattern"][0].numpy()  # (nh, T, S)
            total[layer] += alignment_agreement(pattern, p.alignment, len(p.target))
    return total / len(pairs)


def train(out: Path, cfg: Seq2SeqConfig, tc: TranslatorTrainConfig, command: str = "") -> dict:
    """Train on train_pairs, evaluate on test_pairs, write the model directory with its
    card. Returns the card's numbers."""
    t_start = time.time()
    torch.set_num_threads(tc.threads)
    torch.manual_seed(tc.seed + 2)
    vocab = build_vocab()
    cfg = Seq2SeqConfig(**{**asdict(cfg), "vocab_size": len(vocab), "n_source": vocab.n_source})
    train_set = td.train_pairs(tc.n_train, tc.seed)
    test_set = td.test_pairs(tc.n_test, tc.seed)
    src, tgt_in, tgt_out = tensors(train_set, vocab)
    model = Seq2Seq(cfg)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": tc.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=tc.lr,
        betas=(0.9, 0.98),
    )
    gen = torch.Generator().manual_seed(tc.seed)
    history = []
    t0 = time.time()
    for step in range(1, tc.steps + 1):
        for g in opt.param_groups:
            g["lr"] = learning_rate(step, tc.steps, tc.warmup, tc.lr)
        model.train()
        idx = torch.randint(0, len(train_set), (tc.batch_size,), generator=gen)
        s, ti, to = src[idx], tgt_in[idx], tgt_out[idx]
        S, T = int((s != PAD).sum(1).max()), int((to != PAD).sum(1).max())  # trim the padding columns
        logits = model(s[:, :S], ti[:, :T])  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), to[:, :T].flatten(), ignore_index=PAD)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % tc.eval_every == 0 or step == tc.steps:
            acc, _ = exact_match(model, vocab, test_set[:300])
            history.append(
                {
                    "step": step,
                    "loss": round(loss.item(), 4),
                    "exact_match": round(acc, 4),
                    "minutes": round((time.time() - t0) / 60, 1),
                }
            )
            sys.stderr.write(
                f"step {step}: loss {loss.item():.4f}, "
                f"held-out exact match {acc:.1%} (300 pairs), {time.time() - t0:.0f} s\n"
            )
    train_minutes = (time.time() - t_start) / 60
    model.eval()
    acc, misses = exact_match(model, vocab, test_set)
    agreement = head_agreement(model, vocab, test_set[:300])
    numbers = {
        "exact_match": acc,
        "misses": [(" ".join(p.source), p.french_text, td.french_text(o)) for p, o in misses[:10]],
        "params": parameter_count(model),
        "minutes": train_minutes,
        "history": history,
        "agreement": agreement.round(3).tolist(),
    }
    meta = {
        "data_seed": tc.seed,
        "n_train": tc.n_train,
        "n_test": tc.n_test,
        "exact_match": round(acc, 4),
        "command": command,
    }
    save_model(out, model, vocab, model_card(out.name, cfg, tc, numbers, vocab, command), meta)
    return numbers


def accuracy_text(acc: float, n: int) -> str:
    return f"{acc:.2%} ({round(acc * n):,} of {n:,} pairs)"


def evaluate_dir(path: Path, n: int | None = None) -> tuple[float, int]:
    """Held-out exact match of a saved translator, on the first n held-out pairs of its data
    seed (default: as many as its card)."""
    lt = get_translator(path)
    n = n or lt.meta.get("n_test", 2000)
    acc, _ = exact_match(lt.model, lt.tokenizer, td.test_pairs(n, lt.meta.get("data_seed", 0)))
    return acc, n


def model_card(name: str, cfg: Seq2SeqConfig, tc: TranslatorTrainConfig, n: dict, vocab: Vocab, command: str) -> str:
    rows = "\n".join(
        f"| {h['step']} | {h['loss']:.4f} | {h['exact_match']:.1%} | {h['minutes']} |" for h in n["history"]
    )
    heads = "\n".join(
        f"| {layer} | " + " | ".join(f"{a:.0%}" for a in row) + " |" for layer, row in enumerate(n["agreement"])
    )
    misses = "\n".join(f"| {s} | {ref} | {out} |" for s, ref, out in n["misses"]) or "| (none) | | |"
    return f"""# {name}

A small encoder–decoder transformer that translates short English phrases into French, trained
by Attention Atlas so that the Cross-attention page can show real cross-attention weights.
It is not a general translator: it knows only the words and the grammar of the task below.

## Data
Synthetic, generated by `transformer/data/phrases.py` from the bilingual lexicon in
`transformer/data/lexicon.py` (written for this project): noun phrases with determiners, numbers and
up to two adjectives (French agreement in gender and number, elision, bel/nouvel/vieil),
institutional phrases whose word order flips ("the european economic area" → "la zone
économique européenne"), and short sentences with a verb and/or a prepositional phrase.
{tc.n_train:,} training pairs drawn with seed {tc.seed}. Held out: {tc.n_test:,} distinct pairs drawn
with seed {tc.seed + 1} from the one English phrase in ten (by CRC-32) that training never contains.
Word-level vocabulary of {len(vocab):,} words (4 specials, {vocab.n_source} English, the rest French),
saved as `tokenizer.json` (Hugging Face `tokenizers` WordLevel).

## Size
{n['params']:,} parameters (float32): {cfg.n_layer} encoder and {cfg.n_layer} decoder blocks, {cfg.n_head} heads,
shared (tied) word embedding.

{config_table(cfg)}

## Training
    {command}

{tc.steps} steps of {tc.batch_size} pairs, AdamW (peak lr {tc.lr}, weight decay {tc.weight_decay}), {tc.threads} CPU
thread(s): {n['minutes']:.1f} minutes on a 2-core CPU (data generation included).

| step | loss | held-out exact match (300 pairs) | minutes |
|---|---|---|---|
{rows}

## Result
Held-out exact-match accuracy (greedy decoding): **{accuracy_text(n['exact_match'], tc.n_test)}**.
Reproduce it with

    python -m transformer train-translator --eval assets/models/{name}

Some misses:

| English | reference | model |
|---|---|---|
{misses}

## Cross-attention and the gold alignment
Alignment agreement of each cross-attention head: the fraction of target words whose most-attended
source word is the gold-aligned one, averaged over 300 held-out pairs (the decoder reads the reference).

| layer | {' | '.join(f'head {h}' for h in range(cfg.n_head))} |
|---|{'---|' * cfg.n_head}
{heads}

## Limits
Only the lexicon's words and the task's grammar; the semantics are random ("a delicious doctor").
"""


TRAIN_FLAGS = ("steps", "batch_size", "lr", "n_train", "n_test", "eval_every", "seed", "threads")
MODEL_FLAGS = ("d_model", "n_layer", "n_head", "d_mlp")


def add_field_flags(p: argparse.ArgumentParser, defaults: object, names: tuple[str, ...]) -> None:
    """One option per config field: `n_train` → --n-train, typed and defaulted from the dataclass."""
    for name in names:
        value = getattr(defaults, name)
        p.add_argument("--" + name.replace("_", "-"), type=type(value), default=value, help=f"default {value}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m transformer train-translator",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", type=Path, help="model directory to write")
    p.add_argument("--eval", type=Path, metavar="DIR", help="measure a saved translator on its held-out pairs")
    p.add_argument("--n", type=int, default=0, help="with --eval: held-out pairs to use (default: as in its card)")
    add_field_flags(p, TranslatorTrainConfig(), TRAIN_FLAGS)
    add_field_flags(p, Seq2SeqConfig(), MODEL_FLAGS)
    p.add_argument("--dropout", type=float, default=0.0)
    a = p.parse_args(argv)
    if a.eval:
        acc, n = evaluate_dir(a.eval, a.n or None)
        print(f"held-out exact match {accuracy_text(acc, n)}")
        return 0
    if not a.out:
        p.error("give --out DIR to train, or --eval DIR to measure")
    cfg = Seq2SeqConfig(**{k: getattr(a, k) for k in MODEL_FLAGS}, dropout=a.dropout)
    tc = TranslatorTrainConfig(**{k: getattr(a, k) for k in TRAIN_FLAGS})
    command = "python -m transformer train-translator " + " ".join(
        shlex.quote(x) for x in (sys.argv[1:] if argv is None else argv)
    )
    n = train(a.out, cfg, tc, command)
    print(
        f"held-out exact match {accuracy_text(n['exact_match'], tc.n_test)}  "
        f"params {n['params']:,}  {n['minutes']:.1f} min → {a.out}"
    )
    return 0
