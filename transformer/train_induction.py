"""Watch induction heads form: train a tiny attention-only transformer on sequences in which a random run of
tokens repeats, and keep snapshots of its heads along the way (a "replay").

The data: 33 random symbols (64 of them); somewhere in them a run of 4–16 symbols appears twice. Inside the
second copy every next symbol can be predicted, but only by a model that finds the earlier copy and reads what
came after it. A two-layer attention-only model learns this with two heads working together (Olsson et al., 2022,
"In-context learning and induction heads"): a previous-token head in layer 0 writes "the symbol before me was A"
into each position, and an induction head in layer 1 looks for the position whose previous symbol is the current
one, then copies the symbol found there. The loss stays near log 64 = 4.16 for a few hundred steps, then drops
in a short "phase change" while the layer-1 induction score jumps. Before that, layer 1 learns a shortcut: look
about 13–16 positions back, where the long runs (which fit only that way) put most second copies; the probe
repeats at distance 12 so that the shortcut does not count as induction.

Settings measured here (2 cores): rotary positions, because a relative position is what a previous-token head
needs (with sinusoidal positions the same model took over 2,000 steps, with learned ones it had not formed the
heads after 3,000); untied embeddings (with W_U = W_Eᵀ it stalled); the default seed forms the induction head
at step 603 (15–18 s on one thread of a busy 2-core machine, bench/bench_induction.py; seeds 1 and 2 formed theirs
near steps 650 and 1,000 in runs of 1,000 steps).

A replay is a directory: replay.json (config, steps, losses, timings, the probe) and replay.safetensors (every
snapshot's attention patterns on the probe and every head score), plus the final model as a model directory
(config.json, model.safetensors, tokenizer.json), so that `python -m transformer heads --model DIR` reads it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import load_file, save_file
from tokenizers import AddedToken, models, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

from . import head_scores as hs
from .attention import Interventions
from .config import ModelConfig
from .families.gpt import GPT
from .loading import save_model
from .tokenizer import Tokenizer
from .train import learning_rate

SYMBOLS = (
    [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    + [str(d) for d in range(10)]
    + ["+", "="]
)  # 64
UNKNOWN = "?"  # the tokenizer's one special token: any other word (never in the training data)
REPLAY_JSON, REPLAY_ARRAYS = "replay.json", "replay.safetensors"
BUNDLED_REPLAY = Path(__file__).resolve().parent.parent / "assets" / "replays" / "induction"


@dataclass(frozen=True)
class InductionConfig:
    n_symbols: int = len(SYMBOLS)  # data tokens (the vocabulary adds UNKNOWN)
    n_ctx: int = 32  # tokens per training sequence
    d_model: int = 64
    n_layer: int = 2
    n_head: int = 4
    min_run: int = 4  # the repeated run's length is drawn from min_run … max_run
    max_run: int = 16
    steps: int = 1500
    batch_size: int = 32
    lr: float = 3e-3  # peak (linear warm-up, cosine decay to lr/10: transformer.train.learning_rate)
    warmup: int = 100
    probe_prefix: int = 8  # the probe: this many random symbols, then a run of probe_run symbols, then the run again
    probe_run: int = 12
    snapshots: int = 100  # log-spaced steps asked for (fewer remain once rounded to whole steps)
    eval_size: int = 128  # fixed sequences the snapshot losses are measured on
    seed: int = 0
    threads: int = 1  # torch threads (process-wide; 0 = leave as set): 1 gives the same numbers on every machine
    causal: bool = True  # train with the causal mask (False: every token also sees the ones after it)

    def model_config(self) -> ModelConfig:
        return ModelConfig(
            vocab_size=self.n_symbols + 1,
            n_ctx=self.n_ctx,
            d_model=self.d_model,
            n_layer=self.n_layer,
            n_head=self.n_head,
            pos_encoding="rotary",
            tie_embeddings=False,
            attn_only=True,
        )


def symbol_tokenizer(n_symbols: int = len(SYMBOLS)) -> Tokenizer:
    """One token per symbol, split on spaces ("K f 3 K f 3"); anything else is the special token UNKNOWN."""
    vocab = {s: i for i, s in enumerate(SYMBOLS[:n_symbols])} | {UNKNOWN: n_symbols}
    hf = HFTokenizer(models.WordLevel(vocab, unk_token=UNKNOWN))
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    hf.add_special_tokens([AddedToken(UNKNOWN, special=True)])
    return Tokenizer(hf)


def repeated_runs(
    rng: np.random.Generator, n: int, length: int, symbols: np.ndarray, min_run: int, max_run: int
) -> tuple[np.ndarray, np.ndarray]:
    """n sequences of `length` random symbols in which a run of min_run … max_run symbols appears twice.

    Returns (seqs (n, length), predictable (n, length) bool): True where the symbol can be read off the earlier
    copy (the second copy's symbols after its first).
    """
    seqs = rng.choice(symbols, size=(n, length))
    predictable = np.zeros((n, length), dtype=bool)
    for b in range(n):
        run = int(rng.integers(min_run, min(max_run, length // 2) + 1))
        first = int(rng.integers(0, length - 2 * run + 1))
        second = int(rng.integers(first + run, length - run + 1))
        seqs[b, second : second + run] = seqs[b, first : first + run]
        predictable[b, second + 1 : second + run] = True
    return seqs, predictable


def probe_sequence(symbols: np.ndarray, prefix: int, run: int, seed: int) -> np.ndarray:
    """prefix + 2·run ids: `prefix` random symbols, a run of `run` others, then the same run again (all distinct but
    the copy), seeded. Its copy is 12 positions back, not ~16 where the training data's long runs put most copies."""
    ids = np.random.default_rng(seed).choice(symbols, size=prefix + run, replace=False)
    return np.concatenate([ids, ids[prefix:]])


def symbol_ids(ic: InductionConfig) -> np.ndarray:
    """The ids the data and the probe draw from: every symbol, not UNKNOWN."""
    return hs.allowed_ids(symbol_tokenizer(ic.n_symbols), ic.model_config().vocab_size)


def probe_for(ic: InductionConfig) -> np.ndarray:
    """The fixed probe every snapshot of a training with this config is measured on, (probe_prefix + 2·probe_run,)."""
    return probe_sequence(symbol_ids(ic), ic.probe_prefix, ic.probe_run, ic.seed + 2)


@dataclass
class Snapshot:
    step: int
    seconds: float  # wall time since training started
    loss: float  # mean next-token loss on the fixed evaluation sequences (nats)
    loss_repeated: float  # … on the predictable symbols only
    loss_random: float  # … on the others
    patterns: np.ndarray  # (n_layer, n_head, T, T) float32 on the probe
    scores: hs.HeadScores  # (n_layer, n_head) each, on the probe


@dataclass
class Replay:
    config: InductionConfig
    probe: np.ndarray  # (T,) the probe's token ids: a run of distinct symbols, then the same run again
    snapshots: list[Snapshot] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)  # every step's batch loss
    command: str = ""

    @property
    def repeat_from(self) -> int:
        """Where the probe's second copy starts."""
        return self.config.probe_prefix + self.config.probe_run

    @property
    def steps(self) -> np.ndarray:
        return np.array([s.step for s in self.snapshots])

    def series(self, name: str) -> np.ndarray:
        """A snapshot field over training: loss, loss_repeated, loss_random, seconds (S,)."""
        return np.array([getattr(s, name) for s in self.snapshots])

    def score(self, name: str) -> np.ndarray:
        """One head score over training, (S, n_layer, n_head)."""
        return np.stack([getattr(s.scores, name) for s in self.snapshots])

    def patterns(self) -> np.ndarray:
        """(S, n_layer, n_head, T, T)."""
        return np.stack([s.patterns for s in self.snapshots])

    @property
    def trained_steps(self) -> int:
        """Steps trained so far."""
        return len(self.train_loss)

    def add(self, kind: str, value) -> None:
        """Take in one report of train_for_queue: batch "losses" or a "snapshot"."""
        if kind == "losses":
            self.train_loss.extend(value)
        elif kind == "snapshot":
            self.snapshots.append(value)


