"""The "Heads forming" page: every control moved (step slider, play/pause, score picker, tabs, train, cancel); what it
draws equals the shipped replay's numbers; one live training per process, seeded like the replay."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lessons import head_roles as roles
from lessons import heads_forming as hf
from tests.apptest_utils import array, assert_ok, chart, chart_keys, page_path, run_page, texts
from transformer import head_scores as hs
from ui import training

PAGE = page_path("15_Heads_forming")
RP = training.replay()
STEPS = RP.steps.tolist()


def lines(fig: dict) -> dict[str, np.ndarray]:
    return {t["name"]: array(t["y"]) for t in fig["data"]}


def current_step(fig: dict) -> float:
    (line,) = [s for s in fig["layout"]["shapes"] if s["type"] == "line" and s["yref"] == "paper"]
    return line["x0"]


def assert_step(at, step: int) -> None:
    """Every number on the replay tab is the replay's at `step`."""
    assert_ok(at)
    s = RP.snapshots[STEPS.index(step)]
    assert [m.value for m in at.metric] == [f"{s.loss:.3f}", f"{s.loss_repeated:.3f}", f"{s.scores.induction[1].max():.2f}", f"{s.scores.previous_token[0].max():.2f}"]
    assert current_step(chart(at, "heads_loss")) == step == current_step(chart(at, "heads_scores"))
    maps = chart(at, "heads_patterns")
    assert maps["layout"]["title"]["text"] == f"Every head on the probe at step {step}"
    shown = np.stack([array(t["z"]) for t in maps["data"]])  # (8, T, T), NaN above the diagonal
    want = s.patterns.reshape(8, *s.patterns.shape[2:])
    np.testing.assert_allclose(np.nan_to_num(shown), np.tril(want), atol=1e-6)
    recomputed = hs.score_patterns(np.nan_to_num(shown).reshape(s.patterns.shape), RP.probe)  # the scores follow from what is drawn
    np.testing.assert_allclose(recomputed.induction, s.scores.induction, atol=2e-3)
    table = at.dataframe[0].value
    assert list(table["head"]) == hf.head_names(RP) and list(table["Induction"]) == [round(float(v), 3) for v in s.scores.induction.ravel()]


@pytest.fixture
def live(monkeypatch):
    """A fresh live trainer for the test, short and at full speed; stopped afterwards."""
    trainer = training.LiveTraining()
    monkeypatch.setattr(training, "LIVE", trainer)
    monkeypatch.setattr(training, "DUTY", 1.0)
    monkeypatch.setattr(training, "LIVE_CONFIG", dataclasses.replace(training.LIVE_CONFIG, steps=40))
    yield trainer
    if trainer.thread is not None:
        trainer._cancel.set()
        trainer.thread.join(60)


def test_default_view_is_the_replay_at_step_0():
    at = run_page(PAGE)
    assert_step(at, 0)
    loss = lines(chart(at, "heads_loss"))
    np.testing.assert_allclose(loss["loss (all symbols)"], RP.series("loss"), rtol=1e-6)
    np.testing.assert_allclose(loss["each step's own batch"], RP.train_loss, rtol=1e-6)
    pc = hf.phase_change(RP.steps, RP.series("loss"))
    (band,) = [s for s in chart(at, "heads_loss")["layout"]["shapes"] if s["type"] == "rect"]
    assert (band["x0"], band["x1"]) == (STEPS[pc.start], STEPS[pc.end])
    assert f"Phase change, steps {STEPS[pc.start]}–{STEPS[pc.end]}" in texts(at)
    scores = lines(chart(at, "heads_scores"))
    np.testing.assert_allclose(np.stack(list(scores.values())).T, hf.score_curves(RP, "induction"), rtol=1e-6)
    assert at.select_slider(key="heads_step").options == [str(s) for s in STEPS]


def test_step_slider_moves_every_view():
    at = run_page(PAGE)
    formed = training.ti.induction_step(RP).step
    for step in (STEPS[1], STEPS[40], formed, STEPS[-1]):
        at.select_slider(key="heads_step").set_value(step).run()
        assert_step(at, step)
    assert "induction" in at.dataframe[0].value["labels"][4]


def test_score_picker_shows_each_score():
    at = run_page(PAGE)
    for name, info in roles.SCORES.items():
        at.selectbox(key="heads_score").set_value(name).run()
        assert_ok(at)
        fig = chart(at, "heads_scores")
        assert fig["layout"]["title"]["text"] == f"{info.title} score of every head"
        np.testing.assert_allclose(np.stack(list(lines(fig).values())).T, hf.score_curves(RP, name), rtol=1e-6)
        dotted = [s for s in fig["layout"]["shapes"] if s["type"] == "line" and s["xref"] == "paper"]
        assert [s["y0"] for s in dotted] == ([] if roles.threshold_of(name) is None else [roles.threshold_of(name)])
        assert info.latex in texts(at)


