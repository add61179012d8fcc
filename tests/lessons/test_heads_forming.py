"""lessons/heads_forming.py on small hand-made replays (2 layers × 2 heads, a probe of 5 symbols) whose head names,
score curves, phase change, probe and table are worked out by hand; and on hand-made replays of the training with and
without the mask, whose numbers, table and sentence are written out here."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from lessons import heads_forming as hf
from transformer import head_scores as hs
from transformer import train_induction as ti
from transformer import train_mask as tm

CFG = ti.InductionConfig(n_symbols=5, n_layer=2, n_head=2, probe_prefix=1, probe_run=2)
PROBE = np.array([3, 0, 4, 0, 4])  # D, then the run A E, then A E again


def scores(**given) -> hs.HeadScores:
    """(2, 2) scores, all 0 but the name=[[layer 0's heads], [layer 1's heads]] given."""
    return hs.HeadScores(**{name: np.array(given.get(name, np.zeros((2, 2))), dtype=float) for name in hs.SCORE_NAMES})


def replay(snapshot_scores: list[hs.HeadScores], loss: list[float] | None = None, steps: list[int] | None = None):
    """A replay of one snapshot per scores, at steps 0, 1, 2, … unless given, with loss 0 unless given."""
    n = len(snapshot_scores)
    steps, loss = steps or list(range(n)), loss or [0.0] * n
    patterns = np.zeros((2, 2, len(PROBE), len(PROBE)), dtype=np.float32)  # (L, nh, T, T): not read by the lessons
    snaps = [ti.Snapshot(steps[k], 0.0, loss[k], 0.0, 0.0, patterns, snapshot_scores[k]) for k in range(n)]
    return ti.Replay(CFG, PROBE, snaps)


def test_head_names_go_layer_by_layer():
    assert hf.head_names(replay([scores()])) == ["0.0", "0.1", "1.0", "1.1"]
    wide = dataclasses.replace(replay([scores()]), config=dataclasses.replace(CFG, n_layer=1, n_head=3))
    assert hf.head_names(wide) == ["0.0", "0.1", "0.2"]


def test_score_curves_put_every_head_in_a_column_and_best_in_layer_takes_the_max():
    induction = [[[0.1, 0.2], [0.3, 0.0]], [[0.1, 0.2], [0.6, 0.4]], [[0.0, 0.1], [0.2, 0.9]]]  # 3 snapshots
    rp = replay([scores(induction=s) for s in induction])
    want = [[0.1, 0.2, 0.3, 0.0], [0.1, 0.2, 0.6, 0.4], [0.0, 0.1, 0.2, 0.9]]  # columns 0.0, 0.1, 1.0, 1.1
    np.testing.assert_array_equal(hf.score_curves(rp, "induction"), want)
    np.testing.assert_array_equal(hf.score_curves(rp, "spread"), np.zeros((3, 4)))  # another score: its own curves
    np.testing.assert_array_equal(hf.best_in_layer(rp, "induction", 1), [0.3, 0.6, 0.9])
    np.testing.assert_array_equal(hf.best_in_layer(rp, "induction", 0), [0.2, 0.2, 0.1])
    one = replay([scores(induction=induction[1])])  # one snapshot: one row
    np.testing.assert_array_equal(hf.score_curves(one, "induction"), [want[1]])
    np.testing.assert_array_equal(hf.best_in_layer(one, "induction", 1), [0.6])


def test_phase_change_is_where_the_loss_falls_fastest():
    steps = np.array([0, 10, 20, 40, 80, 160, 320, 640, 1280])
    # falls per step: .001 .001 .0005 .00025 | .012 .004375 | .00016 .00008: the steepest 80 → 160 (.012), widened to
    # 160 → 320 (.004375 ≥ .012 / 3) but not to 40 → 80 (.00025)
    sudden = np.array([4.2, 4.19, 4.18, 4.17, 4.16, 3.2, 2.5, 2.45, 2.4])
    pc = hf.phase_change(steps, sudden)
    assert (steps[pc.start], steps[pc.end]) == (80, 320)
    assert pc.share == pytest.approx((4.16 - 2.5) / (4.2 - 2.4))


def test_phase_change_widens_while_the_fall_keeps_a_third_of_its_steepest():
    steps = np.arange(11)
    loss = np.array([10, 10, 9, 6, 5, 5, 5, 5, 5, 5, 5])  # falls per step: 0 1 3 1 0 …: 1 is exactly a third of 3
    assert hf.phase_change(steps, loss) == hf.PhaseChange(1, 4, 1.0)
    assert hf.phase_change(steps, loss, keep=0.5) == hf.PhaseChange(2, 3, 0.6)  # 1 < 3 / 2: the steepest step alone


def test_phase_change_needs_a_large_share_in_a_short_span():
    steps = np.arange(11)
    thirds = np.array([10, 10, 9, 9, 9, 9, 8, 8, 8, 8, 7])  # three equal falls far apart: the first holds 1/3
    assert hf.phase_change(steps, thirds) is None
    assert hf.phase_change(steps, thirds, min_share=0.3) == hf.PhaseChange(1, 2, pytest.approx(1 / 3))
    log_steps = np.array([0, 10, 20, 40, 80, 160, 320, 640, 1280])
    steady = 4.2 - 0.001 * log_steps  # the same fall per step everywhere: all the drop, over all the training
    assert hf.phase_change(log_steps, steady) is None
    whole = hf.phase_change(log_steps, steady, max_span=1.0)
    assert (whole.start, whole.end) == (0, 8) and whole.share == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("steps", "loss"),
    [([], []), ([0], [4.2]), ([0, 10], [4.2, 1.0]), ([0, 10, 20], [4.2, 4.2, 4.2]), ([0, 10, 20], [1.0, 2.0, 3.0])],
    ids=["empty", "one step", "two steps", "flat", "rising"],
)
def test_no_phase_change_without_a_fall_to_compare(steps, loss):
    assert hf.phase_change(np.array(steps), np.array(loss)) is None


def test_guess_loss_is_log_of_the_symbols():
    assert hf.guess_loss(replay([scores()])) == pytest.approx(math.log(5))
    bundled = dataclasses.replace(replay([scores()]), config=ti.InductionConfig())  # 64 symbols
    assert hf.guess_loss(bundled) == pytest.approx(4.1588830834)


def test_probe_labels_and_parts():
    rp = replay([scores()])
    assert hf.probe_labels(rp) == ["D", "A", "E", "A", "E"]
    assert hf.probe_parts(rp) == ("D", "A E", "A E")
    no_start = dataclasses.replace(rp, config=dataclasses.replace(CFG, probe_prefix=0), probe=np.array([0, 4, 0, 4]))
    assert hf.probe_parts(no_start) == ("", "A E", "A E")


# head 0.0 previous-token; 0.1 self (exactly at 0.5); 1.0 induction and sink; 1.1 nothing (0.39 < 0.4)
LABELLED = scores(
    previous_token=[[0.9, 0.1], [0.2, 0.1]],
    induction=[[0.0, 0.0], [0.45, 0.1]],
    first_token=[[0.0, 0.0], [0.6, 0.0]],
    self_token=[[0.0, 0.5], [0.0, 0.0]],
    duplicate_token=[[0.0, 0.0], [0.0, 0.39]],
    distance=[[1.2344, 2.0006], [11.0, 0.5]],
    spread=[[0.0, 1.0], [2.0, 1 / 3]],
)


def test_head_titles_name_each_head_and_its_labels():
    rp = replay([scores(), LABELLED])
    assert hf.head_titles(rp, 1) == [
        "head 0.0: previous-token",
        "head 0.1: self",
        "head 1.0: induction, first-token (sink)",
        "head 1.1: no label",
    ]
    assert hf.head_titles(rp, 0) == [f"head {n}: no label" for n in ("0.0", "0.1", "1.0", "1.1")]  # the one asked for


def test_score_table_has_every_head_its_labels_and_every_score_to_3_decimals():
    table = hf.score_table(replay([scores(), LABELLED]), 1)
    assert table == {
        "head": ["0.0", "0.1", "1.0", "1.1"],
        "labels": ["previous-token", "self", "induction, first-token (sink)", ""],
        "Previous token": [0.9, 0.1, 0.2, 0.1],
        "Duplicate token": [0.0, 0.0, 0.0, 0.39],
        "Induction": [0.0, 0.0, 0.45, 0.1],
        "First token (sink)": [0.0, 0.0, 0.6, 0.0],
        "Self": [0.0, 0.5, 0.0, 0.0],
        "Mean distance": [1.234, 2.001, 11.0, 0.5],
        "Spread (entropy)": [0.0, 1.0, 2.0, 0.333],
    }
    assert list(table)[:4] == ["head", "labels", "Previous token", "Duplicate token"]  # in the scores' order


def test_phase_sentence_quotes_the_band_and_both_heads_in_it():
    # the best layer-1 induction and layer-0 previous-token scores jump with the loss
    before = scores(induction=[[0.9, 0], [0.05, 0.02]], previous_token=[[0.05, 0.1], [0.99, 0]])
    after = scores(induction=[[0.9, 0], [0.62, 0.31]], previous_token=[[0.35, 0.7], [0.99, 0]])
    snaps = [before] * 6 + [after] * 5
    rp = replay(snaps, loss=[4.0] * 6 + [1.0] * 5, steps=list(range(0, 110, 10)))  # the whole drop: steps 50 → 60
    text = hf.phase_sentence(rp)
    assert text.startswith("**Phase change, steps 50–60**")
    assert "100% of the loss's whole drop" in text and "(4.00 → 1.00 nats)" in text
    assert "induction score of the last layer goes 0.05 → 0.62" in text  # layer 0's 0.9 is not the last layer's
    assert "previous-token score of layer 0 goes 0.10 → 0.70" in text  # layer 1's 0.99 is not layer 0's


def test_phase_sentence_says_so_when_there_is_none():
    flat = replay([scores(), scores(), scores()], loss=[4.2, 4.2, 4.2])
    one = replay([scores()], loss=[4.2])
    for rp in (flat, one):
        assert "no phase change is marked" in hf.phase_sentence(rp)


def test_jump_index_is_where_the_steep_fall_begins():
    steps = [0, 10, 20, 40, 80, 160, 320, 640, 1280]
    loss = [4.2, 4.19, 4.18, 4.17, 4.16, 3.2, 2.5, 2.45, 2.4]  # steepest 80 → 160 (the worked example above)
    rp = replay([scores()] * len(steps), loss=loss, steps=steps)
    assert hf.jump_index(rp) == 4  # step 80: the last snapshot before the fall
    assert hf.jump_index(replay([scores()] * 3, loss=[4.2, 4.2, 4.2])) is None  # no fall: nowhere to jump


def mask_replay(train: tuple[float, float], real: tuple[float, float], generations=([4, 0], [0, 0])):
    """A mask replay whose last training point and final real-task losses are (masked, unmasked), on CFG's 5 symbols;
    the prompt D A E A and the expected continuation E D."""
    runs = ("masked", "unmasked")
    points = [tm.Point(0, {"masked": 1.6, "unmasked": 1.6}), tm.Point(5, dict(zip(runs, train, strict=True)))]
    results = {
        run: tm.Result(t, r, r, list(g)) for run, t, r, g in zip(runs, train, real, generations, strict=True)
    }
    return tm.MaskReplay(CFG, np.array([3, 0, 4, 0]), np.array([4, 3]), points, results)


def test_mask_losses_read_the_last_point_and_the_results():
    n = hf.mask_losses(mask_replay((1.2, 0.06), (1.3, 2.6)))
    assert n.train == {"masked": 1.2, "unmasked": 0.06} and n.real == {"masked": 1.3, "unmasked": 2.6}
    assert n.train_ratio == pytest.approx(0.05) and n.real_ratio == pytest.approx(2.0)
    assert n.guess == pytest.approx(math.log(5))


def test_generation_table_puts_the_symbols_side_by_side():
    table = hf.generation_table(mask_replay((1.2, 0.06), (1.3, 2.6), generations=([4, 3], [3, 3])))
    assert table == {
        "": ["expected", "with the mask", "without the mask"],
        "1": ["E", "E", "D"],
        "2": ["D", "D", "D"],
        "right": ["", "2 of 2", "1 of 2"],
    }


def test_mask_sentence_states_the_effects_with_their_numbers():
    text = hf.mask_sentence(mask_replay((1.2, 0.06), (1.3, 2.6)))  # log 5 = 1.61: 2.6 is worse than guessing
    assert "training loss fell to **0.060** nats, 0.05 × the masked model's 1.200" in text
    assert "its loss is **2.600**, 2.0 × the masked model's 1.300, worse than guessing (log 5 = 1.61)." in text
    assert "the masked model gets 1 of 2 symbols right, the unmasked one 0." in text  # [4, 0] and [0, 0] vs [4, 3]


def test_mask_sentence_says_so_when_an_effect_is_absent():
    no_copy = hf.mask_sentence(mask_replay((1.2, 0.5), (1.3, 1.5)))  # 0.5 ≥ 0.12; 1.5 < log 5: not worse than guessing
    assert "did not fall below a tenth" in no_copy and "fell to" not in no_copy
    assert "1.2 × the masked model's 1.300." in no_copy and "guessing" not in no_copy
    no_harm = hf.mask_sentence(mask_replay((1.2, 0.06), (1.3, 1.3)))
    assert "no worse than the masked model's 1.300: here the mask made no difference on the real task" in no_harm


def test_prompt_sentence_names_the_symbols_and_how_far_into_the_copy():
    rp = mask_replay((1.2, 0.06), (1.3, 2.6))  # CFG: 1 symbol, a run of 2, then the prompt's A of the copy
    assert hf.prompt_sentence(rp).startswith("Each model continues `D A E A` (the probe, 1 symbol into its second")
