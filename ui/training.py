"""Streamlit glue of the Heads forming page: the bundled replays (loaded once per process) — the induction heads
forming, and the same model trained with and without the causal mask — their cached figures, and the one live
training a server process runs at a time (either of the two).

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
import pyarrow as pa
import streamlit as st

from figures import colours
from figures import heads_forming as fh
from figures import mask_training as fm
from lessons import head_roles as roles
from lessons import heads_forming as hf
from transformer import train_induction as ti
from transformer import train_mask as tm

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

_REPLAYS: dict[str, ti.Replay | tm.MaskReplay] = {}
_REPLAY_LOCK = threading.Lock()


def _bundled(name: str, load):
    """load(), once per process (outside Streamlit's caches: a "clear cache" does not reload it)."""
    with _REPLAY_LOCK:
        if name not in _REPLAYS:
            _REPLAYS[name] = load()
        return _REPLAYS[name]


def replay() -> ti.Replay:
    """The bundled replay of the induction heads forming."""
    return _bundled("induction", ti.load_replay)


def mask_replay() -> tm.MaskReplay:
    """The bundled replay of the training with and without the causal mask."""
    return _bundled("mask", tm.load_mask_replay)


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
    colors = (colours.BLACK, colours.BLUE, colours.ORANGE)  # all, predictable, random symbols
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


@st.cache_resource(max_entries=64, show_spinner=False)
def replay_table(index: int) -> pa.Table:
    """hf.score_table of the bundled replay at snapshot `index`, as the Arrow table st.dataframe sends: converted once,
    not from a dict on every run (two tables were a fifth of the page's rerun)."""
    return pa.table(hf.score_table(replay(), index))


@st.cache_resource(max_entries=1, show_spinner=False)
def mask_table() -> pa.Table:
    """hf.generation_table of the bundled mask replay, as an Arrow table (see replay_table)."""
    return pa.table(hf.generation_table(mask_replay()))


def mask_chart(mrp: tm.MaskReplay) -> go.Figure:
    """Both models' training and real-task curves."""
    return fm.mask_curves(
        mrp.steps(),
        {hf.RUN_TITLES[run]: mrp.curve(run) for run in tm.RUNS},
        mrp.steps(real=True),
        {hf.RUN_TITLES[run]: mrp.curve(run, real=True) for run in tm.RUNS},
        hf.guess_loss(mrp),
    )


@st.cache_resource(max_entries=1, show_spinner=False)
def mask_figure() -> go.Figure:
    """mask_chart() of the bundled mask replay."""
    return mask_chart(mask_replay())


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


# the trainings a server runs live: kind → (the function a child process runs, a blank replay for a config)
JOBS = {
    "heads": (ti.train_for_queue, lambda ic: ti.Replay(ic, ti.probe_for(ic))),
    "mask": (tm.train_pair_for_queue, lambda ic: tm.MaskReplay(ic, *tm.prompt_for(ic))),
}


class LiveTraining:
    """At most one training at a time in this process, of either kind (JOBS), run in a child process; its reports,
    readable by every session while they arrive (a thread of this process reads them from the child)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.thread: threading.Thread | None = None  # reads the child's reports; ends with the training
        self.replay: ti.Replay | tm.MaskReplay | None = None  # the current (or last) run, growing as reports come
        self.kind = ""  # which training (a key of JOBS)
        self.owner = ""  # the session that started it
        self.state = "idle"  # idle, running, done, cancelled, failed
        self.message = ""  # why it failed
        self.run = 0  # counts the trainings started in this process
        self._cancel = None

    @property
    def running(self) -> bool:
        return self.state == "running"

    def running_other(self, kind: str) -> bool:
        """Is a training of another kind than `kind` running?"""
        return self.running and self.kind != kind

    @property
    def step(self) -> int:
        return 0 if self.replay is None else self.replay.trained_steps

    def start(self, owner: str, ic: ti.InductionConfig, kind: str = "heads") -> bool:
        """Start a training of `kind` for `owner`; False when one is already running."""
        with self._lock:
            if self.running:
                return False
            target, blank = JOBS[kind]
            ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no lock or thread of the server is copied
            self._cancel, reports = ctx.Event(), ctx.Queue()
            child = ctx.Process(
                target=target,
                args=(ic, reports, self._cancel, DUTY, NICE),
                name="atlas-live-training",
                daemon=True,
            )
            self.replay, self.kind, self.owner, self.state, self.message = blank(ic), kind, owner, "running", ""
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

    def _read(self, child, reports, rp: ti.Replay | tm.MaskReplay) -> None:
        """Move the child's reports into `rp` until its last one (or its death)."""
        while True:
            try:
                kind, value = reports.get(timeout=1.0)
            except queue.Empty:
                if child.is_alive():
                    continue
                kind, value = "failed", f"the training process ended (exit code {child.exitcode})"
            if kind in ("done", "cancelled", "failed"):
                self.message, self.state = value, kind
                child.join(5)
                return
            rp.add(kind, value)

    @property
    def snapshots(self) -> int:
        """Snapshots (or, training with and without the mask, points) the current (or last) run has taken so far."""
        if self.replay is None:
            return 0
        return len(self.replay.points if self.kind == "mask" else self.replay.snapshots)

    @property
    def progress(self) -> float:
        return 0.0 if self.replay is None else min(1.0, self.step / self.replay.config.steps)

    def view(self, n: int | None = None) -> ti.Replay | tm.MaskReplay | None:
        """A copy of the current run's replay with its first n snapshots (or points), all so far by default; None
        before the first."""
        rp = self.replay
        n = self.snapshots if n is None else n
        if rp is None or not n:
            return None
        if self.kind == "mask":
            return dataclasses.replace(rp, points=rp.points[:n])
        return dataclasses.replace(rp, snapshots=rp.snapshots[:n], train_loss=rp.train_loss[: rp.snapshots[n - 1].step])


LIVE = LiveTraining()


def start_live(owner: str, kind: str = "heads") -> None:
    """A train button's callback: start the live training of `kind` (unless one runs) and watch it."""
    if LIVE.start(owner, LIVE_CONFIG, kind):
        st.session_state[f"{kind}_watch"] = True


def train_button(where, kind: str, me: str) -> None:
    """In `where`: the button that starts the live training of `kind`, its cancel button for the session that started
    it, or a note that another session's training runs."""
    if LIVE.running and LIVE.owner == me and LIVE.kind == kind:
        where.button("✋ Cancel the training", key=f"{kind}_cancel", on_click=LIVE.cancel, args=(me,))
    elif LIVE.running:
        whose = "yours" if LIVE.owner == me else "started by someone else"
        where.info(
            f"A training is running ({whose}; one at a time on this server): "
            + (
                "watch the replay above, or switch on “Watch the live training” to follow it."
                if LIVE.kind == kind
                else "wait for it to end, or watch the replay."
            )
        )
    else:
        label = "🏋️ Train from scratch" if kind == "heads" else "🏋️ Train both from scratch"
        where.button(label, key=f"{kind}_train", on_click=start_live, args=(me, kind))


@st.cache_resource(max_entries=4, show_spinner=False)
def live_figures(run: int, snapshots: int, per_row: int) -> dict[str, go.Figure] | None:
    """charts() of live run number `run` at its latest snapshot, once per new snapshot for every watcher."""
    view = LIVE.view(snapshots) if LIVE.run == run and LIVE.kind == "heads" else None
    return None if view is None else charts(view, snapshots - 1, "induction", per_row)


@st.cache_resource(max_entries=4, show_spinner=False)
def live_mask_figure(run: int, points: int) -> go.Figure | None:
    """mask_chart() of live run number `run` at its latest point, once per new point for every watcher."""
    view = LIVE.view(points) if LIVE.run == run and LIVE.kind == "mask" else None
    return None if view is None else mask_chart(view)


STATES = {"running": "training", "done": "finished", "cancelled": "cancelled"}


def live_status(live: LiveTraining, kind: str = "heads") -> str:
    """One line on the live training of `kind`: where it is, its losses, and when the induction head formed (Heads
    forming) or how each model does on the real task (with and without the mask)."""
    rp = live.view()
    if live.state == "idle" or live.replay is None or live.kind != kind:
        return "No live training of this kind to show yet."
    state = STATES.get(live.state, f"failed ({live.message})")
    head = f"{state}: step {live.step} of {live.replay.config.steps}"
    if rp is None:
        return head
    if kind == "mask":
        train = ", ".join(f"{hf.RUN_TITLES[run]} {loss:.3f}" for run, loss in rp.points[-1].train.items())
        real = ", ".join(f"{hf.RUN_TITLES[run]} {r.loss_real:.3f}" for run, r in rp.results.items())
        return f"{head}, training loss {train}" + (f"; on the real task {real}" if real else "")
    formed = ti.induction_step(rp)
    found = "" if formed is None else f"; induction head at step {formed.step} ({formed.seconds:.0f} s)"
    return f"{head}, loss {rp.snapshots[-1].loss:.3f}{found}"


def session_id() -> str:
    """A token naming this browser session (to let only the starter cancel)."""
    return st.session_state.setdefault("heads_session", uuid.uuid4().hex)
