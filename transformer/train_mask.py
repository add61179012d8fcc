"""What the causal mask is for, shown by training: the Heads forming model (transformer.train_induction) trained
twice from the same start on the same batches, once with the causal mask and once without it.

Without the mask every position also sees the tokens after it, the very token it must predict among them: the model
learns to copy it, and its training loss falls toward 0. But a model is used to predict a token that does not exist
yet: with the future hidden (the mask on, the real task) its predictions are poor, and it cannot generate. The model
trained with the mask learns the real task: random symbols stay unpredictable (log 64 nats), and a repeated run is
completed by its induction head.

A mask replay is one small JSON file: the two training curves (the mean batch loss over every `every` steps, each as
trained), the two real-task curves (the fixed evaluation sequences, with the mask), the final losses and a greedy
generation from each model.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from . import train_induction as ti
from .attention import Interventions
from .families.gpt import GPT

RUNS = {"masked": True, "unmasked": False}  # run name → trained with the causal mask
BUNDLED_MASK_REPLAY = ti.BUNDLED_REPLAY.parent / "mask"
MASK_JSON, CARD = "replay.json", "README.md"
EVERY = 5  # steps per point of the training curves
REAL_EVERY = 10  # points per measurement of the real-task loss (it reads every evaluation sequence: 2 forwards)


@dataclass
class Point:
    step: int
    train: dict[str, float]  # run → mean batch loss over the steps since the previous point, as trained
    real: dict[str, float] | None = None  # run → loss on the evaluation sequences with the mask, when measured


@dataclass
class Result:
    loss_as_trained: float  # evaluation sequences, the mask as in training (nats per symbol)
    loss_real: float  # evaluation sequences with the mask: the task as it is used
    loss_real_predictable: float  # … on the symbols a model can read off the earlier copy
    generation: list[int]  # greedy continuation of the prompt, as trained

    def correct(self, answer: np.ndarray) -> int:
        """How many generated symbols equal the expected continuation, position by position."""
        return int(sum(a == b for a, b in zip(self.generation, answer.tolist(), strict=False)))


@dataclass
class MaskReplay:
    config: ti.InductionConfig
    prompt: np.ndarray  # (P,) ids: the probe up to a few symbols into its second copy
    answer: np.ndarray  # (G,) ids: the rest of the copy, what a model that reads the earlier copy generates
    points: list[Point] = field(default_factory=list)
    results: dict[str, Result] = field(default_factory=dict)  # run → its final numbers, once training is over
    command: str = ""

    def steps(self, real: bool = False) -> np.ndarray:
        """The steps of the training curves' points (real: of the points with a real-task loss)."""
        return np.array([p.step for p in self.points if not real or p.real is not None])

    def curve(self, run: str, real: bool = False) -> np.ndarray:
        """A run's training curve, or (real) its real-task curve, at steps(real)."""
        return np.array([p.real[run] if real else p.train[run] for p in self.points if not real or p.real is not None])

    @property
    def trained_steps(self) -> int:
        """Steps trained so far (by each model)."""
        return self.points[-1].step if self.points else 0

    def add(self, kind: str, value) -> None:
        """Take in one report of train_pair_for_queue: a "point" or the "results"."""
        if kind == "point":
            self.points.append(value)
        elif kind == "results":
            self.results = value


def prompt_for(ic: ti.InductionConfig, given: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """The probe of Heads forming cut `given` symbols into its second copy (the prompt), and the copy's rest (what
    a model that reads the earlier copy generates next)."""
    probe = ti.probe_for(ic)
    cut = ic.probe_prefix + ic.probe_run + given
    return probe[:cut], probe[cut:]


def generate(model: GPT, prompt: np.ndarray, n: int, causal: bool) -> list[int]:
    """n greedy next symbols after `prompt`, the model run as trained (with or without the mask)."""
    ids = torch.as_tensor(prompt, dtype=torch.long)[None]  # (1, P)
    with torch.no_grad():
        for _ in range(n):
            logits = model(ids, interventions=Interventions(causal=causal))  # (1, t, vocab)
            ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)  # (1, t + 1)
    return ids[0, len(prompt) :].tolist()