def snapshot_steps(steps: int, n: int, first: int = 10) -> list[int]:
    """0 (the untrained model), then about n log-spaced steps from `first` to `steps`
    (nothing happens in the first few)."""
    return [0, *sorted({int(round(s)) for s in np.geomspace(min(first, steps), steps, n)})]


def optimizer(model: GPT, lr: float) -> torch.optim.Optimizer:
    """AdamW without weight decay (nothing here to regularize: every sequence is new)."""
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0)


def new_model(ic: InductionConfig) -> GPT:
    """The untrained model, seeded by ic.seed, in training mode (the process' random state is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(ic.seed)
        return GPT(ic.model_config()).train()


def eval_set(ic: InductionConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The fixed evaluation sequences every measurement reads: inputs x (n, T), targets y (n, T) and which targets
    are predictable (n, T) bool."""
    seqs, predictable = repeated_runs(
        np.random.default_rng(ic.seed + 1), ic.eval_size, ic.n_ctx + 1, symbol_ids(ic), ic.min_run, ic.max_run
    )
    return torch.from_numpy(seqs[:, :-1]), torch.from_numpy(seqs[:, 1:]), torch.from_numpy(predictable[:, 1:])


def token_losses(model: GPT, x: torch.Tensor, y: torch.Tensor, causal: bool = True) -> torch.Tensor:
    """−log p(y_t | what token t sees) at every position, (n, T); causal=False lifts the mask (each token also sees
    the ones after it, the next one among them)."""
    logits = model(x, interventions=Interventions(causal=causal))  # (n, T, vocab)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none").view_as(y)


