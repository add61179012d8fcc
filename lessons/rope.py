"""What the RoPE page computes: the rotation angles of a head, one query and one key before and after rotation,
and the proof, on the model's own vectors, that a rotated score depends on the offset m − n only.

RoPE (rotary position embedding) adds no position vector to the tokens. Inside every attention layer it turns
each pair of a query's (and a key's) numbers by an angle proportional to the token's position:

    pair i = dimensions (i, i + d/2) of a head (the layout Hugging Face's Llama uses), i = 0 … d/2 − 1
    ω_i = θ^(−2i/d)                     how fast pair i turns (radians per position)
    angle(m, i) = m · ω_i                the angle of pair i at position m
    (x, y) → (x cos a − y sin a, y cos a + x sin a)

Turning a query by m·ω and a key by n·ω leaves their dot product depending on the difference (m − n)·ω only.
Everything here uses the engine's own rotary_angles, rotation and rotate, so the numbers are the model's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer import Trace
from transformer.config import ModelConfig
from transformer.layers import rotary_angles, rotate, rotation


def has_rope(cfg: ModelConfig) -> bool:
    return cfg.pos_encoding == "rotary"


def angle_table(cfg: ModelConfig, n_pos: int) -> np.ndarray:
    """angle(m, i) = m · θ^(−2i/d_head) for positions m = 0 … n_pos − 1 and pairs i, in radians: (n_pos, d_head/2)."""
    return rotary_angles(torch.arange(n_pos), cfg.d_head, cfg.rope_theta).numpy()  # (n_pos, d_head/2)


def frequencies(cfg: ModelConfig) -> np.ndarray:
    """ω_i = θ^(−2i/d_head): the angle pair i turns per position, (d_head/2,)."""
    return angle_table(cfg, 2)[1]  # position 1's angles are the frequencies themselves


def wavelengths(cfg: ModelConfig) -> np.ndarray:
    """2π / ω_i: how many positions pair i needs for one full turn, (d_head/2,)."""
    return (2 * np.pi / frequencies(cfg).astype(np.float64)).astype(np.float32)


def pairs(x: np.ndarray) -> np.ndarray:
    """A head's vector (…, d) as its d/2 pairs (…, d/2, 2): pair i = (x_i, x_{i + d/2})."""
    half = x.shape[-1] // 2
    return np.stack([x[..., :half], x[..., half:]], axis=-1)  # (…, d/2, 2)


def rotate_at(x: np.ndarray, positions: np.ndarray, cfg: ModelConfig) -> np.ndarray:
    """One pre-RoPE vector x (d,) turned as if it stood at each of `positions` (S,):
    (S, d), with the model's own angles."""
    positions = torch.as_tensor(np.asarray(positions), dtype=torch.int64)  # (S,)
    angles = rotary_angles(positions, cfg.d_head, cfg.rope_theta)  # (S, d/2)
    xs = torch.from_numpy(np.array(x, dtype=np.float32)).expand(len(positions), -1)  # (S, d)
    return rotate(xs, rotation(angles)).numpy()  # (S, d)


@dataclass(frozen=True)
class QueryKey:
    """Query head `head` at position m and the key it meets at position n (from key/value head `kv_head`)."""

    layer: int
    head: int
    kv_head: int
    m: int
    n: int
    q: np.ndarray  # (d,) q_m before RoPE (the trace's hook_q)
    k: np.ndarray  # (d,) k_n before RoPE (hook_k of the head's key/value head)
    rot_q: np.ndarray  # (d,) q_m after RoPE (hook_rot_q)
    rot_k: np.ndarray  # (d,) k_n after RoPE (hook_rot_k)
    angle_m: np.ndarray  # (d/2,) the angles q_m was turned by
    angle_n: np.ndarray  # (d/2,) the angles k_n was turned by
    score: float  # the trace's raw score hook_scores_raw[head, m, n] = rot_q · rot_k

    @property
    def vectors(self) -> np.ndarray:
        """q before, q turned, k before, k turned: (4, d)."""
        return np.stack([self.q, self.rot_q, self.k, self.rot_k])  # (4, d)

    @property
    def pair_dots(self) -> np.ndarray:
        """Each pair's share of the score, (d/2,): they add up to rot_q · rot_k."""
        return (pairs(self.rot_q) * pairs(self.rot_k)).sum(axis=-1)

    def top_pairs(self, k: int = 3) -> list[int]:
        """The k pairs that add the most to the score, by size |share|, largest first."""
        return np.argsort(-np.abs(self.pair_dots))[:k].tolist()


