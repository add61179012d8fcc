"""Heads forming: what the page reads off a training replay (transformer.train_induction) — the phase change in the
loss, score curves per head, the probe's repeated tokens, and what each head score means."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer import head_scores as hs
from transformer.train_induction import SYMBOLS, Replay
from transformer.train_mask import RUNS, MaskReplay

from .head_roles import SCORES
from .heads import all_heads, parse_head


def head_names(replay: Replay) -> list[str]:
    """Every head as "L.H", layer by layer (the order of score_curves' columns)."""
    return all_heads(replay.config.n_layer, replay.config.n_head)


def score_curves(replay: Replay, name: str) -> np.ndarray:
    """One score of every head over training, (S, n_layer · n_head)."""
    scores = replay.score(name)  # (S, L, nh)
    return scores.reshape(len(scores), -1)


def best_in_layer(replay: Replay, name: str, layer: int) -> np.ndarray:
    """The highest score among a layer's heads at every snapshot, (S,)."""
    return replay.score(name)[:, layer].max(axis=1)


@dataclass(frozen=True)
class PhaseChange:
    start: int  # snapshot index where the steep fall begins
    end: int  # … and ends
    share: float  # fraction of the whole loss drop that happens between them


def phase_change(
    steps: np.ndarray, loss: np.ndarray, min_share: float = 0.4, max_span: float = 0.4, keep: float = 1 / 3
) -> PhaseChange | None:
    """The stretch of training where the loss falls fastest: the pair of neighbouring snapshots with the steepest fall
    per step, widened on both sides while the fall per step stays at least `keep` times that. None unless that stretch
    is sudden: it holds at least `min_share` of the whole drop within at most `max_span` of the training's steps."""
    steps, loss = np.asarray(steps, dtype=float), np.asarray(loss, dtype=float)
    if len(loss) < 3:
        return None
    total = loss[0] - loss.min()
    if total <= 0:
        return None
    rate = (loss[:-1] - loss[1:]) / np.diff(steps)  # fall per step between neighbours, (S−1,)
    top = int(np.argmax(rate))
    lo = hi = top
    while lo > 0 and rate[lo - 1] >= keep * rate[top]:
        lo -= 1
    while hi < len(rate) - 1 and rate[hi + 1] >= keep * rate[top]:
        hi += 1
    share = float((loss[lo] - loss[hi + 1]) / total)
    sudden = share >= min_share and steps[hi + 1] - steps[lo] <= max_span * (steps[-1] - steps[0])
    return PhaseChange(lo, hi + 1, share) if sudden else None


def jump_index(replay: Replay) -> int | None:
    """The snapshot to jump to before playing: the one just before the loss starts its steep fall (the phase change's
    start); None when the loss shows no phase change."""
    pc = phase_change(replay.steps, replay.series("loss"))
    return None if pc is None else pc.start


def guess_loss(replay: Replay) -> float:
    """The loss of guessing uniformly among the symbols, log n (nats)."""
    return float(np.log(replay.config.n_symbols))


def probe_labels(replay: Replay) -> list[str]:
    """The probe's symbols (the figure marks where the second copy starts)."""
    return [SYMBOLS[i] for i in replay.probe]


def probe_parts(replay: Replay) -> tuple[str, str, str]:
    """The probe as three strings of symbols: the random start, the run, the run again."""
    r, run = replay.repeat_from, replay.config.probe_run
    words = [SYMBOLS[i] for i in replay.probe]
    return " ".join(words[: r - run]), " ".join(words[r - run : r]), " ".join(words[r:])


def head_titles(replay: Replay, index: int) -> list[str]:
    """A title per head at snapshot `index`: its name and its labels (or its strongest score)."""
    s = replay.snapshots[index].scores
    out = []
    for name in head_names(replay):
        labels = hs.head_labels(s, *parse_head(name))
        out.append(f"head {name}: " + (", ".join(labels) if labels else "no label"))
    return out


def score_table(replay: Replay, index: int) -> dict[str, list]:
    """Columns of a table: every head's scores and labels at snapshot `index` (3 decimals)."""
    s = replay.snapshots[index].scores
    names = head_names(replay)
    table: dict[str, list] = {"head": names, "labels": [", ".join(hs.head_labels(s, *parse_head(n))) for n in names]}
    for name in hs.SCORE_NAMES:
        table[SCORES[name].title] = [round(float(v), 3) for v in getattr(s, name).ravel()]
    return table


def phase_sentence(replay: Replay) -> str:
    """What the data shows about the phase change, in one or two sentences (markdown)."""
    steps, loss = replay.steps, replay.series("loss")
    pc = phase_change(steps, loss)
    if pc is None:
        return "The loss falls gradually here: no short stretch holds most of its drop, so no phase change is marked."
    ind = best_in_layer(replay, "induction", replay.config.n_layer - 1)
    prev = best_in_layer(replay, "previous_token", 0)
    a, b = pc.start, pc.end
    return (
        f"**Phase change, steps {steps[a]}–{steps[b]}** (shaded): {pc.share:.0%} of the loss's whole "
        f"drop happens there ({loss[a]:.2f} → {loss[b]:.2f} nats). In the same steps the best induction score "
        f"of the last layer goes {ind[a]:.2f} → {ind[b]:.2f} and the best previous-token score of layer 0 goes "
        f"{prev[a]:.2f} → {prev[b]:.2f}: the two heads form together, because each is useless without the other."
    )


RUN_TITLES = {"masked": "with the mask", "unmasked": "without the mask"}  # a mask replay's runs, in words


@dataclass(frozen=True)
class MaskLosses:
    train: dict[str, float]  # run → training loss at the end (its last batches, as trained)
    real: dict[str, float]  # run → loss on the evaluation sequences with the future hidden
    guess: float  # log n: guessing uniformly

    @property
    def train_ratio(self) -> float:
        """The unmasked model's training loss ÷ the masked one's."""
        return self.train["unmasked"] / self.train["masked"]

    @property
    def real_ratio(self) -> float:
        """The unmasked model's real-task loss ÷ the masked one's."""
        return self.real["unmasked"] / self.real["masked"]


def mask_losses(mrp: MaskReplay) -> MaskLosses:
    """The numbers a mask replay ends with."""
    return MaskLosses(
        {run: float(mrp.curve(run)[-1]) for run in RUNS},
        {run: mrp.results[run].loss_real for run in RUNS},
        float(np.log(mrp.config.n_symbols)),
    )


def prompt_sentence(mrp: MaskReplay) -> str:
    """What the generations continue (markdown): the prompt's symbols and how far into the probe's copy it reaches."""
    given = len(mrp.prompt) - mrp.config.probe_prefix - mrp.config.probe_run
    words = " ".join(SYMBOLS[i] for i in mrp.prompt)
    return (
        f"Each model continues `{words}` (the probe, {given} symbol{'s' * (given != 1)} into its second copy) "
        "one greedy symbol at a time, run as it was trained:"
    )


def generation_table(mrp: MaskReplay) -> dict[str, list[str]]:
    """Columns of a table: the expected continuation and each model's greedy one, a symbol per column, and how many
    it got right."""
    rows = {"expected": mrp.answer.tolist()} | {RUN_TITLES[run]: mrp.results[run].generation for run in RUNS}
    table = {"": list(rows)}
    for k in range(len(mrp.answer)):
        table[str(k + 1)] = [SYMBOLS[ids[k]] if k < len(ids) else "" for ids in rows.values()]
    table["right"] = [""] + [f"{mrp.results[run].correct(mrp.answer)} of {len(mrp.answer)}" for run in RUNS]
    return table


def mask_sentence(mrp: MaskReplay) -> str:
    """What the two trainings show, computed from their numbers (markdown); says so when an effect is absent."""
    n = mask_losses(mrp)
    tm, tu, rm, ru = n.train["masked"], n.train["unmasked"], n.real["masked"], n.real["unmasked"]
    if tu < 0.1 * tm:
        first = (
            f"Without the mask the training loss fell to **{tu:.3f}** nats, {n.train_ratio:.2f} × the masked model's "
            f"{tm:.3f}: each symbol saw the next one and copied it."
        )
    else:
        first = (
            f"Without the mask the training loss ended at {tu:.3f} nats against {tm:.3f} with it: it did not fall "
            "below a tenth of the masked model's, so this run shows no copying of the next symbol."
        )
    if ru > rm:
        worse = f", worse than guessing (log {mrp.config.n_symbols} = {n.guess:.2f})" if ru > n.guess else ""
        second = (
            f"With the future hidden, as when the model is used, its loss is **{ru:.3f}**, {n.real_ratio:.1f} × the "
            f"masked model's {rm:.3f}{worse}."
        )
    else:
        second = (
            f"With the future hidden its loss is {ru:.3f}, no worse than the masked model's {rm:.3f}: "
            "here the mask made no difference on the real task."
        )
    right = {run: mrp.results[run].correct(mrp.answer) for run in RUNS}
    third = (
        f"Asked to continue the repeated run, the masked model gets {right['masked']} of {len(mrp.answer)} symbols "
        f"right, the unmasked one {right['unmasked']}."
    )
    return f"{first} {second} {third}"
