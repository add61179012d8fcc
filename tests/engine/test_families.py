"""BERT and Llama families against Hugging Face transformers, on small random checkpoints built here.

The reference runs eager attention with output_attentions=True; every attention pattern, the hidden states
and (Llama) the logits must match. GQA, RoPE, RMSNorm, SwiGLU, token types and padding are all exercised.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel, LlamaConfig, LlamaForCausalLM

from transformer import Interventions, trace_names
from transformer.families.bert import BERT, bert_to_atlas
from transformer.families.gpt import GPT
from transformer.families.llama import llama_to_atlas
from transformer.layers import rotary_angles, rotate, rotation

torch.manual_seed(0)
IDS = torch.tensor([[5, 17, 3, 99, 42, 7, 7, 64, 12, 1], [8, 33, 2, 2, 71, 9, 0, 0, 0, 0]])  # (2, 10); row 1 padded
REAL = torch.tensor([[1] * 10, [1] * 6 + [0] * 4])  # (2, 10)


@pytest.fixture(scope="module")
def hf_bert():
    torch.manual_seed(1)
    cfg = BertConfig(
        vocab_size=120, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
        max_position_embeddings=32, type_vocab_size=2, attn_implementation="eager",
    )
    return BertModel(cfg, add_pooling_layer=False).eval()


@pytest.fixture(scope="module")
def hf_llama():
    torch.manual_seed(2)
    cfg = LlamaConfig(
        vocab_size=120, hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, rope_theta=500.0, rms_norm_eps=1e-5, max_position_embeddings=64,
        tie_word_embeddings=True, attn_implementation="eager",
    )
    return LlamaForCausalLM(cfg).eval()


def ours(converter, family_cls, hf_model):
    cfg, state = converter(hf_model.config.to_dict(), hf_model.state_dict())
    model = family_cls(cfg)
    model.load_state_dict(state)
    return model.eval()


def test_bert_matches_hugging_face(hf_bert):
    model = ours(bert_to_atlas, BERT, hf_bert)
    types = torch.tensor([[0] * 5 + [1] * 5, [0] * 3 + [1] * 7])
    with torch.no_grad():
        ref = hf_bert(IDS, attention_mask=REAL, token_type_ids=types, output_attentions=True)
        rec = {}
        out = model(IDS, attention_mask=REAL, rec=rec, token_type_ids=types)
    for layer, att in enumerate(ref.attentions):  # (B, nh, T, T) each
        # padding rows differ by design (HF adds a large negative, we −∞): compare real rows
        for b, n in enumerate((10, 6)):
            np.testing.assert_allclose(rec[f"blocks.{layer}.attn.hook_pattern"][b, :, :n], att[b, :, :n], atol=1e-6)
    np.testing.assert_allclose(out[0], ref.last_hidden_state[0], atol=1e-5)
    np.testing.assert_allclose(out[1, :6], ref.last_hidden_state[1, :6], atol=1e-5)
    assert model.cfg.causal is False and set(rec) == set(trace_names(model.cfg))


def test_bert_ignores_the_causal_switch(hf_bert):
    """An encoder has no causal mask: switching it off changes nothing, and every token sees later tokens."""
    model = ours(bert_to_atlas, BERT, hf_bert)
    with torch.no_grad():
        a, b = {}, {}
        model(IDS[:1], rec=a)
        model(IDS[:1], rec=b, interventions=Interventions(causal=False))
    assert torch.equal(a["blocks.0.attn.hook_pattern"], b["blocks.0.attn.hook_pattern"])
    assert (a["blocks.0.attn.hook_pattern"][0, :, 0, 1:] > 0).all()


def test_llama_matches_hugging_face(hf_llama):
    model = ours(llama_to_atlas, GPT, hf_llama)
    assert (model.cfg.n_head, model.cfg.n_kv_heads, model.cfg.family) == (6, 2, "llama")
    with torch.no_grad():
        ref = hf_llama(IDS[:1], output_attentions=True)
        rec = {}
        logits = model(IDS[:1], rec=rec)
    for layer, att in enumerate(ref.attentions):
        np.testing.assert_allclose(rec[f"blocks.{layer}.attn.hook_pattern"], att, atol=1e-6)
    np.testing.assert_allclose(logits, ref.logits, atol=1e-5)
    assert rec["blocks.0.attn.hook_k"].shape == (1, 10, 2, 8) and rec["blocks.0.attn.hook_q"].shape == (1, 10, 6, 8)
    assert set(rec) == set(trace_names(model.cfg))


def test_llama_padded_batch_equals_one_text_at_a_time(hf_llama):
    model = ours(llama_to_atlas, GPT, hf_llama)
    with torch.no_grad():
        batch = model(IDS, attention_mask=REAL)
        alone = model(IDS[1:, :6])
    np.testing.assert_allclose(batch[1, :6], alone[0], atol=1e-5)


def test_gqa_query_heads_share_their_groups_keys(hf_llama):
    """Query heads 0–2 read key/value head 0 and heads 3–5 read head 1: the raw scores are q_h · k_g."""
    model = ours(llama_to_atlas, GPT, hf_llama)
    rec = {}
    with torch.no_grad():
        model(IDS[:1], rec=rec)
    q, k = rec["blocks.1.attn.hook_rot_q"][0], rec["blocks.1.attn.hook_rot_k"][0]  # (T, 6, hs), (T, 2, hs)
    for h in range(6):
        g = model.cfg.kv_head(h)
        assert g == h // 3
        np.testing.assert_allclose(rec["blocks.1.attn.hook_scores_raw"][0, h], q[:, h] @ k[:, g].T, atol=1e-5)


def test_rope_score_depends_only_on_the_offset():
    """q_m · k_n after rotation equals q_(m+s) · k_(n+s): shifting both positions keeps the score."""
    torch.manual_seed(3)
    q, k = torch.randn(1, 1, 1, 16), torch.randn(1, 1, 1, 16)  # (B, T, heads, hs)
    angles = rotary_angles(torch.arange(40), 16, 10000.0)  # (40, 8)
    score = lambda m, n: float(  # noqa: E731
        (rotate(q, rotation(angles[m : m + 1])) * rotate(k, rotation(angles[n : n + 1]))).sum()
    )
    for m, n, s in ((5, 2, 10), (7, 7, 30), (1, 9, 3)):
        assert score(m, n) == pytest.approx(score(m + s, n + s), abs=1e-4)
    assert score(5, 2) != pytest.approx(score(5, 3), abs=1e-3)  # a different offset, another score