def query_key(tr: Trace, cfg: ModelConfig, layer: int, head: int, m: int, n: int) -> QueryKey:
    """q_m and k_n of one head before and after rotation, read from the trace."""
    a = f"blocks.{layer}.attn."
    g = cfg.kv_head(head)
    angles = angle_table(cfg, max(m, n) + 1)  # (max(m, n) + 1, d/2)
    return QueryKey(
        layer,
        head,
        g,
        m,
        n,
        q=tr[a + "hook_q"][m, head],
        k=tr[a + "hook_k"][n, g],
        rot_q=tr[a + "hook_rot_q"][m, head],
        rot_k=tr[a + "hook_rot_k"][n, g],
        angle_m=angles[m],
        angle_n=angles[n],
        score=float(tr[a + "hook_scores_raw"][head, m, n]),
    )


@dataclass(frozen=True)
class Shifts:
    """Scores of the same q_m and k_n (pre-RoPE vectors of the model) placed at other positions."""

    shifts: np.ndarray  # (S,) s
    both: np.ndarray  # (S,) rot(q, m + s) · rot(k, n + s): both moved by s, the offset stays m − n
    query_only: np.ndarray  # (S,) rot(q, m + s) · rot(k, n): only the query moved, the offset becomes m − n + s
    score: float  # rot(q, m) · rot(k, n), s = 0

    @property
    def largest_change(self) -> float:
        """max |both − score|: 0 up to float32 rounding."""
        return float(np.abs(self.both - self.score).max())

    def index(self, s: int) -> int:
        """Where shift s is in `shifts`."""
        return int(np.searchsorted(self.shifts, s))


def shift_scores(q: np.ndarray, k: np.ndarray, m: int, n: int, shifts: np.ndarray, cfg: ModelConfig) -> Shifts:
    """q_m · k_n with both vectors rotated to (m + s, n + s), and with only the query moved to m + s, for every shift s.

    q, k: (d,) pre-RoPE vectors; shifts must keep every position ≥ 0.
    """
    shifts = np.asarray(shifts, dtype=np.int64)  # (S,)
    if (m + shifts).min() < 0 or (n + shifts).min() < 0:
        raise ValueError("a shift may not move a position below 0")
    rq = rotate_at(q, m + shifts, cfg).astype(np.float64)  # (S, d)
    rk = rotate_at(k, n + shifts, cfg).astype(np.float64)  # (S, d)
    rk_fixed = rotate_at(k, np.array([n]), cfg)[0].astype(np.float64)  # (d,)
    both = (rq * rk).sum(axis=1)  # (S,)
    query_only = rq @ rk_fixed  # (S,)
    score = float(rotate_at(q, np.array([m]), cfg)[0].astype(np.float64) @ rk_fixed)
    return Shifts(shifts, both.astype(np.float32), query_only.astype(np.float32), score)


# --- the page's texts ---

NO_ROPE = (
    "**No RoPE in this model.** This model adds a position vector to each token instead: "
    "see *Positional encoding*. Its queries and keys are never turned; "
    "below are the position vectors it adds. The part *Shared key/value heads* applies to every model."
)


def angles_text(cfg: ModelConfig) -> str:
    """How fast the fastest and the slowest pair turn, in this model."""
    w = wavelengths(cfg)  # (d_head/2,)
    return (
        f"Each head has {cfg.d_head // 2} pairs of numbers. Pair 0 turns fastest, once every {w[0]:.1f} positions: "
        f"it tells near neighbours apart. The last pair turns once every {w[-1]:,.0f} positions: "
        "over a whole text it barely moves, so it can match tokens by content wherever they are. "
        f"The angles depend only on the position, never on the token (θ = {cfg.rope_theta:g}, d = {cfg.d_head})."
    )


def score_text(qk: QueryKey) -> str:
    """The score is the sum of the pairs' shares; which pairs add the most."""
    return (
        f"The model's score, {qk.score:.4f}, is the sum of the bars ({qk.pair_dots.sum():.4f}); "
        f"pairs {', '.join(map(str, qk.top_pairs()))} add the most here. Within a pair both hands "
        f"keep their lengths; only the angle between them changes, by (m − n)·ω_i = {qk.m - qk.n}·ω_i."
    )


def shift_text(m: int, n: int) -> str:
    """What the shift chart does with q_m and k_n."""
    return (
        f"Take the model's own q_{m} and k_{n} (before turning) and pretend they stood elsewhere: "
        f"turn them as if they were at {m} + s and {n} + s. The offset stays the same, "
        "and so does the score. Move only the query and the offset changes, and the score with it."
    )


def shift_caption(sh: Shifts) -> str:
    """How flat the "both moved" line is, and why."""
    return (
        f"Over all {len(sh.shifts)} shifts the blue line moves by at most {sh.largest_change:.1e}: "
        "rounding of 32-bit numbers, as in the model. In a real longer text the vectors "
        "themselves would differ too (the tokens before would change them); RoPE alone never does."
    )
