"""Train a tokenizer and a GPT on a plain-text corpus, then write a model directory with its card."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .cards import config_table, parameter_count
from .config import ModelConfig
from .families.gpt import GPT
from .loading import save_model
from .tokenizer import Tokenizer


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 3000  # optimizer steps
    batch_size: int = 16  # windows per step
    lr: float = 2e-3  # peak learning rate (linear warm-up, cosine decay to lr/10)
    warmup: int = 100  # warm-up steps
    weight_decay: float = 0.1  # on matrices only
    eval_every: int = 250  # steps between validation losses
    eval_batches: int = 20  # batches per periodic validation estimate
    val_fraction: float = 0.1  # the last 10% of the corpus is held out
    max_chars: int = 0  # use only the first max_chars characters (0 = all), for quick runs
    seed: int = 1337
    threads: int = 2  # torch CPU threads


def learning_rate(step: int, steps: int, warmup: int, peak: float) -> float:
    """Linear warm-up to `peak`, then cosine decay to peak / 10 at the last step."""
    if step <= warmup:
        return peak * step / warmup
    frac = min(1.0, (step - warmup) / max(1, steps - warmup))
    return peak * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))


def split_corpus(text: str, val_fraction: float) -> tuple[str, str]:
    """First (1 − f) of the characters for training, the rest for validation."""
    cut = int(len(text) * (1 - val_fraction))
    return text[:cut], text[cut:]


def bigram_baseline(train_ids: np.ndarray, val_ids: np.ndarray, vocab_size: int) -> tuple[float, float]:
    """Validation loss (nats/token) of an add-k bigram model counted on the training ids.

    Returns (loss, k) for the best k in {1, 0.1, 0.01, 0.001} — the baseline gets its best
    smoothing, which makes the comparison harder for the transformer, not easier.
    """
    counts = np.zeros((vocab_size, vocab_size), dtype=np.float64)
    np.add.at(counts, (train_ids[:-1], train_ids[1:]), 1.0)
    best = (math.inf, 0.0)
    for k in (1.0, 0.1, 0.01, 0.001):
        p = (counts[val_ids[:-1], val_ids[1:]] + k) / (counts[val_ids[:-1]].sum(1) + k * vocab_size)
        best = min(best, (float(-np.log(p).mean()), k))
    return best


def windows(ids: torch.Tensor, n_ctx: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-overlapping (input, target) windows covering `ids` (the tail that fits no window is dropped)."""
    n = (len(ids) - 1) // n_ctx
    x = ids[: n * n_ctx].view(n, n_ctx)  # (n, n_ctx)
    y = ids[1 : n * n_ctx + 1].view(n, n_ctx)  # (n, n_ctx)
    return x, y


@torch.no_grad()
def evaluate(model: GPT, x: torch.Tensor, y: torch.Tensor, batch_size: int = 16) -> float:
    """Mean cross-entropy (nats/token) over all windows."""
    model.eval()
    total = 0.0
    for i in range(0, len(x), batch_size):
        logits = model(x[i : i + batch_size])  # (B, T, V)
        total += F.cross_entropy(logits.flatten(0, 1), y[i : i + batch_size].flatten(), reduction="sum").item()
    model.train()
    return total / y.numel()


def progress(step: int, steps: int, msg: str, t0: float) -> None:
    done = int(30 * step / steps)
    eta = (time.time() - t0) / max(step, 1) * (steps - step)
    sys.stderr.write(f"\r[{'#' * done}{'.' * (30 - done)}] {step}/{steps} {msg} eta {eta:4.0f}s ")
    sys.stderr.flush()