def train_step(model: GPT, opt: torch.optim.Optimizer, batch: torch.Tensor, step: int, ic: InductionConfig) -> float:
    """One optimizer step on batch (B, n_ctx + 1) at the scheduled learning rate, with or without the mask as
    ic.causal says; returns the batch loss (nats per token)."""
    for g in opt.param_groups:
        g["lr"] = learning_rate(step, ic.steps, ic.warmup, ic.lr)
    loss = token_losses(model, batch[:, :-1], batch[:, 1:], ic.causal).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def pacer(duty: float) -> Callable[[], None]:
    """A function to call after each step: it sleeps so that the work between calls takes `duty` of the time
    (duty 0.5: it sleeps as long as the step computed; duty 1: never)."""
    last = [time.perf_counter()]

    def pace() -> None:
        if duty < 1:
            time.sleep((time.perf_counter() - last[0]) * (1 / duty - 1))
        last[0] = time.perf_counter()

    return pace


def measure(
    model: GPT, step: int, seconds: float, evals: tuple[torch.Tensor, torch.Tensor, torch.Tensor], probe: np.ndarray
) -> Snapshot:
    """Losses on the fixed evaluation sequences, and the heads on the probe."""
    x, y, predictable = evals
    model.eval()
    with torch.no_grad():
        nll = token_losses(model, x, y)  # (n, T), with the mask: the task as it is used
    patterns = hs.patterns_of(model, probe[None])[0]  # (L, nh, T, T)
    model.train()
    return Snapshot(
        step,
        seconds,
        nll.mean().item(),
        nll[predictable].mean().item(),
        nll[~predictable].mean().item(),
        patterns,
        hs.score_patterns(patterns, probe),
    )


def train_induction(
    ic: InductionConfig,
    on_snapshot: Callable[[Snapshot], None] | None = None,
    stop: Callable[[], bool] | None = None,
    on_step: Callable[[int, float], None] | None = None,
) -> tuple[Replay, GPT]:
    """Train from scratch (seeded) and take a snapshot at every snapshot_steps() step.

    on_snapshot(snapshot) runs after each snapshot, on_step(step, loss) after each step; training ends early
    when stop() returns True. Returns the replay and the model.
    """
    if ic.threads:
        torch.set_num_threads(ic.threads)
    rng = np.random.default_rng(ic.seed)
    symbols = symbol_ids(ic)
    model = new_model(ic)
    opt = optimizer(model, ic.lr)
    evals = eval_set(ic)
    probe = probe_for(ic)  # (T,)
    replay = Replay(ic, probe)
    todo = snapshot_steps(ic.steps, ic.snapshots)
    t0 = time.perf_counter()

    def snap(step: int) -> None:
        replay.snapshots.append(measure(model, step, time.perf_counter() - t0, evals, probe))
        if on_snapshot is not None:
            on_snapshot(replay.snapshots[-1])

    snap(0)
    for step in range(1, ic.steps + 1):
        if stop is not None and stop():
            break
        batch, _ = repeated_runs(rng, ic.batch_size, ic.n_ctx + 1, symbols, ic.min_run, ic.max_run)
        replay.train_loss.append(train_step(model, opt, torch.from_numpy(batch), step, ic))
        if on_step is not None:
            on_step(step, replay.train_loss[-1])
        if step in todo:
            snap(step)
    return replay, model.eval().requires_grad_(False)


def train_for_queue(ic: InductionConfig, queue, cancel, duty: float = 1.0, nice: int = 0) -> None:
    """train_induction in a child process (multiprocessing), reporting to the parent through `queue`:
    ("losses", [batch losses]) every few steps, ("snapshot", Snapshot) at each snapshot, and last ("done" | "cancelled"
    | "failed", message). Stops when the event `cancel` is set. Computes `duty` of the time (sleeping as long as it
    computed for duty 0.5) at niceness `nice`, so that a server beside it keeps its share of the CPU."""
    if nice:
        os.nice(nice)
    losses: list[float] = []
    pace = pacer(duty)

    def on_step(step: int, loss: float) -> None:
        losses.append(loss)
        if len(losses) >= 10:
            queue.put(("losses", losses[:]))
            losses.clear()
        pace()

    def on_snapshot(snapshot: Snapshot) -> None:
        if losses:  # the losses up to the snapshot's step come first
            queue.put(("losses", losses[:]))
            losses.clear()
        queue.put(("snapshot", snapshot))

    try:
        train_induction(ic, on_snapshot=on_snapshot, stop=cancel.is_set, on_step=on_step)
        if losses:
            queue.put(("losses", losses))
        queue.put(("cancelled" if cancel.is_set() else "done", ""))
    except Exception as err:  # noqa: BLE001 (the parent must hear that it failed)
        queue.put(("failed", f"{type(err).__name__}: {err}"))


