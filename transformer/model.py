"""A decoder-only GPT whose attention is written out step by step.

Every intermediate is recorded, when asked, into a per-call dict under a
TransformerLens-style name (see `transformer.trace.TRACE_NAMES`). Nothing is ever
written into the modules during a forward pass, so one eval-mode model can serve
many threads at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import GPTConfig

Record = dict[str, torch.Tensor] | None


@dataclass(frozen=True)
class Interventions:
    """Changes to a forward pass, all off by default."""

    temperature: float = 1.0  # τ: every head's scaled scores are divided by τ before softmax
    head_temperature: tuple[tuple[int, int | None, float], ...] = ()  # (layer, head or None = all heads, τ)
    causal: bool = True  # False lets every token see the future
    ablate: frozenset[tuple[int, int]] = frozenset()  # (layer, head) pairs whose output is zeroed

    def __post_init__(self):
        for t in (self.temperature, *(t for _, _, t in self.head_temperature)):
            if not (t > 0 and math.isfinite(t)):
                raise ValueError(f"attention temperature must be a positive number, not {t}")

    def temperatures(self, layer: int, n_head: int) -> torch.Tensor | None:
        """τ for each head of `layer`, shape (n_head,); None when every τ is exactly 1."""
        tau = [self.temperature] * n_head
        for lay, head, t in self.head_temperature:
            if lay == layer:
                for h in range(n_head) if head is None else [head]:
                    tau[h] = t
        return None if all(t == 1.0 for t in tau) else torch.tensor(tau)


NO_INTERVENTIONS = Interventions()


def sinusoidal_encoding(n_pos: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)). Shape (n_pos, d_model)."""
    pos = torch.arange(n_pos, dtype=torch.float64)[:, None]  # (n_pos, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,)
    angle = pos / 10000 ** (two_i / d_model)  # (n_pos, d_model/2)
    pe = torch.zeros(n_pos, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


def attention(q, k, v, mask, temperature=None, rec: Record = None, name: str = ""):
    """Scaled dot-product attention, one step at a time.

    q, k, v: (B, nh, T, hs); mask: bool, broadcastable to (B, nh, T, T), True = may attend;
    temperature: (nh,) or None. Returns z = weights·V, shape (B, nh, T, hs).
    """
    # e_ij = q_i · k_j
    raw = q @ k.transpose(-2, -1)  # (B, nh, T, T)
    # e / √d_k, then ÷ τ (the attention temperature)
    scaled = raw / math.sqrt(q.size(-1))  # (B, nh, T, T)
    if temperature is not None:
        scaled = scaled / temperature.view(1, -1, 1, 1)
    # −∞ where a query may not look (the future, padding)
    masked = scaled.masked_fill(~mask, float("-inf"))  # (B, nh, T, T)
    # α_ij = exp(e_ij) / Σ_j' exp(e_ij'); a row with no visible key attends to nothing
    weights = torch.softmax(masked, dim=-1).nan_to_num(0.0)  # (B, nh, T, T)
    # z_i = Σ_j α_ij v_j
    z = weights @ v  # (B, nh, T, hs)
    if rec is not None:
        rec[name + "hook_scores_raw"] = raw
        rec[name + "hook_scores_scaled"] = scaled
        rec[name + "hook_scores_masked"] = masked
        rec[name + "hook_pattern"] = weights
    return z


class LayerNorm(nn.Module):
    """y = (x − mean) / √(var + ε) · w + b, per token."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.eps = cfg.ln_eps
        self.w = nn.Parameter(torch.ones(cfg.d_model))
        self.b = nn.Parameter(torch.zeros(cfg.d_model))

    def forward(self, x, rec: Record = None, name: str = ""):
        y = F.layer_norm(x, self.w.shape, self.w, self.b, self.eps)  # (B, T, d_model)
        if rec is not None:
            rec[name + "hook_normalized"] = y
        return y


class Attention(nn.Module):
    """Multi-head attention with per-head matrices W_Q[h], W_K[h], W_V[h], W_O[h].

    Self-attention by default; given `kv` (B, S, d), keys and values come from that other
    sequence instead (cross-attention: queries from the decoder, keys/values from the encoder).
    """

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        nh, d, hs = cfg.n_head, cfg.d_model, cfg.d_head
        self.W_Q = nn.Parameter(torch.empty(nh, d, hs))
        self.W_K = nn.Parameter(torch.empty(nh, d, hs))
        self.W_V = nn.Parameter(torch.empty(nh, d, hs))
        self.W_O = nn.Parameter(torch.empty(nh, hs, d))
        self.b_Q = nn.Parameter(torch.zeros(nh, hs))
        self.b_K = nn.Parameter(torch.zeros(nh, hs))
        self.b_V = nn.Parameter(torch.zeros(nh, hs))
        self.b_O = nn.Parameter(torch.zeros(d))

    def forward(self, x, mask, layer: int, iv: Interventions, rec: Record = None, name: str = "", kv=None):
        B, T, d = x.shape
        kv = x if kv is None else kv  # (B, S, d); S = T for self-attention
        # Q = X·W_Q, K = X·W_K, V = X·W_V, for every head at once
        q = torch.einsum("btd,hdk->bthk", x, self.W_Q) + self.b_Q  # (B, T, nh, hs)
        k = torch.einsum("bsd,hdk->bshk", kv, self.W_K) + self.b_K  # (B, S, nh, hs)
        v = torch.einsum("bsd,hdk->bshk", kv, self.W_V) + self.b_V  # (B, S, nh, hs)
        tau = iv.temperatures(layer, self.W_Q.size(0))
        z = attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), mask, tau, rec, name)  # (B, nh, T, hs)
        if any(lay == layer for lay, _ in iv.ablate):
            keep = torch.tensor([float((layer, h) not in iv.ablate) for h in range(z.size(1))])  # (nh,)
            z = z * keep.view(1, -1, 1, 1)  # an ablated head's output becomes exactly 0
        z = z.transpose(1, 2)  # (B, T, nh, hs)
        # concat the heads, then project back: out = concat(z_1 … z_h)·W_O + b_O
        concat = z.reshape(B, T, -1)  # (B, T, nh·hs)
        out = concat @ self.W_O.reshape(-1, d) + self.b_O  # (B, T, d_model)
        if rec is not None:
            rec[name + "hook_q"], rec[name + "hook_k"], rec[name + "hook_v"] = q, k, v
            rec[name + "hook_z"] = z
            rec[name + "hook_concat"] = concat
            rec[name + "hook_result"] = torch.einsum("bthk,hkd->bthd", z, self.W_O)  # (B, T, nh, d_model)
        return out


class MLP(nn.Module):
    """Position-wise feed-forward network: out = act(x·W_in + b_in)·W_out + b_out."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.W_in = nn.Parameter(torch.empty(cfg.d_model, cfg.d_mlp))
        self.b_in = nn.Parameter(torch.zeros(cfg.d_mlp))
        self.W_out = nn.Parameter(torch.empty(cfg.d_mlp, cfg.d_model))
        self.b_out = nn.Parameter(torch.zeros(cfg.d_model))
        self.approximate = "tanh" if cfg.activation == "gelu_new" else "none"

    def forward(self, x, rec: Record = None, name: str = ""):
        pre = x @ self.W_in + self.b_in  # (B, T, d_mlp)
        post = F.gelu(pre, approximate=self.approximate)  # (B, T, d_mlp)
        out = post @ self.W_out + self.b_out  # (B, T, d_model)
        if rec is not None:
            rec[name + "hook_pre"], rec[name + "hook_post"] = pre, post
        return out


class Block(nn.Module):
    """Pre-LayerNorm block: x + Attn(LN1(x)), then + MLP(LN2(·))."""

    def __init__(self, cfg: GPTConfig, layer: int):
        super().__init__()
        self.layer = layer
        self.ln1 = LayerNorm(cfg)
        self.attn = Attention(cfg)
        self.ln2 = LayerNorm(cfg)
        self.mlp = MLP(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, mask, iv: Interventions, rec: Record = None):
        n = f"blocks.{self.layer}."
        attn_out = self.drop(self.attn(self.ln1(x, rec, n + "ln1."), mask, self.layer, iv, rec, n + "attn."))
        resid_mid = x + attn_out  # (B, T, d_model)
        mlp_out = self.drop(self.mlp(self.ln2(resid_mid, rec, n + "ln2."), rec, n + "mlp."))
        resid_post = resid_mid + mlp_out  # (B, T, d_model)
        if rec is not None:
            rec[n + "hook_resid_pre"], rec[n + "hook_attn_out"] = x, attn_out
            rec[n + "hook_resid_mid"], rec[n + "hook_mlp_out"] = resid_mid, mlp_out
            rec[n + "hook_resid_post"] = resid_post
        return resid_post


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.W_E = nn.Parameter(torch.empty(cfg.vocab_size, cfg.d_model))
        if cfg.pos_encoding == "learned":
            self.W_pos = nn.Parameter(torch.empty(cfg.n_ctx, cfg.d_model))
        else:
            self.register_buffer("W_pos", sinusoidal_encoding(cfg.n_ctx, cfg.d_model), persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layer))
        self.ln_final = LayerNorm(cfg)
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
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * self.cfg.n_layer) if name.endswith(("W_O", "W_out")) else 0.02
                if name == "W_E" and not self.cfg.tie_embeddings:
                    std = 0.5
                nn.init.normal_(p, std=std)

    def forward(self, idx, attention_mask=None, interventions: Interventions = NO_INTERVENTIONS, rec: Record = None):
        """idx: (B, T) token ids; attention_mask: (B, T), 1 = real token, 0 = padding. Returns logits (B, T, vocab)."""
        B, T = idx.shape
        if T > self.cfg.n_ctx:
            raise ValueError(f"sequence of {T} tokens is longer than the context of {self.cfg.n_ctx}")
        embed = self.W_E[idx]  # (B, T, d_model)
        pos_embed = self.W_pos[:T].expand(B, T, -1)  # (B, T, d_model)
        x = self.drop(embed + pos_embed)  # input = token embedding + positional encoding
        # mask[b, 0, i, j]: may query i look at key j?
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device)
        if interventions.causal:
            mask = mask.tril()  # j ≤ i
        mask = mask[None, None]  # (1, 1, T, T)
        if attention_mask is not None:
            mask = mask & attention_mask.bool()[:, None, None, :]  # (B, 1, T, T)
        for block in self.blocks:
            x = block(x, mask, interventions, rec)
        final = self.ln_final(x, rec, "ln_final.")
        # logits = LN(x)·W_U (W_U = W_Eᵀ when tied)
        logits = final @ self.W_U  # (B, T, vocab)
        if rec is not None:
            rec["hook_embed"], rec["hook_pos_embed"], rec["logits"] = embed, pos_embed, logits
        return logits
