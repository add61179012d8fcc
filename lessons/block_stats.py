"""What one transformer block does to the residual stream, measured from a trace; for every family.

Pre-norm (GPT, Llama):  x_mid = x + Attn(N1(x)),    x_out = x_mid + MLP(N2(x_mid))
Post-norm (BERT):       h = LN1(x + Attn(x)),       x_out = LN2(h + MLP(h))
N is LayerNorm (x − μ)/√(σ² + ε)·w + b, or Llama's RMSNorm x/√(mean(x²) + ε)·w (no mean subtracted, no bias).
The MLP is GELU(x·W_in + b_in)·W_out + b_out, or Llama's SwiGLU (SiLU(x·W_gate) ⊙ x·W_in)·W_out.
These helpers read the recorded tensors and summarise them: vector lengths, each norm's statistics per token,
the MLP's neurons. Plain numpy; nothing draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from transformer import ModelConfig, Trace

# which stream each norm of a block reads: pre-norm in front of each sublayer, post-norm (BERT) after each addition
NORM_INPUTS = {False: {"ln1": "hook_resid_pre", "ln2": "hook_resid_mid"}, True: {"ln1": "hook_resid_mid", "ln2": "hook_resid_post"}}
LN_INPUTS = NORM_INPUTS[False]  # GPT's (kept for callers written before the other families)


def norm_input(cfg: ModelConfig, ln: str) -> str:
    """The name (without "blocks.{l}.") of the stream norm `ln` ("ln1" or "ln2") of this family reads."""
    return NORM_INPUTS[cfg.post_norm][ln]


def input_label(cfg: ModelConfig, short: bool = False) -> str:
    """What enters block 0: token + position vector (GPT), the token vector alone (RoPE), LN of three vectors (BERT);
    short: at most 14 characters, for an axis."""
    if cfg.family == "bert":
        return "LN(e+pos+type)" if short else "LN(embed + pos + type)"
    return "embed" if cfg.pos_encoding == "rotary" else "embed + pos"


def stream_stages(cfg: ModelConfig) -> list[tuple[str, str]]:
    """(trace name, label) of every state of the residual stream, in order: the input, then per block
    + attention and + MLP (pre-norm), or + attention, LN1, + MLP, LN2 (post-norm: the norms sit on the stream)."""
    stages = [("blocks.0.hook_resid_pre", input_label(cfg, short=True))]
    for layer in range(cfg.n_layer):
        b = f"blocks.{layer}."
        if cfg.post_norm:
            stages += [(b + "hook_resid_mid", f"{layer}: + attention"), (b + "ln1.hook_normalized", f"{layer}: LN1")]
            stages += [(b + "hook_resid_post", f"{layer}: + MLP"), (b + "ln2.hook_normalized", f"{layer}: LN2 (out)")]
        else:
            stages += [(b + "hook_resid_mid", f"{layer}: + attention"), (b + "hook_resid_post", f"{layer}: + MLP")]
    return stages


def n_layers(tr: Trace) -> int:
    """How many blocks the traced model has."""
    return sum(1 for name in tr.cache if name.endswith(".hook_resid_post"))


def read(tr: Trace, name: str) -> np.ndarray:
    """tr[name], reading a post-norm block's output (ln2) from the next block's recorded input: the same numbers,
    without recomputing the block."""
    if name.endswith(".ln2.hook_normalized") and tr.cfg.post_norm:
        nxt = f"blocks.{int(name.split('.')[1]) + 1}.hook_resid_pre"
        if nxt in tr.cache:
            return tr[nxt]
    return tr[name]


def stand_out(norms: np.ndarray, factor: float = 5.0) -> tuple[int, float, float] | None:
    """A token whose stream grows far longer than every other token's (SmolLM2's first token reaches ~20,000:
    "massive activations"): (its position, its largest length, the largest length of any other token); None when
    no token's largest length is `factor` times every other's. norms: (n_stages, T)."""
    peak = norms.max(axis=0)  # (T,)
    if len(peak) < 2:
        return None
    p = int(peak.argmax())
    others = float(np.delete(peak, p).max())
    return (p, float(peak[p]), others) if peak[p] > factor * others else None


def block_output(tr: Trace, layer: int) -> np.ndarray:
    """(T, d) what block `layer` hands on: resid_post (pre-norm) or LN2 of it (post-norm)."""
    return read(tr, f"blocks.{layer}.{'ln2.hook_normalized' if tr.cfg.post_norm else 'hook_resid_post'}")


def residual_norms(tr: Trace) -> np.ndarray:
    """‖x_t‖₂ of the stream at every stage (see `stream_stages`) and position, shape (n_stages, T)."""
    return np.stack([np.linalg.norm(read(tr, name), axis=-1) for name, _ in stream_stages(tr.cfg)]).astype(np.float32)


def token_mean_std(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of each row, (T,) each; the population std (divide by d), as LayerNorm uses."""
    x = np.asarray(x, dtype=np.float64)
    return x.mean(axis=-1).astype(np.float32), x.std(axis=-1).astype(np.float32)


