"""Every traced family meets the model protocol (transformer/protocol.py) and runs through run_trace and run_traces;
the translator, which has its own trace, does not meet it."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from tests.conftest import SENTENCES, small_model
from transformer import Decoder, Model, run_trace, run_traces
from transformer.families.seq2seq import Seq2Seq, Seq2SeqConfig

TEXT = SENTENCES[0]


@pytest.fixture(scope="module", params=["gpt", "llama", "bert"])
def family(request, tiny_model, tokenizer) -> tuple[str, torch.nn.Module]:
    name = request.param
    return name, tiny_model if name == "gpt" else small_model(name, tokenizer, 2, seed=11)


def parameters(function) -> list[str]:
    return [p for p in inspect.signature(function).parameters if p != "self"]


def test_each_family_meets_the_protocol(family):
    name, model = family
    assert isinstance(model, Model)
    assert isinstance(model, Decoder) == (name != "bert")  # BERT has no unembedding
    # isinstance sees only that the names exist: the calls take the protocol's arguments, in its order
    for method in ("embed", "attention_context", "final_norm"):
        assert parameters(getattr(model, method)) == parameters(getattr(Model, method)), method
    assert parameters(model.forward) == parameters(Model.__call__)


def test_the_translator_does_not_meet_it():
    """The check can fail: an encoder–decoder has no blocks, attention_context or final_norm of its own."""
    model = Seq2Seq(Seq2SeqConfig(vocab_size=16, n_ctx=8, d_model=8, n_layer=1, n_head=2, d_mlp=16))
    assert not isinstance(model, Model) and not isinstance(model, Decoder)


def test_each_family_traces_as_its_whole_forward_pass(family, tokenizer):
    """run_trace (block by block, as far as it is read) and run_traces (one padded batch) hold the numbers of one
    whole forward pass: the logits of a decoder, the last block's output of an encoder."""
    name, model = family
    tr = run_trace(model, tokenizer, TEXT)
    last = "logits" if name != "bert" else f"blocks.{model.cfg.n_layer - 1}.ln2.hook_normalized"
    assert last in tr
    with torch.inference_mode():
        whole = model(torch.tensor([tr.encoding.ids]))[0].numpy()  # (T, V) or (T, d)
    np.testing.assert_allclose(tr[last], whole, rtol=1e-5, atol=1e-5)
    batch = run_traces(model, tokenizer, [TEXT, SENTENCES[1]])
    assert batch[0].encoding.ids == tr.encoding.ids
    np.testing.assert_allclose(batch[0][last], whole, rtol=1e-4, atol=1e-4)
