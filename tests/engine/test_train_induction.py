"""The attention-only model, its training on repeated runs, and the bundled replay of it.

The acceptance test reads the shipped replay and recomputes every induction score from the stored patterns:
the best layer-1 induction score rises from < 0.1 to ≥ 0.5, and the loss falls in that same window.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from transformer import GPT, ModelConfig, run_trace, trace_names
from transformer import head_scores as hs
from transformer import train_induction as ti
from transformer.cli import main as cli
from transformer.loading import load_model

REPLAY = ti.load_replay()


def induction_window(replay: ti.Replay) -> tuple[int, int]:
    """(a, b): b is the first snapshot whose best layer-1 induction score (recomputed from its patterns) is ≥ 0.5,
    a the last one before b whose score is < 0.1."""
    best = [hs.score_patterns(s.patterns[1], replay.probe).induction.max() for s in replay.snapshots]
    b = next(i for i, v in enumerate(best) if v >= 0.5)
    a = max(i for i in range(b) if best[i] < 0.1)
    return a, b


def test_shipped_replay_shows_the_phase_change():
    snaps = REPLAY.snapshots
    recomputed = np.stack([hs.score_patterns(s.patterns, REPLAY.probe).induction for s in snaps])  # (S, L, nh)
    # the stored scores, from float16 patterns
    np.testing.assert_allclose(recomputed, REPLAY.score("induction"), atol=2e-3)
    assert recomputed[0, 1].max() < 0.1 and recomputed[-1, 1].max() >= 0.5
    a, b = induction_window(REPLAY)
    loss = REPLAY.series("loss")
    assert loss[b] <= loss[a] - 0.3  # the loss falls by more than 0.3 nats inside the window …
    assert loss[a] - loss[b] > loss[0] - loss[a]  # … more than in all the training before it
    # the drop is on the predictable symbols
    assert REPLAY.series("loss_repeated")[b] < REPLAY.series("loss_repeated")[a] - 1.0
    prev = np.stack([hs.score_patterns(s.patterns[0], REPLAY.probe).previous_token for s in snaps])  # (S, nh)
    assert prev[a].max() < 0.2 and prev[b].max() >= 0.5  # the layer-0 previous-token head forms in the same window


def test_shipped_replay_files():
    files = {p.name: p.stat().st_size for p in ti.BUNDLED_REPLAY.iterdir()}
    assert (
        set(files)
        == {"README.md", "config.json", "model.safetensors", "tokenizer.json", ti.REPLAY_JSON, ti.REPLAY_ARRAYS}
    )
    assert sum(files.values()) < 4 * 2**20  # a few MB at most; no pickle anywhere
    doc = json.loads((ti.BUNDLED_REPLAY / ti.REPLAY_JSON).read_text())
    assert doc["steps"][0] == 0 and doc["steps"][-1] == REPLAY.config.steps == len(doc["train_loss"])
    assert doc["steps"] == ti.snapshot_steps(REPLAY.config.steps, REPLAY.config.snapshots)
    assert doc["induction_formed"]["step"] == ti.induction_step(REPLAY).step
    T = REPLAY.config.n_ctx
    assert REPLAY.patterns().shape == (len(doc["steps"]), 2, 4, T, T)
    np.testing.assert_allclose(REPLAY.patterns().sum(-1), 1, atol=2e-2)  # float16 rows still sum to 1
    probe = REPLAY.probe
    r = REPLAY.repeat_from
    np.testing.assert_array_equal(probe[r:], probe[r - REPLAY.config.probe_run : r])
    assert len(set(probe[:r])) == r and len(probe) == T


def test_snapshot_steps_are_log_spaced():
    steps = ti.snapshot_steps(1500, 100)
    assert steps[:3] == [0, 10, 11] and steps[-1] == 1500 and steps == sorted(set(steps)) and len(steps) > 90
    ratios = np.array(steps[2:]) / np.array(steps[1:-1])
    np.testing.assert_allclose(ratios, 150 ** (1 / 99), atol=0.05)  # the same ratio between neighbours (up to rounding)
    assert ti.snapshot_steps(5, 10) == [0, 5]


def test_live_training_reproduces_the_replay():
    """The same seed gives the same numbers: the first 60 steps of a new run equal the shipped replay's."""
    ic = replace(REPLAY.config, threads=1)
    seen = []
    got, model = ti.train_induction(ic, on_snapshot=seen.append, stop=lambda: len(seen) and seen[-1].step >= 60)
    n = len(got.train_loss)
    assert n >= 60 and seen == got.snapshots
    np.testing.assert_allclose(got.train_loss, REPLAY.train_loss[:n], atol=2e-5)  # stored rounded to 5 decimals
    for s, want in zip(got.snapshots, REPLAY.snapshots, strict=False):
        assert s.step == want.step
        assert s.loss == pytest.approx(want.loss, abs=2e-5)
        np.testing.assert_allclose(s.patterns, want.patterns, atol=2e-3)