def token_rms(x: np.ndarray) -> np.ndarray:
    """Root mean square √(mean(x²)) of each row, (T,): the size RMSNorm divides by."""
    x = np.asarray(x, dtype=np.float64)
    return np.sqrt((x**2).mean(axis=-1)).astype(np.float32)


def token_stats(x: np.ndarray, norm: str) -> tuple[np.ndarray, np.ndarray]:
    """(mean, spread) of each row: the spread is the std for LayerNorm, the root mean square for RMSNorm."""
    mean, std = token_mean_std(x)
    return mean, (token_rms(x) if norm == "rmsnorm" else std)


def normalize(x: np.ndarray, eps: float, norm: str = "layernorm") -> np.ndarray:
    """The norm without its gain (and bias), per row:
    LayerNorm x̂ = (x − mean) / √(var + ε);  RMSNorm x̂ = x / √(mean(x²) + ε)."""
    x = np.asarray(x, dtype=np.float64)
    if norm == "rmsnorm":
        return (x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps)).astype(np.float32)  # (T, d)
    mean = x.mean(axis=-1, keepdims=True)  # (T, 1)
    var = x.var(axis=-1, keepdims=True)  # (T, 1), divided by d (not d − 1)
    return ((x - mean) / np.sqrt(var + eps)).astype(np.float32)  # (T, d)


@dataclass(frozen=True)
class NormSteps:
    """One norm of one block, for every token (T tokens, d = d_model)."""

    x: np.ndarray  # (T, d) input: the stream the norm reads
    x_hat: np.ndarray  # (T, d) normalized, before the gain (and bias)
    y: np.ndarray  # (T, d) x̂·w (+ b), as the model recorded it (…{ln}.hook_normalized)


LayerNormSteps = NormSteps


def norm_steps(tr: Trace, layer: int, ln: str) -> NormSteps:
    """The input, the normalized vectors and the output of norm `ln` ("ln1" or "ln2") of block `layer`."""
    cfg = tr.cfg
    x = tr[f"blocks.{layer}.{norm_input(cfg, ln)}"]  # (T, d)
    return NormSteps(x, normalize(x, cfg.ln_eps, cfg.norm), tr[f"blocks.{layer}.{ln}.hook_normalized"])


def contribution_norms(tr: Trace) -> tuple[np.ndarray, np.ndarray]:
    """How much each block writes into the stream: ‖attn_out_t‖ and ‖mlp_out_t‖, shape (n_layer, T) each."""
    L = n_layers(tr)
    attn = np.stack([np.linalg.norm(tr[f"blocks.{layer}.hook_attn_out"], axis=-1) for layer in range(L)])  # (L, T)
    mlp = np.stack([np.linalg.norm(tr[f"blocks.{layer}.hook_mlp_out"], axis=-1) for layer in range(L)])  # (L, T)
    return attn.astype(np.float32), mlp.astype(np.float32)


