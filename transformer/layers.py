"""The parts every model family is built from: norms, positions, multi-head attention, MLPs, the block.

Every intermediate is recorded, when asked, into a per-call dict under a TransformerLens-style name.
Nothing is ever written into the modules during a forward pass, so one eval-mode model can serve many
threads at once.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import Interventions, Record, attention
from .config import ModelConfig


class Prefixed:
    """A record that writes every name under a prefix (an encoder–decoder records "encoder.blocks.…")."""

    def __init__(self, rec: dict, prefix: str):
        self.rec, self.prefix = rec, prefix

    def __setitem__(self, name: str, value: torch.Tensor) -> None:
        self.rec[self.prefix + name] = value


def prefixed(rec: Record, prefix: str):
    return None if rec is None else Prefixed(rec, prefix)


def sinusoidal_encoding(n_pos: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)). Shape (n_pos, d_model)."""
    pos = torch.arange(n_pos, dtype=torch.float64)[:, None]  # (n_pos, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,)
    angle = pos / 10000 ** (two_i / d_model)  # (n_pos, d_model/2)
    pe = torch.zeros(n_pos, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


def rotary_angles(positions: torch.Tensor, d_head: int, theta: float) -> torch.Tensor:
    """RoPE angles m · θ^(−2i/d_head) for position m and pair i, shape (T, d_head/2).

    Pair i is dimensions (i, i + d_head/2) of a query or key (the layout Hugging Face's Llama uses).
    """
    inv_freq = 1.0 / theta ** (torch.arange(0, d_head, 2, dtype=torch.int64).float() / d_head)  # (d_head/2,)
    return positions.float()[:, None] * inv_freq[None, :]  # (T, d_head/2)


def rotation(angles: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the angles (T, d_head/2), each laid out over a head's d_head dimensions (T, d_head): dimensions
    i and i + d_head/2 turn by pair i's angle. Computed once per forward pass; every layer's rotate reads them."""
    cos, sin = angles.cos(), angles.sin()  # (T, d_head/2) each
    return torch.cat([cos, cos], dim=-1), torch.cat([sin, sin], dim=-1)  # (T, d_head) each


def rotate(x: torch.Tensor, turn: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Turn each pair (x_i, x_{i+h}) of x (…, T, d_head) by its angle a, h = d_head/2, given turn = rotation(angles):
    (x_i, x_{i+h}) → (x_i cos a − x_{i+h} sin a, x_{i+h} cos a + x_i sin a)."""
    cos, sin = turn  # (T, d_head) each
    x1, x2 = x.chunk(2, dim=-1)  # 2 × (…, T, d_head/2)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin  # (…, T, d_head)


class Norm(nn.Module):
    """A per-token norm; records its output as {name}hook_normalized. LayerNorm and RMSNorm say how it normalizes."""

    def forward(self, x, rec: Record = None, name: str = ""):
        y = self.normalize(x)  # (B, T, d)
        if rec is not None:
            rec[name + "hook_normalized"] = y
        return y


class LayerNorm(Norm):
    """y = (x − mean) / √(var + ε) · w + b, per token (GPT, BERT)."""

    def __init__(self, d: int, eps: float):
        super().__init__()
        self.eps = eps
        self.w = nn.Parameter(torch.ones(d))
        self.b = nn.Parameter(torch.zeros(d))

    def normalize(self, x):
        return F.layer_norm(x, self.w.shape, self.w, self.b, self.eps)  # (B, T, d)


class RMSNorm(Norm):
    """y = x / √(mean(x²) + ε) · w, per token (Llama): no mean subtracted, no bias."""

    def __init__(self, d: int, eps: float):
        super().__init__()
        self.eps = eps
        self.w = nn.Parameter(torch.ones(d))

    def normalize(self, x):
        # computed in float32, as Hugging Face's Llama does
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w  # (B, T, d)


def norm_layer(cfg: ModelConfig) -> Norm:
    """The norm this family uses (cfg.norm), over d_model with cfg.ln_eps."""
    return (RMSNorm if cfg.norm == "rmsnorm" else LayerNorm)(cfg.d_model, cfg.ln_eps)


class Attention(nn.Module):
    """Multi-head attention with per-head matrices W_Q[h], W_K[g], W_V[g], W_O[h].

    n_head query heads; n_kv_head key/value heads, each shared by n_head / n_kv_head query heads
    (grouped-query attention; equal counts for GPT and BERT). Self-attention by default; given `kv`
    (B, S, d), keys and values come from that other sequence (cross-attention), or from earlier tokens followed
    by x's own (a decoder continuing a text: the queries are the last T of the S positions). Given RoPE angles
    for the S key positions, queries and keys are rotated by their positions before the scores
    (rope = rotation(angles)).
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        nh, nkv, d, hs = cfg.n_head, cfg.n_kv_heads, cfg.d_model, cfg.d_head
        self.W_Q = nn.Parameter(torch.empty(nh, d, hs))
        self.W_K = nn.Parameter(torch.empty(nkv, d, hs))
        self.W_V = nn.Parameter(torch.empty(nkv, d, hs))
        self.W_O = nn.Parameter(torch.empty(nh, hs, d))
        self.bias = cfg.family != "llama"
        if self.bias:
            self.b_Q = nn.Parameter(torch.zeros(nh, hs))
            self.b_K = nn.Parameter(torch.zeros(nkv, hs))
            self.b_V = nn.Parameter(torch.zeros(nkv, hs))
            self.b_O = nn.Parameter(torch.zeros(d))

    def forward(self, x, mask, layer: int, iv: Interventions, rec: Record = None, name: str = "", kv=None, rope=None):
        B, T, d = x.shape
        kv = x if kv is None else kv  # (B, S, d); S = T for self-attention
        # Q = X·W_Q, K = X·W_K, V = X·W_V, for every head at once: (B, 1, T, d) @ (heads, d, hs), head by head
        q = x[:, None] @ self.W_Q  # (B, nh, T, hs)
        k = kv[:, None] @ self.W_K  # (B, n_kv, S, hs)
        v = kv[:, None] @ self.W_V  # (B, n_kv, S, hs)
        if self.bias:
            q, k, v = q + self.b_Q[:, None], k + self.b_K[:, None], v + self.b_V[:, None]
        if rec is not None:  # recorded token-major, (B, T, heads, hs), as TransformerLens does
            rec[name + "hook_q"], rec[name + "hook_k"], rec[name + "hook_v"] = (
                q.transpose(1, 2),
                k.transpose(1, 2),
                v.transpose(1, 2),
            )
        if rope is not None:
            # RoPE: q_m and k_n turned by angles proportional to m and n, so q_m·k_n depends on m − n only
            cos, sin = rope  # (S, hs) each; the queries sit at the last T positions
            S = kv.shape[1]
            q, k = rotate(q, (cos[S - T :], sin[S - T :])), rotate(k, rope)  # (B, nh, T, hs), (B, n_kv, S, hs)
            if rec is not None:
                rec[name + "hook_rot_q"], rec[name + "hook_rot_k"] = q.transpose(1, 2), k.transpose(1, 2)
        tau = iv.temperatures(layer, self.W_Q.size(0))
        z = attention(q, k, v, mask, tau, rec, name)  # (B, nh, T, hs)
        keep = iv.kept_heads(layer, z.size(1))
        if keep is not None:
            z = z * keep.view(1, -1, 1, 1)  # an ablated head's output becomes exactly 0
        # each head's share of the output, z_h·W_O[h]; summed over heads it is the heads concatenated, projected back:
        # out = Σ_h z_h·W_O[h] + b_O = concat(z_1 … z_h)·W_O + b_O
        result = z @ self.W_O  # (B, nh, T, d_model)
        out = result.sum(1)  # (B, T, d_model)
        if self.bias:
            out = out + self.b_O
        if rec is not None:  # token-major, as TransformerLens records them
            z = z.transpose(1, 2)  # (B, T, nh, hs)
            rec[name + "hook_z"], rec[name + "hook_concat"], rec[name + "hook_result"] = (
                z,
                z.reshape(B, T, -1),
                result.transpose(1, 2),
            )
        return out


class MLP(nn.Module):
    """Position-wise feed-forward network.

    GELU (GPT, BERT):   out = GELU(x·W_in + b_in)·W_out + b_out
    SwiGLU (Llama):     out = (SiLU(x·W_gate) ⊙ x·W_in)·W_out
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.gated = cfg.activation == "silu"
        self.W_in = nn.Parameter(torch.empty(cfg.d_model, cfg.d_mlp))
        self.W_out = nn.Parameter(torch.empty(cfg.d_mlp, cfg.d_model))
        if self.gated:
            self.W_gate = nn.Parameter(torch.empty(cfg.d_model, cfg.d_mlp))
        else:
            self.b_in = nn.Parameter(torch.zeros(cfg.d_mlp))
            self.b_out = nn.Parameter(torch.zeros(cfg.d_model))
        self.approximate = "tanh" if cfg.activation == "gelu_new" else "none"

    def forward(self, x, rec: Record = None, name: str = ""):
        if self.gated:
            pre = x @ self.W_gate  # (B, T, d_mlp) the gate, before SiLU
            pre_linear = x @ self.W_in  # (B, T, d_mlp) the linear ("up") branch
            post = F.silu(pre) * pre_linear  # (B, T, d_mlp)
            out = post @ self.W_out  # (B, T, d_model)
        else:
            pre = x @ self.W_in + self.b_in  # (B, T, d_mlp)
            post = F.gelu(pre, approximate=self.approximate)  # (B, T, d_mlp)
            out = post @ self.W_out + self.b_out  # (B, T, d_model)
        if rec is not None:
            rec[name + "hook_pre"], rec[name + "hook_post"] = pre, post
            if self.gated:
                rec[name + "hook_pre_linear"] = pre_linear
        return out


class Block(nn.Module):
    """Pre-norm (GPT, Llama): x + Attn(LN1(x)), then + MLP(LN2(·)).
    Post-norm (BERT):         h = LN1(x + Attn(x)), then LN2(h + MLP(h)).
    Attention-only (cfg.attn_only, pre-norm): x + Attn(LN1(x))."""

    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.layer, self.post_norm = layer, cfg.post_norm
        self.ln1 = norm_layer(cfg)
        self.attn = Attention(cfg)
        self.attn_only = cfg.attn_only
        if not self.attn_only:  # an attention-only block has no MLP and no norm before it
            self.ln2 = norm_layer(cfg)
            self.mlp = MLP(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, mask, iv: Interventions, rec: Record = None, rope=None, past=None):
        """x (B, T, d) → the block's output (B, T, d). past (B, P, d): the inputs of P earlier tokens, whose keys
        and values x's tokens read too (a decoder continuing a text; mask (…, T, P + T) and rope cover all P + T)."""
        n = f"blocks.{self.layer}."
        if self.post_norm:
            attn_out = self.drop(self.attn(x, mask, self.layer, iv, rec, n + "attn.", self.keys_input(x, past), rope))
            resid_mid = x + attn_out  # (B, T, d_model)
            h = self.ln1(resid_mid, rec, n + "ln1.")  # (B, T, d_model)
            mlp_out = self.drop(self.mlp(h, rec, n + "mlp."))
            resid_post = h + mlp_out  # (B, T, d_model)
            out = self.ln2(resid_post, rec, n + "ln2.")  # (B, T, d_model) the block's output
        else:
            h = self.ln1(x, rec, n + "ln1.")  # (B, T, d_model)
            attn_out = self.drop(self.attn(h, mask, self.layer, iv, rec, n + "attn.", self.keys_input(h, past), rope))
            resid_mid = x + attn_out  # (B, T, d_model)
            # attention-only: no LN2 and no MLP, so nothing is recorded for them
            mlp_out = (
                None if self.attn_only else self.drop(self.mlp(self.ln2(resid_mid, rec, n + "ln2."), rec, n + "mlp."))
            )
            resid_post = out = resid_mid if mlp_out is None else resid_mid + mlp_out  # (B, T, d_model)
        if rec is not None:
            rec[n + "hook_resid_pre"], rec[n + "hook_attn_out"], rec[n + "hook_resid_mid"] = x, attn_out, resid_mid
            if mlp_out is not None:
                rec[n + "hook_mlp_out"] = mlp_out
            rec[n + "hook_resid_post"] = resid_post
        return out

    def keys_input(self, h, past):
        """What the attention makes keys and values of: None (h itself), or the earlier tokens' inputs, normalized as
        h was (pre-norm), followed by h. h (B, T, d), past (B, P, d) → (B, P + T, d)."""
        return None if past is None else torch.cat([past if self.post_norm else self.ln1(past), h], dim=1)


def per_head(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """A linear layer's (out = n_heads·hs, in = d) weight (nn.Linear layout) → per head
    (n_heads, d, hs), so that q_h = x·W[h]."""
    d = w.shape[1]
    return w.T.reshape(d, n_heads, -1).permute(1, 0, 2).contiguous()


def init_normal(model: nn.Module, n_layer: int, residual_scale: float) -> None:
    """N(0, 0.02) for every matrix; residual-stream outputs (W_O, W_out) scaled by
    1/√(residual_scale·n_layer), as in GPT-2."""
    for name, p in model.named_parameters():
        if p.dim() >= 2:
            std = 0.02 / math.sqrt(residual_scale * n_layer) if name.endswith(("W_O", "W_out")) else 0.02
            nn.init.normal_(p, std=std)
