"""The "Heads forming" page: every control moved (step slider, play/pause, jump, score picker, train, cancel); what it
draws equals the shipped replays' numbers, read here from their files (replay.json, replay.safetensors; the mask
training's replay.json) and recomputed by the scores' formulas; one live training per process, of either kind, seeded
like the replays."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from safetensors.numpy import load_file

from lessons import head_roles as roles
from tests.apptest_utils import array, assert_ok, chart, chart_keys, page_path, run_page, texts
from transformer import head_scores as hs
from transformer import train_induction as ti
from ui import training

PAGE = page_path("15_Heads_forming")
MASK = json.loads((ti.BUNDLED_REPLAY.parent / "mask" / "replay.json").read_text())  # the mask training, as stored
DOC = json.loads((ti.BUNDLED_REPLAY / ti.REPLAY_JSON).read_text())  # the replay the page shows, as stored
ARRAYS = load_file(str(ti.BUNDLED_REPLAY / ti.REPLAY_ARRAYS))
STEPS, LOSS, PROBE = DOC["steps"], np.array(DOC["loss"]), DOC["probe"]
N_LAYER, N_HEAD, PREFIX, RUN = (DOC["config"][k] for k in ("n_layer", "n_head", "probe_prefix", "probe_run"))
HEADS = [f"{layer}.{head}" for layer in range(N_LAYER) for head in range(N_HEAD)]
THRESHOLD = {name: t for name, t in hs.LABELS.values()}  # score → the value from which it labels a head


def score(name: str) -> np.ndarray:
    """One stored head score over training, (S, L, nh)."""
    return ARRAYS[f"scores.{name}"].astype(np.float64)


def induction_by_hand(pattern: np.ndarray, ids: list[int]) -> np.ndarray:
    """I = mean over the queries i that have a target of Σ α[i, j] over the keys 1 ≤ j < i with x_{j−1} = x_i;
    pattern (…, T, T) → (…)."""
    targets = {i: [j for j in range(1, i) if ids[j - 1] == ids[i]] for i in range(len(ids))}
    rows = {i: js for i, js in targets.items() if js}
    assert len(rows) == RUN  # the probe's second copy: one target each, the key after the earlier copy
    return np.mean([pattern[..., i, js].sum(-1) for i, js in rows.items()], axis=0)


def previous_by_hand(pattern: np.ndarray) -> np.ndarray:
    """P = mean over the queries i ≥ 1 of α[i, i − 1]; pattern (…, T, T) → (…)."""
    return np.mean([pattern[..., i, i - 1] for i in range(1, pattern.shape[-1])], axis=0)


def lines(fig: dict) -> dict[str, np.ndarray]:
    return {t["name"]: array(t["y"]) for t in fig["data"]}


def current_step(fig: dict) -> float:
    (line,) = [s for s in fig["layout"]["shapes"] if s["type"] == "line" and s["yref"] == "paper"]
    return line["x0"]


def assert_step(at, step: int) -> None:
    """Every number on the replay tab is the replay's at `step`."""
    assert_ok(at)
    k = STEPS.index(step)
    ind, prev = score("induction")[k], score("previous_token")[k]  # (L, nh)
    metrics = [f"{DOC['loss'][k]:.3f}", f"{DOC['loss_repeated'][k]:.3f}", f"{ind[1].max():.2f}", f"{prev[0].max():.2f}"]
    assert [m.value for m in at.metric][:4] == metrics  # the replay's (the mask training's follow)
    assert current_step(chart(at, "heads_loss")) == step == current_step(chart(at, "heads_scores"))
    maps = chart(at, "heads_patterns")
    assert maps["layout"]["title"]["text"] == f"Every head on the probe at step {step}"
    shown = np.nan_to_num(np.stack([array(t["z"]) for t in maps["data"]]))  # (L·nh, T, T), NaN above the diagonal
    stored = ARRAYS["patterns"][k].astype(np.float32)  # (L, nh, T, T)
    np.testing.assert_allclose(shown, np.tril(stored.reshape(shown.shape)), atol=1e-6)
    drawn = shown.reshape(stored.shape)  # the scores follow from what is drawn (float16 patterns: 2e-3)
    np.testing.assert_allclose(induction_by_hand(drawn, PROBE), ind, atol=2e-3)
    np.testing.assert_allclose(previous_by_hand(drawn), prev, atol=2e-3)
    table = at.dataframe[0].value
    assert list(table["head"]) == HEADS and list(table["Induction"]) == [round(float(v), 3) for v in ind.ravel()]
    for label, name in (("induction", "induction"), ("previous-token", "previous_token")):
        assert [label in cell for cell in table["labels"]] == list(score(name)[k].ravel() >= THRESHOLD[name])