def train(corpus: Path, out: Path, model_cfg: ModelConfig, tc: TrainConfig, command: str = "") -> dict:
    """Train tokenizer + model on `corpus`; write the model directory to `out`. Returns the card's numbers."""
    torch.manual_seed(tc.seed)
    torch.set_num_threads(tc.threads)
    text = Path(corpus).read_text(encoding="utf-8")
    if tc.max_chars:
        text = text[: tc.max_chars]
    train_text, val_text = split_corpus(text, tc.val_fraction)
    t_start = time.time()
    tok = Tokenizer.train([train_text], model_cfg.vocab_size)
    model_cfg = replace(model_cfg, vocab_size=tok.vocab_size)
    train_ids = torch.tensor(tok.encode(train_text).ids)
    val_ids = torch.tensor(tok.encode(val_text).ids)
    val_x, val_y = windows(val_ids, model_cfg.n_ctx)
    bigram, bigram_k = bigram_baseline(train_ids.numpy(), val_ids[: val_y.numel() + 1].numpy(), tok.vocab_size)

    model = GPT(model_cfg)
    # weight decay on weight matrices, not on biases, LayerNorm gains or the (tied) embedding
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and n != "W_E"]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2 or n == "W_E"]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": tc.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=tc.lr,
        betas=(0.9, 0.95),
    )
    gen = torch.Generator().manual_seed(tc.seed)
    T = model_cfg.n_ctx
    history = []
    t0 = time.time()
    for step in range(1, tc.steps + 1):
        for g in opt.param_groups:
            g["lr"] = learning_rate(step, tc.steps, tc.warmup, tc.lr)
        starts = torch.randint(0, len(train_ids) - T - 1, (tc.batch_size,), generator=gen)
        xb = torch.stack([train_ids[s : s + T] for s in starts])  # (B, T)
        yb = torch.stack([train_ids[s + 1 : s + T + 1] for s in starts])  # (B, T)
        loss = F.cross_entropy(model(xb).flatten(0, 1), yb.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % tc.eval_every == 0 or step == tc.steps:
            n = min(len(val_x), tc.eval_batches * tc.batch_size)
            val = evaluate(model, val_x[:n], val_y[:n], tc.batch_size)
            history.append({"step": step, "train_loss": round(loss.item(), 4), "val_loss": round(val, 4)})
            sys.stderr.write(f"\nstep {step}: train {loss.item():.4f}, val {val:.4f} (bigram {bigram:.4f})\n")
        if step % 10 == 0 or step == tc.steps:
            progress(step, tc.steps, f"loss {loss.item():.3f}", t0)
    sys.stderr.write("\n")
    model.eval()
    numbers = {
        "val_loss": evaluate(model, val_x, val_y, tc.batch_size),
        "bigram_val_loss": bigram,
        "bigram_k": bigram_k,
        "train_tokens": len(train_ids),
        "val_tokens": val_y.numel(),
        "params": parameter_count(model),
        "minutes": (time.time() - t_start) / 60,
        "history": history,
    }
    sample = generate_sample(model, tok, "ROMEO:", 60, tc.seed)
    card = model_card(out.name, corpus, model_cfg, tc, numbers, sample, command)
    save_model(out, model, tok, card)
    return numbers


def generate_sample(model: GPT, tok: Tokenizer, prompt: str, n: int, seed: int) -> str:
    """Sample n tokens at temperature 0.8 (for the card only; the app has its own generator)."""
    gen = torch.Generator().manual_seed(seed)
    ids = list(tok.encode(prompt).ids)
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([ids[-model.cfg.n_ctx :]]))[0, -1]  # (V,)
            ids.append(int(torch.multinomial(torch.softmax(logits / 0.8, -1), 1, generator=gen)))
    return tok.decode(ids)


def model_card(name: str, corpus: Path, cfg: ModelConfig, tc: TrainConfig, n: dict, sample: str, command: str) -> str:
    rows = "\n".join(f"| {h['step']} | {h['train_loss']:.3f} | {h['val_loss']:.3f} |" for h in n["history"])
    return f"""# {name}

A small decoder-only transformer trained by Attention Atlas for teaching: every attention
weight the app shows comes from this model's own forward pass.

## Data
`{Path(corpus).name}`: Shakespeare's plays as one plain-text file (public domain; the widely
used "tiny shakespeare" copy from the char-rnn project). The corpus is not part of this
repository: it is read by path. Split: the first {100 - 100 * tc.val_fraction:.0f}% of the characters
train, the last {100 * tc.val_fraction:.0f}% validate ({n['train_tokens']:,} / {n['val_tokens']:,} tokens).
The byte-level BPE tokenizer ({cfg.vocab_size} tokens) was trained on the training split only.

## Size
{n['params']:,} parameters (float32).

{config_table(cfg)}

## Training
    {command}

{tc.steps} steps of {tc.batch_size} × {cfg.n_ctx} tokens, AdamW (peak lr {tc.lr}, weight decay {tc.weight_decay} \
on matrices except W_E),
seed {tc.seed}, {tc.threads} CPU thread(s); {n['minutes']:.1f} minutes on a 2-core CPU (tokenizer included).

| step | train loss | val loss (subset) |
|---|---|---|
{rows}

## Results (validation split, nats/token)
| model | loss |
|---|---|
| this transformer | **{n['val_loss']:.4f}** |
| bigram baseline (add-{n['bigram_k']:g} smoothing, same tokens) | {n['bigram_val_loss']:.4f} |
| difference | {n['bigram_val_loss'] - n['val_loss']:.4f} |

## Sample (prompt "ROMEO:", temperature 0.8, seed {tc.seed})
```
{sample}
```

## Limits
A tiny model trained for minutes on one small corpus: it writes Shakespeare-flavoured
text, knows little modern English, and its embedding space holds only rough relations.
"""
