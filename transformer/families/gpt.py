"""Decoders: the GPT family (our own checkpoints and Hugging Face GPT-2) and, with other parts, Llama.

One class reads both: token embedding (+ a position table unless positions are rotary) → blocks →
final norm → logits = LN(x)·W_U. Which parts the blocks use is set by the config (transformer.config).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from ..attention import NO_INTERVENTIONS, Interventions, Record, visible_mask, wants
from ..config import ModelConfig
from ..errors import ModelLoadError
from ..layers import Block, init_normal, norm_layer, per_head, rotary_angles, rotation, sinusoidal_encoding


class GPT(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.W_E = nn.Parameter(torch.empty(cfg.vocab_size, cfg.d_model))
        if cfg.pos_encoding == "learned":
            self.W_pos = nn.Parameter(torch.empty(cfg.n_ctx, cfg.d_model))
        elif cfg.pos_encoding == "sinusoidal":
            self.register_buffer("W_pos", sinusoidal_encoding(cfg.n_ctx, cfg.d_model), persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layer))
        self.ln_final = norm_layer(cfg)
        if not cfg.tie_embeddings:
            self.W_U_untied = nn.Parameter(torch.empty(cfg.d_model, cfg.vocab_size))
        self._init_weights()

    @property
    def W_U(self) -> torch.Tensor:
        """The unembedding (d_model, vocab): W_Eᵀ when tied."""
        return self.W_E.T if self.cfg.tie_embeddings else self.W_U_untied

    def _init_weights(self):
        """N(0, 0.02), residual-stream outputs scaled by 1/√(2·n_layer), as in GPT-2.

        An untied W_E starts at N(0, 0.5²), so a token's vector is about as long as its sinusoidal
        position vector (‖PE_t‖ = √(d/2)) instead of being drowned by it.
        """
        init_normal(self, self.cfg.n_layer, residual_scale=2)
        if not self.cfg.tie_embeddings:
            nn.init.normal_(self.W_E, std=0.5)

    def attention_context(self, T: int, interventions: Interventions, attention_mask=None):
        """What every block's attention reads besides its input: the visible mask (1 or B, 1, T, T) and,
        for rotary positions, the cos and sin of the RoPE angles (rotation: (T, d_head) each; else None)."""
        mask = visible_mask(T, interventions.causal, attention_mask)
        rope = (
            rotation(rotary_angles(torch.arange(T), self.cfg.d_head, self.cfg.rope_theta))
            if self.cfg.pos_encoding == "rotary"
            else None
        )
        return mask, rope

    def embed(self, idx, rec: Record = None, token_type_ids=None):
        """idx: (B, T) token ids → block 0's input (B, T, d_model): token embedding (+ position vector).
        token_type_ids is an encoder's (sentence A or B) and is not read here: every family embeds with one call."""
        B, T = idx.shape
        if T > self.cfg.n_ctx:
            raise ValueError(f"sequence of {T} tokens is longer than the context of {self.cfg.n_ctx}")
        embed = self.W_E[idx]  # (B, T, d_model)
        if rec is not None:
            rec["hook_embed"] = embed
        if self.cfg.pos_encoding == "rotary":
            return self.drop(embed)  # positions enter inside attention, by rotating queries and keys
        pos_embed = self.W_pos[:T].expand(B, T, -1)  # (B, T, d_model)
        if rec is not None:
            rec["hook_pos_embed"] = pos_embed
        return self.drop(embed + pos_embed)  # input = token embedding + positional encoding

    def final_norm(self, x, rec: Record = None):
        """The last block's output (B, T, d_model) → LN(x), what the unembedding reads."""
        return self.ln_final(x, rec, "ln_final.")

    def forward(
        self, idx, attention_mask=None, interventions: Interventions = NO_INTERVENTIONS, rec: Record = None,
        token_type_ids=None,
    ):
        """idx: (B, T) token ids; attention_mask: (B, T), 1 = real token, 0 = padding. Returns logits (B, T, vocab), or
        None when `rec` is a record that drops them (the unembedding is a fifth of SmolLM2's forward)."""
        x = self.embed(idx, rec)  # (B, T, d_model)
        mask, rope = self.attention_context(idx.shape[1], interventions, attention_mask)
        for block in self.blocks:
            x = block(x, mask, interventions, rec, rope)
        final = self.final_norm(x, rec)
        if not (rec is None or wants(rec, "logits")):
            return None  # a trace unembeds when a page first reads its logits (trace.Trace)
        # logits = LN(x)·W_U (W_U = W_Eᵀ when tied)
        logits = final @ self.W_U  # (B, T, vocab)
        if rec is not None:
            rec["logits"] = logits
        return logits