def test_training_leaves_the_random_state_alone():
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    ti.train_induction(replace(ti.InductionConfig(), steps=2, snapshots=2, eval_size=4))
    np.testing.assert_array_equal(torch.rand(3), before)


@pytest.mark.slow
def test_training_forms_the_induction_head_at_the_shipped_step():
    """The shipped run's configuration, trained again up to the snapshot where the replay's induction head formed
    (step 603 of 1,500; the learning-rate schedule is the full run's, so every step until then is the same)."""
    formed = ti.induction_step(REPLAY).step
    seen = []
    got, _ = ti.train_induction(
        replace(REPLAY.config, threads=1), on_snapshot=seen.append, stop=lambda: len(seen) and seen[-1].step >= formed
    )
    assert got.snapshots[-1].step == formed and ti.induction_step(got).step == formed  # not formed before, formed there
    np.testing.assert_allclose(got.series("loss"), REPLAY.series("loss")[: len(got.snapshots)], atol=1e-4)


def test_trained_model_loads_and_scores():
    lm = load_model(ti.BUNDLED_REPLAY)
    assert lm.cfg.attn_only and lm.cfg.pos_encoding == "rotary"
    assert not any("mlp" in name or "ln2" in name for name in lm.model.state_dict())
    s = hs.score_patterns(hs.patterns_of(lm.model, REPLAY.probe[None])[0], REPLAY.probe)
    # the replay's last snapshot is this model
    np.testing.assert_allclose(s.induction, REPLAY.snapshots[-1].scores.induction, atol=2e-3)
    text = " ".join(ti.SYMBOLS[i] for i in REPLAY.probe)
    tr = run_trace(lm.model, lm.tokenizer, text)
    assert list(tr.encoding.ids) == REPLAY.probe.tolist()
    assert set(tr.arrays()) == set(trace_names(lm.cfg))
    # an unknown word is the special token
    assert run_trace(lm.model, lm.tokenizer, "A b ! c").encoding.labels[2] == ti.UNKNOWN


def test_attention_only_blocks_record_no_mlp(tiny_cfg):
    cfg = replace(tiny_cfg, attn_only=True)
    model = GPT(cfg).eval()
    assert not hasattr(model.blocks[0], "mlp") and not hasattr(model.blocks[0], "ln2")
    rec: dict = {}
    x = torch.randint(0, cfg.vocab_size, (1, 7))
    with torch.no_grad():
        logits = model(x, rec=rec)
    assert not [n for n in rec if ".mlp." in n or ".ln2." in n or n.endswith("hook_mlp_out")]
    torch.testing.assert_close(
        rec["blocks.0.hook_resid_post"], rec["blocks.0.hook_resid_pre"] + rec["blocks.0.hook_attn_out"]
    )
    torch.testing.assert_close(rec["blocks.1.hook_resid_pre"], rec["blocks.0.hook_resid_post"])
    assert logits.shape == (1, 7, cfg.vocab_size)
    with pytest.raises(ValueError, match="pre-norm"):
        ModelConfig(family="bert", attn_only=True)
    assert (
        ModelConfig.from_dict({k: v for k, v in ModelConfig().to_dict().items() if k != "attn_only"}).attn_only is False
    )  # old config.json files


def test_repeated_runs_data():
    rng = np.random.default_rng(0)
    symbols = np.arange(10, 74)
    seqs, predictable = ti.repeated_runs(rng, 200, 33, symbols, 4, 16)
    assert seqs.shape == predictable.shape == (200, 33) and np.isin(seqs, symbols).all()
    for row, pred in zip(seqs, predictable, strict=True):
        (idx,) = np.nonzero(pred)
        run = len(idx) + 1
        assert 4 <= run <= 16 and (np.diff(idx) == 1).all()
        second = idx[0] - 1
        copies = [s for s in range(0, second - run + 1) if (row[s : s + run] == row[second : second + run]).all()]
        assert copies  # an earlier copy of the run exists


def test_train_induction_cli(tmp_path, capsys):
    out = tmp_path / "replay"
    assert cli(["train-induction", "--out", str(out), "--steps", "20"]) == 0
    got = ti.load_replay(out)
    assert got.steps[-1] == 20 and len(got.train_loss) == 20 and "--steps 20 " in got.command
    assert "snapshots" in capsys.readouterr().out
    assert load_model(out).cfg.attn_only