def induction_step(replay: Replay, layer: int = 1, threshold: float = 0.5) -> Snapshot | None:
    """The first snapshot whose best induction score in `layer` reaches `threshold` (None: never)."""
    return next((s for s in replay.snapshots if s.scores.induction[layer].max() >= threshold), None)


def save_replay(out: str | Path, replay: Replay, model: GPT) -> Path:
    """replay.json + replay.safetensors, and the final model beside them (a model directory)."""
    out = Path(out)
    ic = replay.config
    formed = induction_step(replay)
    meta = {
        "data": "random symbols in which a run repeats",
        "config": dataclasses.asdict(ic),
        "command": replay.command,
    }
    save_model(out, model, symbol_tokenizer(ic.n_symbols), model_card(replay), meta=meta)
    doc = {
        "config": dataclasses.asdict(ic),
        "model": model.cfg.to_dict(),
        "command": replay.command,
        "probe": replay.probe.tolist(),
        "steps": replay.steps.tolist(),
        **{
            name: [round(float(v), 5) for v in replay.series(name)]
            for name in ("loss", "loss_repeated", "loss_random", "seconds")
        },
        "train_loss": [round(v, 5) for v in replay.train_loss],
        "induction_formed": None if formed is None else {"step": formed.step, "seconds": round(formed.seconds, 2)},
    }
    (out / REPLAY_JSON).write_text(json.dumps(doc, indent=1) + "\n")
    arrays = {"patterns": replay.patterns().astype(np.float16)}  # (S, L, nh, T, T)
    arrays |= {f"scores.{name}": replay.score(name).astype(np.float32) for name in hs.SCORE_NAMES}  # (S, L, nh) each
    save_file(arrays, str(out / REPLAY_ARRAYS), metadata={"format": "atlas-induction-replay"})
    # safetensors writes 0600: a server running as another user must read them
    for name in ("model.safetensors", REPLAY_ARRAYS):
        (out / name).chmod(0o644)
    return out


def load_replay(path: str | Path = BUNDLED_REPLAY) -> Replay:
    """A replay written by save_replay (patterns come back as float32 from the stored float16)."""
    path = Path(path)
    doc = json.loads((path / REPLAY_JSON).read_text())
    arrays = load_file(str(path / REPLAY_ARRAYS))
    names = {f.name for f in dataclasses.fields(InductionConfig)}
    replay = Replay(
        InductionConfig(**{k: v for k, v in doc["config"].items() if k in names}),
        np.array(doc["probe"]),
        train_loss=doc["train_loss"],
        command=doc["command"],
    )
    for i, step in enumerate(doc["steps"]):
        scores = hs.HeadScores(**{name: arrays[f"scores.{name}"][i] for name in hs.SCORE_NAMES})
        losses = (doc[name][i] for name in ("seconds", "loss", "loss_repeated", "loss_random"))
        replay.snapshots.append(Snapshot(step, *losses, arrays["patterns"][i].astype(np.float32), scores))
    return replay


def model_card(replay: Replay) -> str:
    ic = replay.config
    formed = induction_step(replay)
    when = "did not form" if formed is None else f"formed at step {formed.step} ({formed.seconds:.1f} s)"
    return f"""# induction (attention-only, {ic.n_layer} layers × {ic.n_head} heads)

A tiny attention-only transformer trained by Attention Atlas on random symbols in which a \
run of {ic.min_run}–{ic.max_run}
symbols repeats, to show induction heads forming. Not a language model: its tokens are {ic.n_symbols} meaningless
symbols ({' '.join(SYMBOLS[:8])} …), written with spaces between them.

d_model {ic.d_model}, rotary positions, no MLP, untied unembedding; \
{ic.steps} steps of {ic.batch_size} × {ic.n_ctx} tokens,
AdamW (peak lr {ic.lr}, warm-up {ic.warmup}), seed {ic.seed}, {ic.threads} thread(s). \
Induction head (layer 1, score ≥ 0.5) {when}.

    {replay.command}

Final loss {replay.snapshots[-1].loss:.3f} nats (log {ic.n_symbols} = {np.log(ic.n_symbols):.3f}); on the predictable
symbols {replay.snapshots[-1].loss_repeated:.3f}. The snapshots of training are in replay.json and replay.safetensors.
"""
