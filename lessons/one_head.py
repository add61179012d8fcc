"""One head's attention, step by step, from a trace: X → Q, K, V → QKᵀ → ÷√d_k → mask → softmax → weights·V."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer import Trace, visible_mask

from .probability import masked_softmax


def causal_mask(T: int) -> np.ndarray:
    """M[i, j] = True where query i may look at key j, i.e. j ≤ i. Shape (T, T)."""
    return visible_mask(T, causal=True)[0, 0].numpy()


def weighted_values(weights_row: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The terms α_ij · v_j of z_i = Σ_j α_ij v_j, one row per key j. weights_row (T,), v (T, hs) → (T, hs)."""
    return (np.asarray(weights_row, dtype=np.float32)[:, None] * np.asarray(v, dtype=np.float32)).astype(np.float32)


@dataclass(frozen=True)
class HeadSteps:
    """Every step of one head's attention, for one text (T tokens, hs = d_head)."""

    x: np.ndarray  # (T, d) the attention's input: LayerNorm 1 of the residual stream
    q: np.ndarray  # (T, hs)
    k: np.ndarray  # (T, hs)
    v: np.ndarray  # (T, hs)
    raw: np.ndarray  # (T, T) Q·Kᵀ
    scaled: np.ndarray  # (T, T) raw / divisor / τ
    masked: np.ndarray  # (T, T) scaled, −∞ where the mask hides a key
    weights: np.ndarray  # (T, T) softmax rows
    z: np.ndarray  # (T, hs) weights·V
    visible: np.ndarray  # (T, T) bool, True = may attend
    divisor: float  # √d_k, or 1 when the scaling is switched off
    tau: float  # the head's attention temperature


def head_steps(tr: Trace, layer: int, head: int, scale: bool = True) -> HeadSteps:
    """One head's steps from a trace. scale=False recomputes them without ÷√d_k: softmax(mask(Q·Kᵀ / τ)) and its weights·V."""
    a = f"blocks.{layer}.attn."
    q, k, v = tr.head_qkv(layer, head)  # (T, hs) each: the scored query and key (after RoPE), the group's value
    raw, masked = tr[a + "hook_scores_raw"][head], tr[a + "hook_scores_masked"][head]  # (T, T)
    visible = ~np.isneginf(masked)
    taus = tr.interventions.temperatures(layer, tr[a + "hook_q"].shape[1])
    tau = 1.0 if taus is None else float(taus[head])
    x = tr.attention_input(layer)  # (T, d)
    if scale:
        scaled, weights, z = tr[a + "hook_scores_scaled"][head], tr[a + "hook_pattern"][head], tr[a + "hook_z"][:, head]
    else:
        # without the scaling: e_ij = q_i·k_j / τ, then the mask and softmax as usual
        scaled = (raw / np.float32(tau)).astype(np.float32)  # (T, T)
        masked = np.where(visible, scaled, -np.inf).astype(np.float32)  # (T, T)
        weights = masked_softmax(raw, visible, temperature=tau)  # (T, T)
        # z_i = Σ_j α_ij v_j
        z = (weights @ v).astype(np.float32)  # (T, hs)
    divisor = float(np.sqrt(q.shape[1])) if scale else 1.0
    return HeadSteps(x, q, k, v, raw, scaled, masked, weights, z, visible, divisor, tau)