def assert_sudden_fall(a: int, b: int) -> None:
    """The loss's rule for a phase change holds for snapshots a → b: the steepest fall per step lies inside, every
    fall per step inside is at least a third of it and the ones just outside are not; it holds ≥ 40 % of the whole drop
    within ≤ 40 % of the steps."""
    rate = -np.diff(LOSS) / np.diff(STEPS)  # fall per step between neighbouring snapshots, (S−1,)
    steepest = rate.max()
    assert a <= rate.argmax() < b and (rate[a:b] >= steepest / 3).all()
    assert (a == 0 or rate[a - 1] < steepest / 3) and (b == len(rate) or rate[b] < steepest / 3)
    assert (LOSS[a] - LOSS[b]) / (LOSS[0] - LOSS.min()) >= 0.4 and STEPS[b] - STEPS[a] <= 0.4 * (STEPS[-1] - STEPS[0])


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
        trainer.thread.join(240)


def test_default_view_is_the_replay_at_step_0():
    at = run_page(PAGE)
    assert_step(at, 0)
    loss = lines(chart(at, "heads_loss"))
    np.testing.assert_allclose(loss["loss (all symbols)"], LOSS, rtol=1e-6)
    np.testing.assert_allclose(loss["each step's own batch"], DOC["train_loss"], rtol=1e-6)
    (band,) = [s for s in chart(at, "heads_loss")["layout"]["shapes"] if s["type"] == "rect"]
    a, b = STEPS.index(band["x0"]), STEPS.index(band["x1"])
    assert_sudden_fall(a, b)
    share = (LOSS[a] - LOSS[b]) / (LOSS[0] - LOSS.min())
    ind = score("induction")[:, N_LAYER - 1].max(-1)  # (S,) the best in the last layer
    prev = score("previous_token")[:, 0].max(-1)  # (S,) the best in layer 0
    said = texts(at)
    assert f"Phase change, steps {STEPS[a]}–{STEPS[b]}" in said
    assert f"{share:.0%} of the loss's whole drop happens there ({LOSS[a]:.2f} → {LOSS[b]:.2f} nats)" in said
    assert f"induction score of the last layer goes {ind[a]:.2f} → {ind[b]:.2f}" in said
    assert f"previous-token score of layer 0 goes {prev[a]:.2f} → {prev[b]:.2f}" in said
    scores = lines(chart(at, "heads_scores"))
    assert list(scores) == [f"head {h}" for h in HEADS]
    np.testing.assert_allclose(np.stack(list(scores.values())).T, score("induction").reshape(len(STEPS), -1), rtol=1e-6)
    assert at.select_slider(key="heads_step").options == [str(s) for s in STEPS]


def test_step_slider_moves_every_view():
    at = run_page(PAGE)
    formed = STEPS[np.flatnonzero(score("induction")[:, 1].max(-1) >= 0.5)[0]]  # the first with an induction head
    assert f"induction score ≥ 0.5 in layer 1 at step {formed})" in texts(at)
    for step in (STEPS[1], STEPS[40], formed, STEPS[-1]):
        at.select_slider(key="heads_step").set_value(step).run()
        assert_step(at, step)
    assert "induction" in at.dataframe[0].value["labels"][4]


def test_score_picker_shows_each_score():
    at = run_page(PAGE)
    for name in hs.SCORE_NAMES:
        info = roles.SCORES[name]
        at.selectbox(key="heads_score").set_value(name).run()
        assert_ok(at)
        fig = chart(at, "heads_scores")
        assert fig["layout"]["title"]["text"] == f"{info.title} score of every head"
        shown = np.stack(list(lines(fig).values())).T  # (S, L·nh)
        np.testing.assert_allclose(shown, score(name).reshape(len(STEPS), -1), rtol=1e-6)
        dotted = [s for s in fig["layout"]["shapes"] if s["type"] == "line" and s["xref"] == "paper"]
        assert [s["y0"] for s in dotted] == ([THRESHOLD[name]] if name in THRESHOLD else [])
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


def test_jump_goes_to_just_before_the_induction_score_rises():
    """From the stored numbers: at the step the button jumps to, layer 1's best induction score is still low; within
    the snapshots that ▶ Play shows in the next 10 s it passes 0.5, with its largest rise and the loss's steepest fall
    between snapshots; before that step it never rose as much."""
    at = run_page(PAGE)
    at.select_slider(key="heads_step").set_value(STEPS[-1]).run()
    at.button(key="heads_play").click().run()  # playing: the jump stops it
    at.button(key="heads_jump").click().run()
    step = at.select_slider(key="heads_step").value
    assert not at.session_state["heads_playing"]
    assert_step(at, step)
    k = STEPS.index(step)
    ind = score("induction")[:, 1].max(-1)  # (S,) the best in layer 1
    rise, fall = np.diff(ind), -np.diff(LOSS) / np.diff(STEPS)  # between neighbouring snapshots, (S−1,)
    shown = int(10 / training.PLAY_SECONDS)  # snapshots played in 10 s
    assert ind[k] < 0.3 and ind[k + shown] >= 0.5
    assert k <= rise.argmax() < k + shown and k <= fall.argmax() < k + shown
    assert rise[:k].max() < rise.max() / 2
    at.button(key="heads_play").click().run()  # play goes on from there
    assert_step(at, STEPS[k + 1])


