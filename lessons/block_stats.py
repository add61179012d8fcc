"""What one transformer block does to the residual stream, measured from a trace.

The stream x (one vector per token) runs through every block as
    x_mid = x + Attn(LN1(x)),    x_out = x_mid + MLP(LN2(x_mid)).
These helpers read the recorded tensors and summarise them: vector lengths, LayerNorm's mean and
spread per token, the MLP's neurons. Plain numpy; nothing draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from transformer import Trace

LN_INPUTS = {"ln1": "hook_resid_pre", "ln2": "hook_resid_mid"}  # which stream each LayerNorm of a block reads


def stream_stages(n_layer: int) -> list[tuple[str, str]]:
    """(trace name, label) of every state of the residual stream, in order: the input, then + attention and + MLP per block."""
    stages = [("blocks.0.hook_resid_pre", "embed + pos")]
    for layer in range(n_layer):
        stages += [(f"blocks.{layer}.hook_resid_mid", f"{layer}: + attention"), (f"blocks.{layer}.hook_resid_post", f"{layer}: + MLP")]
    return stages


def n_layers(tr: Trace) -> int:
    """How many blocks the traced model has."""
    return sum(1 for name in tr.cache if name.endswith(".hook_resid_post"))


def residual_norms(tr: Trace) -> np.ndarray:
    """‖x_t‖₂ of the stream at every stage (see `stream_stages`) and position, shape (2·n_layer + 1, T)."""
    return np.stack([np.linalg.norm(tr[name], axis=-1) for name, _ in stream_stages(n_layers(tr))]).astype(np.float32)


def token_mean_std(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of each row, (T,) each; the population std (divide by d), as LayerNorm uses."""
    x = np.asarray(x, dtype=np.float64)
    return x.mean(axis=-1).astype(np.float32), x.std(axis=-1).astype(np.float32)


def normalize(x: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm without its gain and bias: x̂ = (x − mean) / √(var + ε), per row."""
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(axis=-1, keepdims=True)  # (T, 1)
    var = x.var(axis=-1, keepdims=True)  # (T, 1), divided by d (not d − 1)
    return ((x - mean) / np.sqrt(var + eps)).astype(np.float32)  # (T, d)


@dataclass(frozen=True)
class LayerNormSteps:
    """One LayerNorm of one block, for every token (T tokens, d = d_model)."""

    x: np.ndarray  # (T, d) input: the residual stream
    x_hat: np.ndarray  # (T, d) (x − mean) / √(var + ε): mean 0, std ≈ 1 per token
    y: np.ndarray  # (T, d) x̂·w + b, as the model recorded it (…ln1.hook_normalized)


def layernorm_steps(tr: Trace, layer: int, ln: str, eps: float) -> LayerNormSteps:
    """The input, the normalized vectors and the output of LayerNorm `ln` ("ln1" or "ln2") of block `layer`."""
    x = tr[f"blocks.{layer}.{LN_INPUTS[ln]}"]  # (T, d)
    return LayerNormSteps(x, normalize(x, eps), tr[f"blocks.{layer}.{ln}.hook_normalized"])


def contribution_norms(tr: Trace) -> tuple[np.ndarray, np.ndarray]:
    """How much each block writes into the stream: ‖attn_out_t‖ and ‖mlp_out_t‖, shape (n_layer, T) each."""
    L = n_layers(tr)
    attn = np.stack([np.linalg.norm(tr[f"blocks.{layer}.hook_attn_out"], axis=-1) for layer in range(L)])  # (L, T)
    mlp = np.stack([np.linalg.norm(tr[f"blocks.{layer}.hook_mlp_out"], axis=-1) for layer in range(L)])  # (L, T)
    return attn.astype(np.float32), mlp.astype(np.float32)


def top_neurons(post: np.ndarray, n: int) -> np.ndarray:
    """The n neurons with the largest activation on any token, strongest first. post: (T, d_mlp) → (n,) neuron ids."""
    peak = post.max(axis=0)  # (d_mlp,)
    return np.argsort(-peak, kind="stable")[:n]


def gelu(x: np.ndarray, activation: str) -> np.ndarray:
    """The MLP's activation as the model computes it: "gelu_new" = GPT-2's tanh approximation, "gelu" = exact x·Φ(x)."""
    approximate = "tanh" if activation == "gelu_new" else "none"
    return F.gelu(torch.tensor(np.asarray(x, dtype=np.float32)), approximate=approximate).numpy()
