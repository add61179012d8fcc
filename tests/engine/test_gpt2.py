"""Hugging Face GPT-2 checkpoints load into our instrumented GPT and give the same attention and logits."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from tokenizers import ByteLevelBPETokenizer

from tests.conftest import GPT2_FILES
from transformer.loading import MODEL_DIRS_ENV, ModelLoadError, load_model
from transformer.trace import run_trace

transformers = pytest.importorskip("transformers")

SENTENCE = "The quick brown fox jumps over the lazy dog, and the dog sleeps on."


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    """A small random GPT-2 (every weight, bias and LayerNorm random) saved in Hugging Face format."""
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=50257, attn_implementation="eager")
    hf = transformers.GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if name.endswith("bias") or "ln_" in name:
                p.copy_(torch.randn_like(p) * 0.1 + (1.0 if "ln_" in name and name.endswith("weight") else 0.0))
            elif "wte" not in name:
                p.mul_(5.0)  # sharper attention than the 0.02 init gives
    path = tmp_path_factory.mktemp("gpt2-tiny")
    hf.save_pretrained(path, safe_serialization=True)
    ByteLevelBPETokenizer(str(GPT2_FILES / "vocab.json"), str(GPT2_FILES / "merges.txt")).save(str(path / "tokenizer.json"))
    return path, hf


def test_gpt2_attention_and_logits_match_transformers(hf_dir):
    path, hf = hf_dir
    lm = load_model(path)
    assert lm.cfg.pos_encoding == "learned" and lm.cfg.activation == "gelu_new" and lm.cfg.n_layer == 2 and lm.cfg.n_head == 4
    tr = run_trace(lm.model, lm.tokenizer, SENTENCE)
    assert len(tr.encoding) > 10
    with torch.no_grad():
        out = hf(torch.tensor([tr.encoding.ids]), output_attentions=True)
    assert len(out.attentions) == 2
    for layer, att in enumerate(out.attentions):
        ref = att[0].numpy()  # (nh, T, T)
        assert ref.max() > 0.5  # some sharp weights: a real comparison, not two uniform patterns
        np.testing.assert_allclose(tr[f"blocks.{layer}.attn.hook_pattern"], ref, atol=1e-5, rtol=0, err_msg=f"layer {layer}")
    np.testing.assert_allclose(tr["logits"], out.logits[0].numpy(), atol=1e-4, rtol=0)


def test_gpt2_tokenizer_ids_match_the_real_vocabulary(hf_dir):
    lm = load_model(hf_dir[0])
    enc = lm.tokenizer.encode("Hello world")
    assert enc.ids == (15496, 995)  # GPT-2's well-known ids
    assert enc.labels == ("Hello", "␣world")


# ---------------------------------------------------------------- clear errors


def copy_dir(hf_dir, tmp_path):
    dst = tmp_path / "model"
    shutil.copytree(hf_dir[0], dst)
    return dst


def edit_config(path, **changes):
    cfg = json.loads((path / "config.json").read_text())
    cfg.update(changes)
    (path / "config.json").write_text(json.dumps(cfg))


def test_unknown_model_type(hf_dir, tmp_path):
    path = copy_dir(hf_dir, tmp_path)
    edit_config(path, model_type="mamba")
    with pytest.raises(ModelLoadError, match="model_type 'mamba' is not supported"):
        load_model(path)


@pytest.mark.parametrize("missing", ["config.json", "model.safetensors", "tokenizer.json"])
def test_missing_file(hf_dir, tmp_path, missing):
    path = copy_dir(hf_dir, tmp_path)
    (path / missing).unlink()
    with pytest.raises(ModelLoadError, match=f"missing {missing}"):
        load_model(path)


def test_no_such_directory(tmp_path):
    with pytest.raises(ModelLoadError, match="No model directory"):
        load_model(tmp_path / "nope")


def test_unsupported_gpt2_option(hf_dir, tmp_path):
    path = copy_dir(hf_dir, tmp_path)
    edit_config(path, scale_attn_by_inverse_layer_idx=True)
    with pytest.raises(ModelLoadError, match="scale_attn_by_inverse_layer_idx"):
        load_model(path)


def test_broken_files_give_model_load_errors(hf_dir, tmp_path):
    path = copy_dir(hf_dir, tmp_path)
    (path / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="Could not read"):
        load_model(path)
    path = copy_dir(hf_dir, tmp_path / "b")
    (path / "model.safetensors").write_bytes(b"\x00" * 100)
    with pytest.raises(ModelLoadError, match="Could not read"):
        load_model(path)


def test_weights_that_do_not_fit_the_config(hf_dir, tmp_path):
    path = copy_dir(hf_dir, tmp_path)
    edit_config(path, n_layer=3)  # the file holds 2 layers
    with pytest.raises(ModelLoadError):
        load_model(path)
    path = copy_dir(hf_dir, tmp_path / "b")
    edit_config(path, n_embd=32)
    with pytest.raises(ModelLoadError):
        load_model(path)


def test_incomplete_config(hf_dir, tmp_path):
    path = copy_dir(hf_dir, tmp_path)
    cfg = json.loads((path / "config.json").read_text())
    del cfg["n_head"]
    (path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="n_head"):
        load_model(path)


def test_broken_tokenizer(hf_dir, tmp_path):
    path = copy_dir(hf_dir, tmp_path)
    (path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelLoadError, match="tokenizer"):
        load_model(path)


def test_restricted_loading_only_opens_allowed_folders(hf_dir, monkeypatch):
    path = hf_dir[0]
    monkeypatch.delenv(MODEL_DIRS_ENV, raising=False)
    with pytest.raises(ModelLoadError, match="outside the folders"):
        load_model(path, restrict=True)
    with pytest.raises(ModelLoadError, match="outside the folders"):
        load_model(path.parent / "x" / ".." / path.name / ".." / ".." / "etc", restrict=True)
    monkeypatch.setenv(MODEL_DIRS_ENV, str(path.parent))
    assert load_model(path, restrict=True).cfg.n_layer == 2
    assert load_model("shakespeare-gpt", restrict=True).name == "shakespeare-gpt"