def losses(model: GPT, evals, causal: bool) -> tuple[float, float, float]:
    """Mean loss on the evaluation sequences as trained, with the mask, and with the mask on the predictable
    symbols."""
    x, y, predictable = evals
    model.eval()
    with torch.no_grad():
        real = ti.token_losses(model, x, y)  # (n, T)
        trained = real if causal else ti.token_losses(model, x, y, causal=False)  # (n, T)
    model.train()
    return trained.mean().item(), real.mean().item(), real[predictable].mean().item()


def train_pair(
    ic: ti.InductionConfig,
    on_report: Callable[[str, object], None] | None = None,
    stop: Callable[[], bool] | None = None,
    on_step: Callable[[], None] | None = None,
) -> MaskReplay:
    """Train a masked and an unmasked model from the same seeded start on the same batches (ic's settings; its
    `causal` is set per run), both a step at a time. The masked run is Heads forming's training step for step.

    on_report(kind, value) hears each point ("point", Point) and at the end ("results", {run: Result}); on_step()
    runs after each step (both models); training ends early when stop() returns True (no results then)."""
    if ic.threads:
        torch.set_num_threads(ic.threads)
    rng, symbols = np.random.default_rng(ic.seed), ti.symbol_ids(ic)
    configs = {run: dataclasses.replace(ic, causal=causal) for run, causal in RUNS.items()}
    models = {run: ti.new_model(ic) for run in RUNS}
    opts = {run: ti.optimizer(model, ic.lr) for run, model in models.items()}
    evals = ti.eval_set(ic)
    prompt, answer = prompt_for(ic)
    replay = MaskReplay(ic, prompt, answer)
    sums = dict.fromkeys(RUNS, 0.0)

    def report(kind: str, value) -> None:
        replay.add(kind, value)
        if on_report is not None:
            on_report(kind, value)

    def real_losses() -> dict[str, float]:
        return {run: losses(models[run], evals, True)[1] for run in RUNS}

    # before training: the evaluation sequences' loss as each model is trained, and with the mask
    start = {run: losses(models[run], evals, causal)[0] for run, causal in RUNS.items()}
    report("point", Point(0, start, real_losses()))
    for step in range(1, ic.steps + 1):
        if stop is not None and stop():
            return replay
        batch = torch.from_numpy(ti.repeated_runs(rng, ic.batch_size, ic.n_ctx + 1, symbols, ic.min_run, ic.max_run)[0])
        for run in RUNS:
            sums[run] += ti.train_step(models[run], opts[run], batch, step, configs[run])
        if on_step is not None:
            on_step()
        if step % EVERY == 0 or step == ic.steps:
            n = step - (step - 1) // EVERY * EVERY  # steps since the previous point
            last = step == ic.steps or step % (EVERY * REAL_EVERY) == 0
            report("point", Point(step, {run: s / n for run, s in sums.items()}, real_losses() if last else None))
            sums = dict.fromkeys(RUNS, 0.0)
    results = {}
    for run, causal in RUNS.items():
        as_trained, real, predictable = losses(models[run], evals, causal)
        results[run] = Result(as_trained, real, predictable, generate(models[run].eval(), prompt, len(answer), causal))
    report("results", results)
    return replay


def train_pair_for_queue(ic: ti.InductionConfig, queue, cancel, duty: float = 1.0, nice: int = 0) -> None:
    """train_pair in a child process (multiprocessing), reporting to the parent through `queue`: its reports as they
    come, then ("done" | "cancelled" | "failed", message). Stops when the event `cancel` is set; computes `duty` of
    the time at niceness `nice` (as train_induction.train_for_queue)."""
    if nice:
        os.nice(nice)
    try:
        train_pair(
            ic, on_report=lambda kind, value: queue.put((kind, value)), stop=cancel.is_set, on_step=ti.pacer(duty)
        )
        queue.put(("cancelled" if cancel.is_set() else "done", ""))
    except Exception as err:  # noqa: BLE001 (the parent must hear that it failed)
        queue.put(("failed", f"{type(err).__name__}: {err}"))


