"""Encoders: BERT (Hugging Face BertModel checkpoints, e.g. all-MiniLM-L6-v2).

Input = LayerNorm(token embedding + learned position + token type (sentence A or B)); then post-norm
blocks whose attention sees every token in both directions (padding aside). There is no language-model
head: an encoder turns each token into a vector that depends on the whole sentence.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from ..attention import NO_INTERVENTIONS, Interventions, Record, visible_mask
from ..config import ModelConfig
from ..errors import ModelLoadError
from ..layers import Block, init_normal, norm_layer, per_head


class BERT(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.W_E = nn.Parameter(torch.empty(cfg.vocab_size, cfg.d_model))
        self.W_pos = nn.Parameter(torch.empty(cfg.n_ctx, cfg.d_model))
        self.W_type = nn.Parameter(torch.empty(max(cfg.n_token_types, 1), cfg.d_model))
        self.ln_embed = norm_layer(cfg)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layer))
        init_normal(self, cfg.n_layer, residual_scale=2)

    def attention_context(self, T: int, interventions: Interventions, attention_mask=None):
        """The visible mask (1 or B, 1, T, T): both directions, padding hidden (interventions.causal changes
        nothing in an encoder); no RoPE angles."""
        return visible_mask(T, False, attention_mask), None

    def embed(self, idx, rec: Record = None, token_type_ids=None):
        """idx, token_type_ids: (B, T) ids (types default to 0, sentence A) → block 0's input (B, T, d_model)."""
        B, T = idx.shape
        if T > self.cfg.n_ctx:
            raise ValueError(f"sequence of {T} tokens is longer than the context of {self.cfg.n_ctx}")
        types = torch.zeros_like(idx) if token_type_ids is None else token_type_ids  # (B, T)
        embed = self.W_E[idx]  # (B, T, d_model)
        pos_embed = self.W_pos[:T].expand(B, T, -1)  # (B, T, d_model)
        type_embed = self.W_type[types]  # (B, T, d_model)
        if rec is not None:
            rec["hook_embed"], rec["hook_pos_embed"], rec["hook_token_type_embed"] = embed, pos_embed, type_embed
        # input = LN(token embedding + position + token type)
        return self.ln_embed(embed + pos_embed + type_embed, rec, "ln_embed.")  # (B, T, d_model)

    def final_norm(self, x, rec: Record = None):
        """Post-norm blocks end normalized: the last block's output is the encoder's output."""
        return x

    def forward(
        self, idx, attention_mask=None, interventions: Interventions = NO_INTERVENTIONS, rec: Record = None,
        token_type_ids=None,
    ):
        """idx, token_type_ids: (B, T) ids; attention_mask: (B, T), 1 = real token.
        Returns the last block's output (B, T, d_model): one vector per token, no logits."""
        x = self.embed(idx, rec, token_type_ids)  # (B, T, d_model)
        mask, _ = self.attention_context(idx.shape[1], interventions, attention_mask)
        for block in self.blocks:
            x = block(x, mask, interventions, rec)
        return self.final_norm(x, rec)


def bert_to_atlas(hf: dict, state: dict[str, torch.Tensor]) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """Map a Hugging Face BertModel config and state dict onto ModelConfig and our parameter names."""
    if hf.get("model_type") != "bert":
        raise ModelLoadError(f"model_type {hf.get('model_type')!r} is not bert.")
    if hf.get("hidden_act", "gelu") != "gelu":
        raise ModelLoadError(f"BERT activation {hf['hidden_act']!r} is not supported (gelu).")
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise ModelLoadError(
            f"BERT position embeddings {hf['position_embedding_type']!r} are not supported (absolute)."
        )
    cfg = ModelConfig.from_hugging_face(
        hf, pos_encoding="learned", activation="gelu", ln_eps=hf.get("layer_norm_eps", 1e-12), tie_embeddings=False,
        family="bert", n_token_types=hf.get("type_vocab_size", 2), has_lm_head=False,
    )
    d, nh, hs = cfg.d_model, cfg.n_head, cfg.d_head
    sd = {k.removeprefix("bert."): v for k, v in state.items()}
    e = "embeddings."
    out = {
        "W_E": sd[e + "word_embeddings.weight"],
        "W_pos": sd[e + "position_embeddings.weight"],
        "W_type": sd[e + "token_type_embeddings.weight"],
        "ln_embed.w": sd[e + "LayerNorm.weight"],
        "ln_embed.b": sd[e + "LayerNorm.bias"],
    }
    for i in range(cfg.n_layer):
        h, b = f"encoder.layer.{i}.", f"blocks.{i}."
        for name, hf_name in (("Q", "query"), ("K", "key"), ("V", "value")):
            out[f"{b}attn.W_{name}"] = per_head(sd[f"{h}attention.self.{hf_name}.weight"], nh)  # (nh, d, hs)
            out[f"{b}attn.b_{name}"] = sd[f"{h}attention.self.{hf_name}.bias"].reshape(nh, hs)
        out[b + "attn.W_O"] = sd[h + "attention.output.dense.weight"].T.reshape(nh, hs, d).contiguous()  # (nh, hs, d)
        out[b + "attn.b_O"] = sd[h + "attention.output.dense.bias"]
        out[b + "mlp.W_in"], out[b + "mlp.b_in"] = (
            sd[h + "intermediate.dense.weight"].T.contiguous(),
            sd[h + "intermediate.dense.bias"],
        )
        out[b + "mlp.W_out"], out[b + "mlp.b_out"] = (
            sd[h + "output.dense.weight"].T.contiguous(),
            sd[h + "output.dense.bias"],
        )
        for ln, hf_ln in (("ln1", "attention.output.LayerNorm"), ("ln2", "output.LayerNorm")):
            out[f"{b}{ln}.w"], out[f"{b}{ln}.b"] = sd[f"{h}{hf_ln}.weight"], sd[f"{h}{hf_ln}.bias"]
    return cfg, out