@dataclass(frozen=True)
class Adds:
    """Average lengths over the tokens, in one block: what attention adds to what stream, and the MLP likewise."""

    attn: float  # ‖attn_out‖
    x: float  # ‖the stream attention's output is added to‖: the block's input
    mlp: float  # ‖mlp_out‖
    x_mid: float  # ‖the stream the MLP's output is added to‖: x_mid (pre-norm) or h = LN1(x_mid) (post-norm)


def adds(tr: Trace, layer: int) -> Adds:
    b = f"blocks.{layer}."
    mid = tr[b + ("ln1.hook_normalized" if tr.cfg.post_norm else "hook_resid_mid")]  # (T, d)
    lengths = [np.linalg.norm(np.asarray(tr[b + n], dtype=np.float64), axis=-1).mean() for n in ("hook_attn_out", "hook_resid_pre", "hook_mlp_out")]
    return Adds(*(float(v) for v in lengths[:3]), float(np.linalg.norm(np.asarray(mid, dtype=np.float64), axis=-1).mean()))


def top_neurons(post: np.ndarray, n: int, by_size: bool = False) -> np.ndarray:
    """The n neurons with the largest activation on any token (by_size: the largest |activation|), strongest first.
    post: (T, d_mlp) → (n,) neuron ids."""
    peak = (np.abs(post) if by_size else post).max(axis=0)  # (d_mlp,)
    return np.argsort(-peak, kind="stable")[:n]


def activation(x: np.ndarray, name: str) -> np.ndarray:
    """The MLP's activation as the model computes it: "gelu_new" = GPT-2's tanh approximation, "gelu" = exact x·Φ(x),
    "silu" = x·σ(x) (the gate of Llama's SwiGLU)."""
    t = torch.tensor(np.asarray(x, dtype=np.float32))
    if name == "silu":
        return F.silu(t).numpy()
    return F.gelu(t, approximate="tanh" if name == "gelu_new" else "none").numpy()


def gelu(x: np.ndarray, activation_name: str) -> np.ndarray:
    """GELU as the model computes it ("gelu_new" tanh form or exact "gelu")."""
    return activation(x, activation_name)


def activation_curve(pre: np.ndarray, name: str, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """The activation drawn over the range of `pre`, at least −3…3: (x, f(x)), (n,) each."""
    x = np.linspace(min(float(np.min(pre)), -3.0), max(float(np.max(pre)), 3.0), n, dtype=np.float32)
    return x, activation(x, name)


def gated(cfg: ModelConfig) -> bool:
    """A SwiGLU MLP: post = SiLU(x·W_gate) ⊙ x·W_in (recorded as mlp.hook_pre = the gate, mlp.hook_pre_linear)."""
    return cfg.activation == "silu"


@dataclass(frozen=True)
class SwiGLU:
    """One token's SwiGLU neurons, the n with the largest |post| first."""

    neurons: np.ndarray  # (n,) neuron ids
    gate: np.ndarray  # (n,) x·W_gate
    silu_gate: np.ndarray  # (n,) SiLU(x·W_gate)
    linear: np.ndarray  # (n,) x·W_in
    post: np.ndarray  # (n,) SiLU(gate) ⊙ linear, as the model recorded it


def swiglu(tr: Trace, layer: int, tok: int, n: int) -> SwiGLU:
    b = f"blocks.{layer}.mlp."
    gate, lin, post = tr[b + "hook_pre"][tok], tr[b + "hook_pre_linear"][tok], tr[b + "hook_post"][tok]  # (d_mlp,) each
    ids = np.argsort(-np.abs(post), kind="stable")[:n]
    return SwiGLU(ids, gate[ids], activation(gate[ids], "silu"), lin[ids], post[ids])


def active_counts(post: np.ndarray, tok: int, threshold: float = 0.1, by_size: bool = False) -> tuple[int, float]:
    """(neurons of token `tok` above the threshold, share of all tokens' neurons above it); by_size compares |post|."""
    big = (np.abs(post) if by_size else post) > threshold  # (T, d_mlp)
    return int(big[tok].sum()), float(big.mean())