def save_mask_replay(out: str | Path, replay: MaskReplay) -> Path:
    """replay.json (≈ 30 kB) and its card, README.md, in the directory `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    doc = {
        "config": dataclasses.asdict(replay.config),
        "command": replay.command,
        "prompt": replay.prompt.tolist(),
        "answer": replay.answer.tolist(),
        "steps": replay.steps().tolist(),
        "train_loss": {run: [round(float(v), 5) for v in replay.curve(run)] for run in RUNS},
        "real_steps": replay.steps(real=True).tolist(),
        "real_loss": {run: [round(float(v), 5) for v in replay.curve(run, real=True)] for run in RUNS},
        "results": {
            run: {k: round(v, 5) if isinstance(v, float) else v for k, v in dataclasses.asdict(r).items()}
            for run, r in replay.results.items()
        },
    }
    (out / MASK_JSON).write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    (out / CARD).write_text(model_card(replay))
    return out


def load_mask_replay(path: str | Path = BUNDLED_MASK_REPLAY) -> MaskReplay:
    """A replay written by save_mask_replay."""
    doc = json.loads((Path(path) / MASK_JSON).read_text())
    names = {f.name for f in dataclasses.fields(ti.InductionConfig)}
    replay = MaskReplay(
        ti.InductionConfig(**{k: v for k, v in doc["config"].items() if k in names}),
        np.array(doc["prompt"]),
        np.array(doc["answer"]),
        command=doc["command"],
        results={run: Result(**r) for run, r in doc["results"].items()},
    )

    def at(curves: dict[str, list[float]], i: int) -> dict[str, float]:
        return {run: curves[run][i] for run in RUNS}

    real = {step: at(doc["real_loss"], i) for i, step in enumerate(doc["real_steps"])}
    replay.points = [Point(step, at(doc["train_loss"], i), real.get(step)) for i, step in enumerate(doc["steps"])]
    return replay


def model_card(replay: MaskReplay) -> str:
    """The card of a mask replay: how it was made and its numbers."""
    ic, m, u = replay.config, replay.results["masked"], replay.results["unmasked"]
    m_train, u_train = (replay.curve(run)[-1] for run in RUNS)
    expected = " ".join(ti.SYMBOLS[i] for i in replay.answer)
    said = {run: " ".join(ti.SYMBOLS[i] for i in r.generation) for run, r in replay.results.items()}
    n, guess = len(replay.answer), np.log(ic.n_symbols)
    worse = " and worse\n  than guessing" if u.loss_real > guess else ",\n  better than guessing"
    return f"""# With and without the causal mask (attention-only, {ic.n_layer} layers × {ic.n_head} heads)

The Heads forming model (random symbols in which a run of {ic.min_run}–{ic.max_run} symbols repeats), trained twice \
by Attention
Atlas from the same start on the same {ic.steps} batches of {ic.batch_size} × {ic.n_ctx} symbols (seed {ic.seed}, \
{ic.threads} thread(s)): once with
the causal mask, once without it. The masked run is the Heads forming replay's training, step for step.

    {replay.command}

- **Training loss** at the end (mean of the last {EVERY} batches, each model as trained): with the mask \
{m_train:.3f} nats, without
  it {u_train:.3f}, {u_train / m_train:.3f} × the masked one's: without the mask each symbol sees the next one and \
copies it.
- **The real task** (the {ic.eval_size} evaluation sequences with the future hidden): the masked model \
{m.loss_real:.3f} nats (log {ic.n_symbols} =
  {guess:.3f}: random symbols cannot be predicted), the unmasked model {u.loss_real:.3f}, \
{u.loss_real / m.loss_real:.1f} × the masked model's{worse}; on the predictable symbols \
{m.loss_real_predictable:.3f} against {u.loss_real_predictable:.3f} \
({u.loss_real_predictable / m.loss_real_predictable:.1f} ×).
- **Greedy generation** after the probe's first {len(replay.prompt)} symbols, each model run as trained \
(expected: the rest of the repeated
  run, `{expected}`): the masked model `{said["masked"]}`, {m.correct(replay.answer)} of {n} right; the unmasked \
model `{said["unmasked"]}`,
  {u.correct(replay.answer)} of {n}.

The curves and generations are in replay.json.
"""
