"""What the shared-heads part of the RoPE page computes: which query heads read which key/value head
(grouped-query attention, GQA), the real keys and values of each key/value head, and the patterns of the
query heads of one group.

    group size  G = n_head / n_kv
    query head h reads key/value head g = ⌊h / G⌋
    score_h = Q_h · K_gᵀ,   output_h = softmax(score_h / √d) · V_g

The heads of a group meet the same keys and mix the same values, but each asks its own question (its own W_Q),
so their patterns still differ. GPT-2 and BERT have one key/value head per query head (G = 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer import Trace
from transformer.config import ModelConfig


def has_gqa(cfg: ModelConfig) -> bool:
    """True when several query heads share one key/value head."""
    return cfg.n_kv_heads < cfg.n_head


def group_size(cfg: ModelConfig) -> int:
    """G = n_head / n_kv: query heads per key/value head."""
    return cfg.n_head // cfg.n_kv_heads


def sharing_table(cfg: ModelConfig) -> np.ndarray:
    """table[h, g] = 1 when query head h reads key/value head g (cfg.kv_head), else 0: (n_head, n_kv)."""
    table = np.zeros((cfg.n_head, cfg.n_kv_heads), dtype=np.float32)
    table[np.arange(cfg.n_head), [cfg.kv_head(h) for h in range(cfg.n_head)]] = 1.0
    return table


def group_heads(cfg: ModelConfig, g: int) -> list[int]:
    """The query heads that read key/value head g."""
    return [h for h in range(cfg.n_head) if cfg.kv_head(h) == g]


def kv_head_name(cfg: ModelConfig, g: int) -> str:
    """Key/value head g with the query heads that read it: "K/V head 1 (query heads 3, 4, 5)"."""
    return f"K/V head {g} (query heads {', '.join(map(str, group_heads(cfg, g)))})"


def keys_used(tr: Trace, cfg: ModelConfig, layer: int) -> np.ndarray:
    """The keys the scores use, (T, n_kv, d): after RoPE for a rotary model, else K itself."""
    a = f"blocks.{layer}.attn."
    return tr[a + "hook_rot_k"] if cfg.pos_encoding == "rotary" else tr[a + "hook_k"]


@dataclass(frozen=True)
class Group:
    """One key/value head of a layer and the query heads that share it."""

    layer: int
    kv_head: int
    heads: list[int]  # its query heads
    keys: np.ndarray  # (T, d) the keys they all meet (after RoPE for a rotary model)
    values: np.ndarray  # (T, d) the values they all mix
    patterns: np.ndarray  # (G, T, T) each query head's weights

    def differences(self) -> np.ndarray:
        """How far apart the patterns of two heads of the group are, (G, G): the average over query rows of
        ½ Σ_j |α_ij − β_ij| (0 = the same weights, 1 = no key in common)."""
        p = self.patterns.astype(np.float64)  # (G, T, T)
        return (0.5 * np.abs(p[:, None] - p[None]).sum(axis=-1).mean(axis=-1)).astype(np.float32)  # (G, G)

    def mean_difference(self) -> float:
        """The differences of every pair of distinct heads of the group, averaged."""
        return float(self.differences()[np.triu_indices(len(self.heads), 1)].mean())  # over the G(G − 1)/2 pairs


def group(tr: Trace, cfg: ModelConfig, layer: int, g: int) -> Group:
    """Key/value head g of `layer`: its keys, values and the patterns of its query heads."""
    heads = group_heads(cfg, g)
    pattern = tr[f"blocks.{layer}.attn.hook_pattern"]  # (nh, T, T)
    return Group(
        layer, g, heads, keys_used(tr, cfg, layer)[:, g], tr[f"blocks.{layer}.attn.hook_v"][:, g], pattern[heads]
    )


# --- the page's texts ---


def sharing_text(cfg: ModelConfig) -> str:
    """What sharing key/value heads means in this model (several query heads per key/value head)."""
    G = group_size(cfg)
    return (
        rf"Each key/value head serves {G} query heads: "
        r"their scores $Q_h K_g^\top$ use the **same** keys $K_g$, and they mix the same values $V_g$. "
        f"This model keeps {cfg.n_kv_heads} keys and values per token and "
        f"layer instead of {cfg.n_head}: {G}× less memory while it writes."
    )


def differences_text(grp: Group) -> str:
    """How different the patterns of a group's query heads are."""
    return (
        "Same keys, different questions: two heads of this group "
        f"differ by {grp.mean_difference():.2f} on average (half the summed gap between their weights, "
        "averaged over the rows: 0 = identical, 1 = no key in common). Each query head has its own W_Q."
    )