def test_every_score_is_explained():
    at = run_page(PAGE)
    for name in hs.SCORE_NAMES:
        info = roles.SCORES[name]
        assert f"**{info.title}.** {info.plain}" in texts(at) and info.latex in texts(at)
    assert "labelled **induction**" in texts(at) and "labelled **previous-token**" in texts(at)
    words = [ti.SYMBOLS[i] for i in PROBE]
    start, run, again = (" ".join(w) for w in (words[:PREFIX], words[PREFIX : PREFIX + RUN], words[PREFIX + RUN :]))
    assert len(words) == PREFIX + 2 * RUN and run == again
    assert f"`{start}`, then a run `{run}`, then the run again `{again}`." in texts(at)


def test_live_training_reproduces_the_replay(live):
    at = run_page(PAGE)
    assert not at.toggle(key="heads_watch").value
    assert at.progress[0].proto.text == "No live training of this kind to show yet."
    at.button(key="heads_train").click().run()
    assert_ok(at)
    assert at.toggle(key="heads_watch").value  # the starter watches
    live.thread.join(240)
    at.run()
    assert_ok(at)
    assert live.state == "done" and at.progress[0].proto.text.startswith("finished: step 40 of 40")
    np.testing.assert_allclose(live.replay.train_loss, DOC["train_loss"][:40], atol=2e-5)  # same seed, same curve
    fig = chart(at, "heads_live_loss")
    np.testing.assert_allclose(lines(fig)["loss (all symbols)"], [s.loss for s in live.replay.snapshots], rtol=1e-6)
    last = live.replay.snapshots[-1].step
    assert chart(at, "heads_live_patterns")["layout"]["title"]["text"] == f"Every head on the probe at step {last}"
    at.toggle(key="heads_watch").set_value(False).run()  # not watching: no live charts
    assert_ok(at)
    assert chart_keys(at) == ["heads_loss", "heads_scores", "heads_patterns", "mask_loss"]
    assert_step(at, 0)  # the replay is untouched


def test_one_training_at_a_time_and_only_its_starter_cancels(live, monkeypatch):
    monkeypatch.setattr(training, "LIVE_CONFIG", dataclasses.replace(training.LIVE_CONFIG, steps=100_000))
    starter = run_page(PAGE)
    starter.button(key="heads_train").click().run()
    assert live.running
    other = run_page(PAGE)
    assert_ok(other)
    assert "A training is running" in texts(other)
    assert not [b for b in other.button if b.key in ("heads_train", "heads_cancel")]
    other.toggle(key="heads_watch").set_value(True).run()  # another student may follow it
    assert_ok(other)
    assert other.progress[0].proto.text.startswith("training: step")
    assert not live.start("someone else", training.LIVE_CONFIG)  # a second start is refused
    assert not live.cancel("someone else") and live.running
    starter.button(key="heads_cancel").click().run()
    live.thread.join(240)
    starter.run()
    assert live.state == "cancelled" and starter.progress[0].proto.text.startswith("cancelled")
    assert starter.button(key="heads_train")  # a new training may start


def test_train_duty_setting_is_read_safely():
    """ATLAS_TRAIN_DUTY: a share in (0, 1]; anything else falls back to 0.5 instead of stopping the server."""
    assert training.duty_from(None) == 0.5
    assert training.duty_from("0.25") == 0.25 and training.duty_from("1") == 1.0
    for bad in ("", "abc", "0", "-1", "1.5", "nan", "inf"):
        assert training.duty_from(bad) == 0.5


