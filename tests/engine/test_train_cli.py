"""The command line: a short training run, and `trace` exporting every tensor to .npz."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import CORPUS, ROOT, SENTENCES
from transformer import Interventions, cli
from transformer.config import ModelConfig
from transformer.loading import load_model
from transformer.trace import run_trace, trace_names
from transformer.trace_file import load_trace
from transformer.train import TrainConfig, train


def run_cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "transformer", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


# ---------------------------------------------------------------- train


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("train") / "smoke-gpt"
    proc = run_cli("train", "--short", "--corpus", str(CORPUS), "--out", str(out))
    return out, proc


def test_short_training_writes_a_model_directory(trained):
    out, proc = trained
    assert proc.returncode == 0, proc.stderr
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= {p.name for p in out.iterdir()}
    assert "step 30" in proc.stderr and "30/30" in proc.stderr  # validation lines and the progress bar


def test_card_reports_the_printed_losses(trained):
    out, proc = trained
    val, bigram = map(float, re.search(r"val loss (\d+\.\d+)\s+bigram (\d+\.\d+)", proc.stdout).groups())
    card = (out / "README.md").read_text()
    assert f"| this transformer | **{val:.4f}** |" in card
    assert re.search(rf"\| bigram baseline \(add-[\d.e-]+ smoothing, same tokens\) \| {bigram:.4f} \|", card)
    diff = float(re.search(r"\| difference \| (-?\d+\.\d+) \|", card).group(1))
    assert diff == pytest.approx(bigram - val, abs=1.5e-4)  # the printed losses are rounded to 4 decimals
    assert "python -m transformer train --short" in card and "tinyshakespeare.txt" in card


def test_loss_goes_down(trained):
    out, _ = trained
    rows = re.findall(r"^\| (\d+) \| (\d+\.\d+) \| (\d+\.\d+) \|$", (out / "README.md").read_text(), flags=re.M)
    steps, val = [int(r[0]) for r in rows], [float(r[2]) for r in rows]
    assert steps == [10, 20, 30]
    assert val[-1] < val[0] - 0.1


def test_trained_directory_loads_and_traces(trained):
    lm = load_model(trained[0])
    assert lm.cfg == ModelConfig(vocab_size=300, n_ctx=32, d_model=32, n_layer=2, n_head=4, d_mlp=64)
    assert lm.tokenizer.vocab_size == 300
    tr = run_trace(lm.model, lm.tokenizer, "ROMEO: But soft, what light")
    assert np.isfinite(tr["logits"]).all()
    assert "bigram" in lm.card


def test_training_is_reproducible(tmp_path):
    """Same seed, same corpus: byte-identical weights and tokenizer."""
    cfg = ModelConfig(vocab_size=280, n_ctx=16, d_model=16, n_layer=1, n_head=2, d_mlp=32)
    tc = TrainConfig(steps=4, batch_size=4, warmup=2, eval_every=2, eval_batches=1, max_chars=20_000, threads=1)
    threads = torch.get_num_threads()
    try:
        for run in ("a", "b"):
            train(CORPUS, tmp_path / run, cfg, tc)
    finally:
        torch.set_num_threads(threads)
    for name in ("model.safetensors", "tokenizer.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


# ---------------------------------------------------------------- trace export


def export(tiny_dir: Path, out: Path, *extra: str, text: str = SENTENCES[2]) -> dict[str, np.ndarray]:
    assert cli.main(["trace", "--model", str(tiny_dir), "--text", text, "--out", str(out), *extra]) == 0
    with np.load(out, allow_pickle=False) as f:
        return dict(f)


@pytest.fixture(scope="module")
def exported(tiny_dir, tmp_path_factory) -> dict[str, np.ndarray]:
    return export(tiny_dir, tmp_path_factory.mktemp("export") / "base.npz")


def test_export_holds_every_traced_tensor(exported, tiny_dir, tiny_model, tokenizer, tiny_cfg):
    data = exported
    tr = run_trace(tiny_model, tokenizer, SENTENCES[2])
    tokens = {"tokens", "labels", "token_ids", "offsets"}
    assert set(data) == {"format", "model", "interventions", "text", *tokens, *trace_names(tiny_cfg)}
    assert str(data["model"]) == str(tiny_dir) and str(data["text"]) == SENTENCES[2]
    assert list(data["tokens"]) == list(tr.encoding.tokens) and list(data["labels"]) == list(tr.encoding.labels)
    assert list(data["token_ids"]) == list(tr.encoding.ids)
    assert (
        data["offsets"].shape == (len(tr.encoding), 2)
        and [tuple(o) for o in data["offsets"]] == list(tr.encoding.offsets)
    )
    for name in trace_names(tiny_cfg):
        assert data[name].dtype == np.float32 and np.array_equal(data[name], tr[name]), name


@pytest.mark.parametrize(
    "flags, iv",
    [
        (["--ablate", "0.1"], Interventions(ablate=frozenset({(0, 1)}))),
        (["--ablate", "0.1", "2.3"], Interventions(ablate=frozenset({(0, 1), (2, 3)}))),
        (["--no-mask"], Interventions(causal=False)),
        (["--temperature", "0.5"], Interventions(temperature=0.5)),
    ],
    ids=["ablate", "ablate_two", "no_mask", "temperature"],
)
def test_export_interventions(tiny_dir, tmp_path, exported, tiny_model, tokenizer, flags, iv):
    changed = export(tiny_dir, tmp_path / "changed.npz", *flags)
    assert not np.allclose(changed["logits"], exported["logits"], atol=1e-4)
    assert load_trace(tmp_path / "changed.npz").interventions == iv
    tr = run_trace(tiny_model, tokenizer, SENTENCES[2], iv)
    assert set(tr.names) <= set(changed)
    for name in tr.names:  # every array the trace answers (its cache holds only what was read so far)
        assert np.array_equal(changed[name], tr[name]), name


def test_export_cut_text(tiny_dir, tmp_path, tiny_cfg, capsys):
    data = export(tiny_dir, tmp_path / "long.npz", text=" ".join(SENTENCES) * 3)
    assert data["logits"].shape[0] == len(data["tokens"]) == tiny_cfg.n_ctx
    assert "cut from" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, words",
    [
        (["--model", "/no/such/model"], "No model directory"),
        (["--text", ""], "empty"),
        (["--text", "   "], "whitespace"),
        (["--temperature", "0"], "temperature"),
        (["--ablate", "x.1"], "L.H"),
        (["--ablate", "1"], "L.H"),
        (["--ablate", "0.9"], "head"),
        (["--ablate", "7.0"], "layer"),
    ],
)
def test_export_bad_arguments_exit_2_with_a_message(tiny_dir, tmp_path, capsys, args, words):
    given = {"--model": str(tiny_dir), "--text": "hello", "--out": str(tmp_path / "x.npz")}
    argv = ["trace", *(x for k, v in given.items() if k not in args for x in (k, v)), *args]
    try:
        code = cli.main(argv)
    except SystemExit as stop:  # argparse rejects a malformed argument itself
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2
    assert "error:" in err and words in err and "Traceback" not in err, err
    assert not (tmp_path / "x.npz").exists()