def gpt2_to_atlas(hf: dict, state: dict[str, torch.Tensor]) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """Map a Hugging Face GPT-2 config and state dict onto ModelConfig and our parameter names.

    GPT-2's Conv1D stores weights as (in, out) and computes x·W + b, so no transpose is needed;
    c_attn packs Q, K, V side by side: (d, 3d) → three (d, d) → per head (nh, d, hs).
    """
    for flag, ok in (
        ("scale_attn_by_inverse_layer_idx", False),
        ("reorder_and_upcast_attn", False),
        ("scale_attn_weights", True),
    ):
        if hf.get(flag, ok) != ok:
            raise ModelLoadError(f"GPT-2 option {flag}={hf[flag]} is not supported.")
    if hf.get("activation_function", "gelu_new") not in ("gelu_new", "gelu"):
        raise ModelLoadError(f"GPT-2 activation {hf['activation_function']!r} is not supported (gelu_new, gelu).")
    d, nh = hf["n_embd"], hf["n_head"]
    cfg = ModelConfig(
        vocab_size=hf["vocab_size"],
        n_ctx=hf.get("n_positions", hf.get("n_ctx", 1024)),
        d_model=d,
        n_layer=hf["n_layer"],
        n_head=nh,
        d_mlp=hf.get("n_inner") or 4 * d,
        pos_encoding="learned",
        activation=hf.get("activation_function", "gelu_new"),
        ln_eps=hf.get("layer_norm_epsilon", 1e-5),
    )
    hs = cfg.d_head
    sd = {k.removeprefix("transformer."): v for k, v in state.items()}
    if sd["wte.weight"].shape[1] != d:
        raise ModelLoadError(
            f"config.json says n_embd = {d}, "
            f"but the token embedding in the weights is {sd['wte.weight'].shape[1]} wide."
        )
    out = {
        "W_E": sd["wte.weight"],
        "W_pos": sd["wpe.weight"],
        "ln_final.w": sd["ln_f.weight"],
        "ln_final.b": sd["ln_f.bias"],
    }
    for i in range(cfg.n_layer):
        h, b = f"h.{i}.", f"blocks.{i}."
        W_Q, W_K, W_V = sd[h + "attn.c_attn.weight"].split(d, dim=1)  # 3 × (d, nh·hs)
        b_Q, b_K, b_V = sd[h + "attn.c_attn.bias"].split(d)  # 3 × (nh·hs,)
        for name, W, bias in (("Q", W_Q, b_Q), ("K", W_K, b_K), ("V", W_V, b_V)):
            out[f"{b}attn.W_{name}"] = per_head(W.T, nh)  # (nh, d, hs)
            out[f"{b}attn.b_{name}"] = bias.reshape(nh, hs)
        out[b + "attn.W_O"] = sd[h + "attn.c_proj.weight"].reshape(nh, hs, d)  # (nh, hs, d)
        out[b + "attn.b_O"] = sd[h + "attn.c_proj.bias"]
        out[b + "mlp.W_in"], out[b + "mlp.b_in"] = sd[h + "mlp.c_fc.weight"], sd[h + "mlp.c_fc.bias"]
        out[b + "mlp.W_out"], out[b + "mlp.b_out"] = sd[h + "mlp.c_proj.weight"], sd[h + "mlp.c_proj.bias"]
        for ln, hf_ln in (("ln1", "ln_1"), ("ln2", "ln_2")):
            out[f"{b}{ln}.w"], out[f"{b}{ln}.b"] = sd[f"{h}{hf_ln}.weight"], sd[f"{h}{hf_ln}.bias"]
    return cfg, out