def test_mask_section_shows_the_replays_numbers():
    at = run_page(PAGE)
    train = {run: MASK["train_loss"][run][-1] for run in ("masked", "unmasked")}
    real = {run: MASK["results"][run]["loss_real"] for run in ("masked", "unmasked")}
    assert train["unmasked"] < 0.1 * train["masked"] and real["unmasked"] > 1.8 * real["masked"]  # the acceptance
    shown = {m.label: m.value for m in at.metric}
    for run, name in (("masked", "with the mask"), ("unmasked", "without the mask")):
        assert shown[f"Training loss, {name}"] == f"{train[run]:.3f}"
        assert shown[f"Real task, {name}"] == f"{real[run]:.3f}"
    fig = chart(at, "mask_loss")
    curves = {t["name"]: (array(t["x"]), array(t["y"])) for t in fig["data"]}
    for run, name in (("masked", "with the mask"), ("unmasked", "without the mask")):
        x, y = curves[name]  # the solid line, named by its model (the legend entry)
        np.testing.assert_array_equal(x, MASK["steps"])
        np.testing.assert_allclose(y, MASK["train_loss"][run], rtol=1e-6)
        x, y = curves[f"{name}: real task (future hidden)"]
        np.testing.assert_array_equal(x, MASK["real_steps"])
        np.testing.assert_allclose(y, MASK["real_loss"][run], rtol=1e-6)
    (guess,) = fig["layout"]["shapes"]
    assert guess["y0"] == pytest.approx(np.log(64))
    said = texts(at)
    (tm, tu), (rm, ru) = train.values(), real.values()
    assert f"fell to **{tu:.3f}** nats, {tu / tm:.2f} × the masked model's {tm:.3f}" in said
    assert f"its loss is **{ru:.3f}**, {ru / rm:.1f} × the masked model's {rm:.3f}" in said
    assert "worse than guessing (log 64 = 4.16)" in said
    words = {key: [ti.SYMBOLS[i] for i in MASK[key]] for key in ("prompt", "answer")}
    gen = {run: [ti.SYMBOLS[i] for i in MASK["results"][run]["generation"]] for run in ("masked", "unmasked")}
    assert f"continues `{' '.join(words['prompt'])}` (the probe, 3 symbols into its second copy)" in said
    table = at.dataframe[1].value
    n = len(words["answer"])
    assert [list(table.iloc[row, 1 : n + 1]) for row in range(3)] == [words["answer"], gen["masked"], gen["unmasked"]]
    right = [sum(a == b for a, b in zip(gen[run], words["answer"], strict=True)) for run in ("masked", "unmasked")]
    assert right[0] == n and right[1] <= n // 2
    assert list(table["right"]) == ["", f"{right[0]} of {n}", f"{right[1]} of {n}"]
    assert f"the masked model gets {right[0]} of {n} symbols right, the unmasked one {right[1]}." in said


def test_live_mask_training_repeats_the_replays_start(live, monkeypatch):
    """Ten steps live: within the warm-up the learning rate does not depend on the length of the training, so both
    curves repeat the bundled replay's first points (same seed, same batches)."""
    monkeypatch.setattr(training, "LIVE_CONFIG", dataclasses.replace(training.LIVE_CONFIG, steps=10))
    at = run_page(PAGE)
    assert at.progress[1].proto.text == "No live training of this kind to show yet."
    at.button(key="mask_train").click().run()
    assert_ok(at)
    assert at.toggle(key="mask_watch").value and not at.toggle(key="heads_watch").value
    live.thread.join(240)
    at.run()
    assert_ok(at)
    assert live.state == "done" and at.progress[1].proto.text.startswith("finished: step 10 of 10, training loss")
    assert at.progress[0].proto.text == "No live training of this kind to show yet."  # the heads section's
    fig = chart(at, "mask_live_loss")
    curves = {t["name"]: array(t["y"]) for t in fig["data"]}
    for run, name in (("masked", "with the mask"), ("unmasked", "without the mask")):
        first = MASK["train_loss"][run][:3]  # steps 0, 5, 10
        np.testing.assert_allclose(curves[name], first, atol=2e-5)
        assert curves[f"{name}: real task (future hidden)"][0] == pytest.approx(MASK["real_loss"][run][0], abs=2e-5)
        loss = live.replay.results[run].loss_real
        assert f"{name} {loss:.3f}" in at.progress[1].proto.text.split("on the real task")[1]


def test_one_training_of_either_kind_at_a_time(live, monkeypatch):
    monkeypatch.setattr(training, "LIVE_CONFIG", dataclasses.replace(training.LIVE_CONFIG, steps=100_000))
    starter = run_page(PAGE)
    starter.button(key="mask_train").click().run()
    assert live.running and live.kind == "mask"
    assert starter.button(key="mask_cancel") and not [b for b in starter.button if b.key.startswith("heads_t")]
    assert "A training is running (yours; one at a time on this server): wait for it to end" in texts(starter)
    other = run_page(PAGE)
    assert not [b for b in other.button if b.key in ("heads_train", "heads_cancel", "mask_train", "mask_cancel")]
    assert "A training is running (started by someone else" in texts(other)
    starter.button(key="mask_cancel").click().run()
    live.thread.join(240)
    starter.run()
    assert live.state == "cancelled" and starter.progress[1].proto.text.startswith("cancelled")
    assert starter.button(key="mask_train") and starter.button(key="heads_train")
