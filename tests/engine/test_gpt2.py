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
    cfg = transformers.GPT2Config(
        n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=50257, attn_implementation="eager"
    )
    hf = transformers.GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if name.endswith("bias") or "ln_" in name:
                p.copy_(torch.randn_like(p) * 0.1 + (1.0 if "ln_" in name and name.endswith("weight") else 0.0))
            elif "wte" not in name:
                p.mul_(5.0)  # sharper attention than the 0.02 init gives
    path = tmp_path_factory.mktemp("gpt2-tiny")
    hf.save_pretrained(path, safe_serialization=True)
    ByteLevelBPETokenizer(str(GPT2_FILES / "vocab.json"), str(GPT2_FILES / "merges.txt")).save(
        str(path / "tokenizer.json")
    )
    return path, hf


def test_gpt2_attention_and_logits_match_transformers(hf_dir):
    path, hf = hf_dir
    lm = load_model(path)
    assert (
        lm.cfg.pos_encoding == "learned"
        and lm.cfg.activation == "gelu_new"
        and lm.cfg.n_layer == 2
        and lm.cfg.n_head == 4
    )
    tr = run_trace(lm.model, lm.tokenizer, SENTENCE)
    assert len(tr.encoding) > 10
    with torch.no_grad():
        out = hf(torch.tensor([tr.encoding.ids]), output_attentions=True)
    assert len(out.attentions) == 2
    for layer, att in enumerate(out.attentions):
        ref = att[0].numpy()  # (nh, T, T)
        assert ref.max() > 0.5  # some sharp weights: a real comparison, not two uniform patterns
        np.testing.assert_allclose(
            tr[f"blocks.{layer}.attn.hook_pattern"], ref, atol=1e-5, rtol=0, err_msg=f"layer {layer}"
        )
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


def drop_config_key(key):
    def drop(path):
        cfg = json.loads((path / "config.json").read_text())
        del cfg[key]
        (path / "config.json").write_text(json.dumps(cfg))

    return drop


# how a model folder is broken → what the error must say
BROKEN = {
    "unknown model type": (lambda p: edit_config(p, model_type="mamba"), "model_type 'mamba' is not supported"),
    "unsupported GPT-2 option": (
        lambda p: edit_config(p, scale_attn_by_inverse_layer_idx=True),
        "scale_attn_by_inverse_layer_idx",
    ),
    "config is not JSON": (lambda p: (p / "config.json").write_text("{not json"), "Could not read"),
    "weights file is garbage": (lambda p: (p / "model.safetensors").write_bytes(b"\x00" * 100), "Could not read"),
    "more layers than the file holds": (
        lambda p: edit_config(p, n_layer=3),
        "'h.2.attn.c_attn.weight' is missing from the configuration or the weights",
    ),
    "width unlike the weights": (
        lambda p: edit_config(p, n_embd=32),
        "n_embd = 32, but the token embedding in the weights is 64 wide",
    ),
    "config without n_head": (drop_config_key("n_head"), "n_head"),
    "empty tokenizer": (lambda p: (p / "tokenizer.json").write_text("{}"), "tokenizer.json is not a tokenizer file"),
    **{
        f"missing {f}": (lambda p, f=f: (p / f).unlink(), f"missing {f}")
        for f in ("config.json", "model.safetensors", "tokenizer.json")
    },
}


@pytest.mark.parametrize("case", BROKEN)
def test_broken_model_folders_give_clear_errors(hf_dir, tmp_path, case):
    break_it, message = BROKEN[case]
    path = copy_dir(hf_dir, tmp_path)
    break_it(path)
    with pytest.raises(ModelLoadError, match=message):
        load_model(path)


def test_no_such_directory(tmp_path):
    with pytest.raises(ModelLoadError, match="No model directory"):
        load_model(tmp_path / "nope")


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
