"""Streamlit glue of the Heads forming page: the bundled replay (loaded once per process), its cached figures, and
the one live training a server process runs at a time.

The live training runs in a child process with the replay's config and seed, so a class sees the replay's curve
again. In its own process it does not take the server's GIL; it uses one torch thread, runs at niceness NICE and
computes ATLAS_TRAIN_DUTY of the time (default 0.5: it sleeps as long as it computed), so that the other students'
pages stay fast. A thread of the server reads its snapshots as they come. Only the session that started it may
cancel it.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import queue
import threading
import uuid

import plotly.graph_objects as go
import streamlit as st

from figures import heads_forming as fh
from lessons import head_roles as roles
from lessons import heads_forming as hf
from transformer import train_induction as ti

# one snapshot further every this many seconds while the replay plays
# (a rerun of the replay view each: 50 students playing = ~60 reruns/s)
PLAY_SECONDS = 0.8
LIVE_SECONDS = 1.0  # the live view refreshes every this many seconds
LIVE_CONFIG = dataclasses.replace(ti.InductionConfig(), threads=1)  # the replay's settings, seed and one torch thread


def duty_from(text: str | None) -> float:
    """ATLAS_TRAIN_DUTY, the share of the time the live training computes: a number in (0, 1]; 0.5 when unset or not
    such a number (a bad setting must not stop the server from starting)."""
    try:
        value = float(text) if text is not None else 0.5
    except ValueError:
        return 0.5
    return value if 0 < value <= 1 else 0.5


DUTY = duty_from(os.environ.get("ATLAS_TRAIN_DUTY"))
NICE = 10  # the training process' niceness: the server's own threads come first

_REPLAY: ti.Replay | None = None
_REPLAY_LOCK = threading.Lock()


def replay() -> ti.Replay:
    """The bundled replay, read once per process (outside Streamlit's caches: a "clear cache" does not reload it)."""
    global _REPLAY
    with _REPLAY_LOCK:
        if _REPLAY is None:
            _REPLAY = ti.load_replay()
        return _REPLAY


def charts(rp: ti.Replay, index: int, score: str, per_row: int) -> dict[str, go.Figure]:
    """The page's three figures at snapshot `index`: the loss curve, one score's curve per head, every head's pattern
    (at most per_row maps in a row)."""
    steps, cfg = rp.steps, rp.config
    step = int(steps[index])
    phase = hf.phase_change(steps, rp.series("loss"))
    band = None if phase is None else (int(steps[phase.start]), int(steps[phase.end]))
    text = "" if phase is None else f"phase change: {phase.share:.0%} of the drop"
    losses = {
        "loss (all symbols)": rp.series("loss"),
        "loss on the predictable symbols": rp.series("loss_repeated"),
        "loss on the random symbols": rp.series("loss_random"),
    }
    colors = ("#1f4e79", "#2ca02c", "#d62728")
    train = ("each step's own batch", range(1, len(rp.train_loss) + 1), rp.train_loss)
    loss = fh.step_lines(
        steps,
        losses,
        "Loss while training (nats per symbol)",
        "loss (nats)",
        current=step,
        band=band,
        band_text=text,
        faint=train,
        colors=colors,
    )
    info = roles.SCORES[score]
    curves = dict(zip([f"head {n}" for n in hf.head_names(rp)], hf.score_curves(rp, score).T, strict=True))
    head_colors = fh.head_colors(cfg.n_layer, cfg.n_head)
    scores = fh.step_lines(
        steps,
        curves,
        f"{info.title} score of every head",
        info.title.lower(),
        current=step,
        band=band,
        threshold=roles.threshold_of(score),
        colors=head_colors,
    )
    title = f"Every head on the probe at step {step}"
    maps = fh.head_patterns(
        rp.snapshots[index].patterns,
        hf.probe_labels(rp),
        hf.head_titles(rp, index),
        title,
        repeat_from=rp.repeat_from,
        run=cfg.probe_run,
        per_row=per_row,
    )
    return {"loss": loss, "scores": scores, "patterns": maps}


@st.cache_resource(max_entries=64, show_spinner=False)
def replay_figures(index: int, score: str, per_row: int) -> dict[str, go.Figure]:
    """charts() of the bundled replay, cached per (snapshot, score, maps per row)."""
    return charts(replay(), index, score, per_row)


def advance(key: str, steps: list[int]) -> bool:
    """Move the step slider `key` one snapshot on; False (and no move) at the last one."""
    i = steps.index(st.session_state.get(key, steps[0]))
    if i + 1 >= len(steps):
        return False
    st.session_state[key] = steps[i + 1]
    return True


def toggle_play(playing_key: str, step_key: str, steps: list[int]) -> None:
    """The play button's callback: play or pause; playing from the last snapshot starts again from the first."""
    playing = not st.session_state.get(playing_key, False)
    st.session_state[playing_key] = playing
    if playing and st.session_state.get(step_key) == steps[-1]:
        st.session_state[step_key] = steps[0]


def jump(playing_key: str, step_key: str, step: int) -> None:
    """The jump button's callback: stop playing and go to `step` (▶ Play goes on from there)."""
    st.session_state[playing_key] = False
    st.session_state[step_key] = step


def formed_step(rp: ti.Replay) -> str:
    """When the replay's induction head formed (layer 1, score ≥ 0.5), as text."""
    s = ti.induction_step(rp)
    return "never" if s is None else f"step {s.step}"


class LiveTraining:
    """At most one training at a time in this process, run in a child process; its snapshots, readable by every
    session while they arrive (a thread of this process reads them from the child)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.thread: threading.Thread | None = None  # reads the child's reports; ends with the training
        self.replay: ti.Replay | None = None  # the current (or last) run: snapshots appear as they are taken
        self.owner = ""  # the session that started it
        self.state = "idle"  # idle, running, done, cancelled, failed
        self.message = ""  # why it failed
        self.run = 0  # counts the trainings started in this process
        self._cancel = None

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def step(self) -> int:
        return 0 if self.replay is None else len(self.replay.train_loss)

    def start(self, owner: str, ic: ti.InductionConfig) -> bool:
        """Start a training for `owner`; False when one is already running."""
        with self._lock:
            if self.running:
                return False
            ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no lock or thread of the server is copied
            self._cancel, reports = ctx.Event(), ctx.Queue()
            child = ctx.Process(
                target=ti.train_for_queue,
                args=(ic, reports, self._cancel, DUTY, NICE),
                name="atlas-live-training",
                daemon=True,
            )
            self.replay, self.owner, self.state, self.message = ti.Replay(ic, ti.probe_for(ic)), owner, "running", ""
            self.run += 1
            child.start()
            self.thread = threading.Thread(
                target=self._read, args=(child, reports, self.replay), name="atlas-live-training-reports", daemon=True
            )
            self.thread.start()
            return True

    def cancel(self, owner: str) -> bool:
        """Stop the running training if `owner` started it."""
        if self.running and owner == self.owner:
            self._cancel.set()
            return True
        return False

    def _read(self, child, reports, rp: ti.Replay) -> None:
        """Move the child's reports into `rp` until its last one (or its death)."""
        while True:
            try:
                kind, value = reports.get(timeout=1.0)
            except queue.Empty:
                if child.is_alive():
                    continue
                kind, value = "failed", f"the training process ended (exit code {child.exitcode})"
            if kind == "losses":
                rp.train_loss.extend(value)
            elif kind == "snapshot":
                rp.snapshots.append(value)
            else:
                self.message, self.state = value, kind
                child.join(5)
                return

    @property
    def snapshots(self) -> int:
        """Snapshots the current (or last) run has taken so far."""
        return 0 if self.replay is None else len(self.replay.snapshots)

    @property
    def progress(self) -> float:
        return 0.0 if self.replay is None else min(1.0, self.step / self.replay.config.steps)

    def view(self, n: int | None = None) -> ti.Replay | None:
        """A copy of the current run's replay with its first n snapshots
        (all so far by default; None before the first)."""
        rp = self.replay
        n = self.snapshots if n is None else n
        if rp is None or not n:
            return None
        return dataclasses.replace(rp, snapshots=rp.snapshots[:n], train_loss=rp.train_loss[: rp.snapshots[n - 1].step])


LIVE = LiveTraining()


def start_live(owner: str) -> None:
    """The train button's callback: start the live training (unless one runs) and watch it."""
    if LIVE.start(owner, LIVE_CONFIG):
        st.session_state["heads_watch"] = True


@st.cache_resource(max_entries=4, show_spinner=False)
def live_figures(run: int, snapshots: int, per_row: int) -> dict[str, go.Figure] | None:
    """charts() of live run number `run` at its latest snapshot, once per new snapshot for every watcher."""
    view = LIVE.view(snapshots) if LIVE.run == run else None
    return None if view is None else charts(view, snapshots - 1, "induction", per_row)


def live_status(live: LiveTraining) -> str:
    """One line on the live training: where it is, its loss, when its induction head formed."""
    rp = live.view()
    if live.state == "idle" or live.replay is None:
        return "No training has run on this server yet."
    steps = live.replay.config.steps
    loss = f", loss {rp.snapshots[-1].loss:.3f}" if rp is not None else ""
    formed = None if rp is None else ti.induction_step(rp)
    head = "" if formed is None else f"; induction head at step {formed.step} ({formed.seconds:.0f} s)"
    state = {
        "running": "training",
        "done": "finished",
        "cancelled": "cancelled",
        "failed": f"failed ({live.message})",
    }[live.state]
    return f"{state}: step {live.step} of {steps}{loss}{head}"


def session_id() -> str:
    """A token naming this browser session (to let only the starter cancel)."""
    return st.session_state.setdefault("heads_session", uuid.uuid4().hex)
