"""The sidebar's "The model's trace (NPZ)" and `python -m transformer trace` write one format: for the same sentence
and interventions both files open with the same reader and hold the same keys and the same numbers."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ui
from transformer import Interventions, run_trace
from transformer.cli import main
from transformer.trace_file import load_trace
from ui import export

MODEL, SENTENCE = "shakespeare-gpt", "I love bears."


def test_the_apps_file_holds_every_array_of_the_trace():
    lm = ui.get_model(MODEL)
    tr = run_trace(lm.model, lm.tokenizer, SENTENCE)
    f = load_trace(io.BytesIO(export.trace_npz(tr, MODEL)))
    assert f.model == MODEL and f.encoding == tr.encoding and f.encoding.labels[-1] == "."
    assert set(f.names) == set(tr.names) and len(f.names) == len(tr.names) > 0
    for name in tr.names:
        np.testing.assert_array_equal(f[name], tr[name])


CHANGED = Interventions(temperature=0.5, causal=False, ablate=frozenset({(1, 2)}))
CHANGED_FLAGS = ["--temperature", "0.5", "--no-mask", "--ablate", "1.2"]


@pytest.mark.parametrize("flags, iv", [([], Interventions()), (CHANGED_FLAGS, CHANGED)], ids=["plain", "changed"])
def test_the_app_and_the_command_line_write_the_same_file(tmp_path, capsys, flags, iv):
    lm = ui.get_model(MODEL)
    app_bytes = export.trace_npz(run_trace(lm.model, lm.tokenizer, SENTENCE, iv), MODEL)
    assert main(["trace", "--model", MODEL, "--text", SENTENCE, "--out", str(tmp_path / "cli.npz"), *flags]) == 0
    with np.load(io.BytesIO(app_bytes)) as app_npz, np.load(tmp_path / "cli.npz") as cli_npz:
        assert app_npz.files and sorted(app_npz.files) == sorted(cli_npz.files)
    app, cli = load_trace(io.BytesIO(app_bytes)), load_trace(tmp_path / "cli.npz")
    assert app.model == cli.model == MODEL and app.interventions == cli.interventions == iv
    assert app.encoding == cli.encoding and app.encoding.ids == lm.tokenizer.encode(SENTENCE).ids
    assert app.names == cli.names and "blocks.0.attn.hook_pattern" in app.names
    for name in app.names:
        np.testing.assert_array_equal(app[name], cli[name], err_msg=name)
    assert f"→ {tmp_path / 'cli.npz'}" in capsys.readouterr().out
