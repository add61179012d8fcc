"""The attention core that every model family calls: raw → ÷√d_k → ÷τ → mask → softmax → ×V.

Interventions (a temperature, the causal mask switched off, ablated heads) are applied here and
nowhere else, so every family shows the same steps under the same names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

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

    def kept_heads(self, layer: int, n_head: int) -> torch.Tensor | None:
        """1 for each head of `layer` that is kept, 0 for an ablated one, shape (n_head,); None when none is ablated."""
        if not any(lay == layer for lay, _ in self.ablate):
            return None
        return torch.tensor([float((layer, h) not in self.ablate) for h in range(n_head)])


NO_INTERVENTIONS = Interventions()


def wants(rec: Record, name: str) -> bool:
    """Will `rec` keep what is written under `name`? A plain dict keeps everything; a record with a `keep` test
    (trace.Recorder) only the names it accepts. A layer asks before computing an
    intermediate that only a record needs."""
    keep = getattr(rec, "keep", None)
    return rec is not None and (keep is None or keep(name))


def visible_mask(T: int, causal: bool, real: torch.Tensor | None = None, S: int | None = None) -> torch.Tensor:
    """mask[b, 0, i, j]: may query i look at key j? Shape (1 or B, 1, T, S).

    causal: j ≤ i (a decoder reading its own text); real (B, S) bool: False marks padding keys, never seen.
    S (keys) defaults to T; cross-attention passes the source length and causal=False.
    """
    mask = torch.ones(T, T if S is None else S, dtype=torch.bool)  # (T, S)
    if causal:
        mask = mask.tril()  # j ≤ i
    mask = mask[None, None]  # (1, 1, T, S)
    if real is not None:
        mask = mask & real.bool()[:, None, None, :]  # (B, 1, T, S)
    return mask


def weigh(raw, mask, d_head: int, temperature=None):
    """Raw scores (B, nh, T, S) → (scaled, masked, weights), each (B, nh, T, S): the steps from Q·Kᵀ to the
    attention weights. mask: as attention's; temperature: (nh,) or None."""
    # e / √d_k, then ÷ τ (the attention temperature)
    scaled = raw / math.sqrt(d_head)  # (B, nh, T, S)
    if temperature is not None:
        scaled = scaled / temperature.view(1, -1, 1, 1)
    # −∞ where a query may not look (the future, padding)
    masked = torch.where(mask, scaled, float("-inf"))  # (B, nh, T, S)
    # α_ij = exp(e_ij) / Σ_j' exp(e_ij'); a row with no visible key attends to nothing
    weights = torch.softmax(masked, dim=-1).nan_to_num(0.0)  # (B, nh, T, S)
    return scaled, masked, weights


def attention(q, k, v, mask, temperature=None, rec: Record = None, name: str = ""):
    """Scaled dot-product attention, one step at a time.

    q: (B, nh, T, hs); k, v: (B, n_kv, S, hs) with n_kv dividing nh (grouped-query attention: query heads
    g·nh/n_kv … share key/value head g); mask: bool, broadcastable to (B, nh, T, S), True = may attend;
    temperature: (nh,) or None. Returns z = weights·V, shape (B, nh, T, hs).
    """
    B, nh, T, hs = q.shape
    n_kv, S = k.shape[1], k.shape[2]
    # e_ij = q_i · k_j; the query heads of a group, side by side, meet their shared key head in one product
    raw = (q.reshape(B, n_kv, nh // n_kv * T, hs) @ k.transpose(-2, -1)).view(B, nh, T, S)  # (B, nh, T, S)
    scaled, masked, weights = weigh(raw, mask, hs, temperature)  # (B, nh, T, S) each
    # z_i = Σ_j α_ij v_j
    z = (weights.view(B, n_kv, -1, S) @ v).view(B, nh, T, hs)  # (B, nh, T, hs), each group's weights with its values
    if rec is not None:
        rec[name + "hook_scores_raw"] = raw
        rec[name + "hook_scores_scaled"] = scaled
        rec[name + "hook_scores_masked"] = masked
        rec[name + "hook_pattern"] = weights
    return z