def test_play_and_pause():
    at = run_page(PAGE)
    assert at.button(key="heads_play").label == "▶ Play"
    at.button(key="heads_play").click().run()  # playing: each run of the fragment moves one snapshot on
    assert at.session_state["heads_playing"] and at.button(key="heads_play").label == "⏸ Pause"
    assert_step(at, STEPS[1])
    at.run()
    assert_step(at, STEPS[2])
    at.button(key="heads_play").click().run()  # pause
    assert not at.session_state["heads_playing"] and at.button(key="heads_play").label == "▶ Play"
    assert_step(at, STEPS[2])
    at.select_slider(key="heads_step").set_value(STEPS[-1]).run()
    at.button(key="heads_play").click().run()  # from the last snapshot, play starts again at the first
    assert_step(at, STEPS[1])
    at.select_slider(key="heads_step").set_value(STEPS[-2]).run()
    at.run()
    assert_step(at, STEPS[-1])
    at.run()  # the end: playing stops
    assert not at.session_state["heads_playing"]
    assert_step(at, STEPS[-1])


def test_every_score_is_explained():
    at = run_page(PAGE)
    for info in roles.SCORES.values():
        assert f"**{info.title}.** {info.plain}" in texts(at) and info.latex in texts(at)
    assert "labelled **induction**" in texts(at) and "labelled **previous-token**" in texts(at)
    start, run, again = hf.probe_parts(RP)
    assert run == again and f"`{run}`" in texts(at)


def test_live_training_reproduces_the_replay(live):
    at = run_page(PAGE)
    assert not at.toggle(key="heads_watch").value and at.progress[0].proto.text == "No training has run on this server yet."
    at.button(key="heads_train").click().run()
    assert_ok(at)
    assert at.toggle(key="heads_watch").value  # the starter watches
    live.thread.join(60)
    at.run()
    assert_ok(at)
    assert live.state == "done" and at.progress[0].proto.text.startswith("finished: step 40 of 40")
    np.testing.assert_allclose(live.replay.train_loss, RP.train_loss[:40], atol=2e-5)  # the same seed, the same curve
    fig = chart(at, "heads_live_loss")
    np.testing.assert_allclose(lines(fig)["loss (all symbols)"], [s.loss for s in live.replay.snapshots], rtol=1e-6)
    assert chart(at, "heads_live_patterns")["layout"]["title"]["text"] == f"Every head on the probe at step {live.replay.snapshots[-1].step}"
    at.toggle(key="heads_watch").set_value(False).run()  # not watching: no live charts
    assert_ok(at)
    assert chart_keys(at) == ["heads_loss", "heads_scores", "heads_patterns"]
    assert_step(at, 0)  # the replay is untouched


def test_one_training_at_a_time_and_only_its_starter_cancels(live, monkeypatch):
    monkeypatch.setattr(training, "LIVE_CONFIG", dataclasses.replace(training.LIVE_CONFIG, steps=100_000))
    starter = run_page(PAGE)
    starter.button(key="heads_train").click().run()
    assert live.running
    other = run_page(PAGE)
    assert_ok(other)
    assert "A training is running" in texts(other) and not [b for b in other.button if b.key in ("heads_train", "heads_cancel")]
    other.toggle(key="heads_watch").set_value(True).run()  # another student may follow it
    assert_ok(other)
    assert other.progress[0].proto.text.startswith("training: step")
    assert not live.start("someone else", training.LIVE_CONFIG)  # a second start is refused
    assert not live.cancel("someone else") and live.running
    starter.button(key="heads_cancel").click().run()
    live.thread.join(60)
    starter.run()
    assert live.state == "cancelled" and starter.progress[0].proto.text.startswith("cancelled")
    assert starter.button(key="heads_train")  # a new training may start


def test_phase_change_is_where_the_loss_falls_fastest():
    steps = np.array([0, 10, 20, 40, 80, 160, 320, 640, 1280])
    sudden = np.array([4.2, 4.19, 4.18, 4.17, 4.16, 3.2, 2.5, 2.45, 2.4])  # the fall is between 80 and 320
    pc = hf.phase_change(steps, sudden)
    assert (steps[pc.start], steps[pc.end]) == (80, 320)
    assert pc.share == pytest.approx((4.16 - 2.5) / (4.2 - 2.4))
    assert hf.phase_change(steps, 4.2 - 0.001 * steps) is None  # a steady fall: no phase change
    assert hf.phase_change(steps, np.full(len(steps), 4.2)) is None
    assert "no phase change" in hf.phase_sentence(dataclasses.replace(RP, snapshots=[dataclasses.replace(s, loss=4.2 - 0.001 * s.step) for s in RP.snapshots]))


def test_train_duty_setting_is_read_safely():
    """ATLAS_TRAIN_DUTY: a share in (0, 1]; anything else falls back to 0.5 instead of stopping the server."""
    assert training.duty_from(None) == 0.5
    assert training.duty_from("0.25") == 0.25 and training.duty_from("1") == 1.0
    for bad in ("", "abc", "0", "-1", "1.5", "nan", "inf"):
        assert training.duty_from(bad) == 0.5
