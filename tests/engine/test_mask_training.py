"""Training with and without the causal mask (transformer.train_mask): the flag reaches the attention, a short
training on a tiny fixture goes the expected way, and the bundled replay meets the acceptance — read from its file:
the unmasked model's training loss ends below a tenth of the masked one's, while on the real task (the future hidden)
its loss is far above the masked model's, and only the masked model completes the repeated run."""

from __future__ import annotations

import json
import math
import queue
import threading
from dataclasses import replace

import numpy as np
import torch

from transformer import train_induction as ti
from transformer import train_mask as tm
from transformer.cli import main as cli

DOC = json.loads((tm.BUNDLED_MASK_REPLAY / tm.MASK_JSON).read_text())
INDUCTION = json.loads((ti.BUNDLED_REPLAY / ti.REPLAY_JSON).read_text())  # the Heads forming replay
# a fixture that trains in a few seconds: 10 symbols, 12 tokens, runs of 2–6
TINY = replace(
    ti.InductionConfig(),
    n_symbols=10,
    n_ctx=12,
    d_model=32,
    min_run=2,
    max_run=6,
    probe_prefix=2,
    probe_run=4,
    steps=80,
    warmup=20,
    batch_size=16,
    eval_size=32,
    lr=1e-2,
)


def test_without_the_mask_a_position_sees_the_next_token():
    """Changing token t + 1 moves the prediction at t only when the mask is off (the flag reaches the attention)."""
    model = ti.new_model(TINY).eval()
    x = torch.tensor([[1, 2, 3, 4, 5, 6]])
    y = x.clone()
    y[0, 4] = 7  # token 4 changes: the predictions at 0…3 may only move without the mask
    with torch.no_grad():
        for causal, moved in ((True, False), (False, True)):
            a, b = (ti.token_losses(model, ids[:, :-1], ids[:, 1:], causal) for ids in (x, y))  # (1, 5) each
            assert torch.equal(a[0, :3], b[0, :3]) != moved
            assert not torch.equal(a[0, 3:], b[0, 3:])  # token 4's own prediction and the one after it read it


def test_a_short_training_shows_the_same_direction():
    rp = tm.train_pair(TINY)
    assert rp.steps()[-1] == TINY.steps and len(rp.points) == TINY.steps // tm.EVERY + 1
    train = {run: rp.curve(run)[-1] for run in tm.RUNS}
    r = rp.results
    assert train["unmasked"] < 0.3 * train["masked"]  # it copies the next token
    assert r["unmasked"].loss_real > 1.5 * r["masked"].loss_real  # … which the real task hides
    assert r["masked"].loss_as_trained == r["masked"].loss_real  # the masked model is trained as it is used
    assert r["unmasked"].loss_as_trained < 0.3 * r["masked"].loss_real
    assert all(len(res.generation) == len(rp.answer) for res in r.values())


def test_the_report_queue_carries_the_same_training_and_a_cancel_stops_it():
    ic = replace(TINY, steps=10)
    reports, cancel = queue.Queue(), threading.Event()
    tm.train_pair_for_queue(ic, reports, cancel)
    got = tm.MaskReplay(ic, *tm.prompt_for(ic))
    kind, value = reports.get_nowait()
    while kind in ("point", "results"):
        got.add(kind, value)
        kind, value = reports.get_nowait()
    assert (kind, value) == ("done", "") and reports.empty()
    direct = tm.train_pair(ic)  # seeded: the same numbers
    assert got.points == direct.points and got.results == direct.results and len(got.points) == 3
    cancel.set()
    tm.train_pair_for_queue(ic, reports, cancel)
    assert [reports.get_nowait()[0], reports.get_nowait()] == ["point", ("cancelled", "")]  # the start, then no step


def test_bundled_replay_meets_the_acceptance():
    assert (tm.BUNDLED_MASK_REPLAY / tm.MASK_JSON).stat().st_size <= 200_000
    steps, train, results = DOC["steps"], DOC["train_loss"], DOC["results"]
    assert len(steps) >= 200 and all(len(train[run]) == len(steps) for run in ("masked", "unmasked"))
    masked_end, unmasked_end = train["masked"][-1], train["unmasked"][-1]
    assert unmasked_end < 0.1 * masked_end  # measured: 0.129 against 3.211 (0.040 ×)
    real_m, real_u = results["masked"]["loss_real"], results["unmasked"]["loss_real"]
    assert real_u > 1.8 * real_m and real_u > math.log(64)  # measured: 6.175 against 3.323 (1.9 ×), worse than guessing
    pm, pu = results["masked"]["loss_real_predictable"], results["unmasked"]["loss_real_predictable"]
    assert pu > 5 * pm  # on the predictable symbols: 4.162 against 0.634 (6.6 ×)
    # the real-task curves: the masked model's falls, the unmasked one's ends above where it started
    assert DOC["real_loss"]["masked"][-1] < DOC["real_loss"]["masked"][0] < DOC["real_loss"]["unmasked"][-1]
    # the prompt is the Heads forming probe cut 3 symbols into its second copy; the masked model completes the run
    cfg = INDUCTION["config"]
    cut = cfg["probe_prefix"] + cfg["probe_run"] + 3
    assert DOC["prompt"] == INDUCTION["probe"][:cut] and DOC["answer"] == INDUCTION["probe"][cut:]
    assert results["masked"]["generation"] == DOC["answer"]
    right = sum(a == b for a, b in zip(results["unmasked"]["generation"], DOC["answer"], strict=True))
    assert right <= len(DOC["answer"]) // 2


def test_bundled_masked_run_is_the_heads_forming_training():
    """Same seed, same batches: the masked curve's points are the means of the Heads forming replay's batch losses."""
    losses = np.array(INDUCTION["train_loss"])  # step s at index s − 1
    steps = DOC["steps"]
    means = [losses[a:b].mean() for a, b in zip(steps[:-1], steps[1:], strict=True)]
    np.testing.assert_allclose(DOC["train_loss"]["masked"][1:], means, atol=2e-5)
    assert DOC["config"] == INDUCTION["config"] | {"causal": True}


def test_bundled_files_are_what_the_code_writes(tmp_path):
    tm.save_mask_replay(tmp_path, tm.load_mask_replay())
    for name in (tm.MASK_JSON, tm.CARD):
        assert (tmp_path / name).read_text() == (tm.BUNDLED_MASK_REPLAY / name).read_text(), name


def test_card_states_the_numbers():
    card = (tm.BUNDLED_MASK_REPLAY / tm.CARD).read_text()
    m, u = DOC["train_loss"]["masked"][-1], DOC["train_loss"]["unmasked"][-1]
    real_m, real_u = (DOC["results"][run]["loss_real"] for run in ("masked", "unmasked"))
    numbers = (f"{m:.3f}", f"{u:.3f}", f"{u / m:.3f} ×", f"{real_m:.3f}", f"{real_u:.3f}", f"{real_u / real_m:.1f} ×")
    for number in numbers:
        assert number in card
    assert DOC["command"] in card and "worse\n  than guessing" in card


def test_train_mask_cli(tmp_path, capsys):
    out = tmp_path / "mask"
    assert cli(["train-mask", "--out", str(out), "--steps", "10"]) == 0
    got = tm.load_mask_replay(out)
    assert got.steps().tolist() == [0, 5, 10] and got.steps(real=True).tolist() == [0, 10]
    assert "--steps 10 " in got.command and set(got.results) == set(tm.RUNS)
    assert "loss on the real task" in capsys.readouterr().out
