"""Softmax experiments in numpy: temperature, entropy, and why attention divides by √d_k."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from transformer import ModelConfig, Trace
from transformer.errors import ScoreInputError

from .probability import entropy_bits, softmax

MAX_SCORES = 64  # longest score vector the lab accepts
MAX_ABS_SCORE = 1e6  # larger scores only overflow, they teach nothing more
D_KS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)  # key sizes of the √d_k experiment


def parse_scores(text: str) -> np.ndarray:
    """Text "2, 4, 5" → array([2., 4., 5.]); commas, semicolons or spaces separate the numbers."""
    parts = [p for p in re.split(r"[,;\s]+", str(text).strip()) if p]
    if not parts:
        raise ScoreInputError("Type a few numbers separated by commas, e.g. 2, 4, 5.")
    if len(parts) > MAX_SCORES:
        raise ScoreInputError(f"That is {len(parts):,} numbers; use at most {MAX_SCORES}.")
    values = []
    for i, p in enumerate(parts, start=1):
        try:
            v = float(p)
        except ValueError:
            raise ScoreInputError(
                f"Entry {i} is not a number. Type numbers separated by commas, e.g. 2, 4, 5."
            ) from None
        if not math.isfinite(v):
            raise ScoreInputError(
                f"Entry {i} is not a finite number (infinite or NaN); use ordinary numbers such as 2.5 or -1."
            )
        if abs(v) > MAX_ABS_SCORE:
            raise ScoreInputError(
                f"Entry {i} is too large: keep every score between −{MAX_ABS_SCORE:,.0f} and {MAX_ABS_SCORE:,.0f}."
            )
        values.append(v)
    return np.array(values)


def softmax_t(scores: np.ndarray, temperature: float = 1.0, scale: float = 1.0) -> np.ndarray:
    """softmax(scale · s / τ): τ < 1 sharpens, τ > 1 flattens."""
    return softmax(scale * np.asarray(scores, dtype=np.float64) / temperature)


def temperature_sweep(scores: np.ndarray, taus: np.ndarray, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Entropy (bits) and top probability of softmax(scale · s / τ) for every τ in `taus`."""
    # (n_tau, n)
    p = softmax(scale * np.asarray(scores, dtype=np.float64)[None, :] / np.asarray(taus, dtype=np.float64)[:, None])
    return entropy_bits(p), p.max(axis=-1)


# The worked table's numbers (printf style, as Streamlit's number columns read it): 4 significant digits, and
# e-notation once a number has more than 4 digits before the point or 4 zeros after it. At scale ×100 e^z reaches
# 1e+304 and a weight 1e-87; written out in full they are 300 digits wide and the grid cuts them off ("00000000000").
TABLE_FORMAT = "%.4g"
TABLE_CHARS = 11  # the longest number TABLE_FORMAT writes for a finite float64: "-1.798e+308"


def worked_softmax(z: np.ndarray) -> dict[str, np.ndarray | float]:
    """The softmax of z spelled out: shift m (0 unless e^z would overflow), e^(z − m), their sum, the weights."""
    z = np.asarray(z, dtype=np.float64)
    m = float(z.max()) if z.max() > 700 else 0.0  # e^710 overflows float64
    e = np.exp(z - m)
    return {"z": z, "shift": m, "exp": e, "sum": float(e.sum()), "weights": e / e.sum()}


def latex_number(v: float) -> str:
    """7.389 → '7.389'; 1.4e+217 → '1.4 \\times 10^{217}'."""
    mantissa, _, exponent = f"{v:.4g}".partition("e")
    return mantissa + (rf" \times 10^{{{int(exponent)}}}" if exponent else "")


def worked_latex(w: dict) -> tuple[str, str]:
    """worked_softmax's numbers as two LaTeX lines: Σ e^z spelled out, then each weight as a fraction."""
    terms = " + ".join(rf"e^{{{latex_number(z - w['shift'])}}}" for z in w["z"])
    values = " + ".join(latex_number(e) for e in w["exp"])
    total = latex_number(w["sum"])
    fractions = ", ".join(rf"\tfrac{{{latex_number(e)}}}{{{total}}}" for e in w["exp"])
    return (
        rf"\textstyle\sum_j e^{{z_j}} = {terms} = {values} = {total}",
        rf"\alpha = \left({fractions}\right) = (" + ", ".join(f"{a:.3f}" for a in w["weights"]) + ")",
    )


@dataclass(frozen=True)
class RealRow:
    """One query row of a model's head: its scores at τ = 1 over the keys it may see, softmax at τ by
    hand, and the model's own weights."""

    keys: np.ndarray  # (n,) the key positions the query may see
    scores: np.ndarray  # (n,) q·k / √d_k at τ = 1
    weights: np.ndarray  # (n,) softmax(scores / τ), by hand
    model: np.ndarray  # (n,) the weights of the model run with τ on this head only
    weights_at_1: np.ndarray  # (n,) softmax(scores): the model as trained


def real_row(at_1: Trace, tempered: np.ndarray, layer: int, head: int, query: int, tau: float) -> RealRow:
    """Row `query` of (layer, head): at_1 is the trace at τ = 1; tempered, the head's (T, T)
    weights with τ on this one head."""
    # (T,) scaled scores at τ = 1, −∞ for a decoder's future
    row = at_1[f"blocks.{layer}.attn.hook_scores_masked"][head, query]
    keys = np.flatnonzero(~np.isneginf(row))
    return RealRow(keys, row[keys], softmax_t(row[keys], tau), tempered[query, keys], softmax(row[keys]))


@dataclass(frozen=True)
class DkExperiment:
    """Random q and k with unit-variance entries, for each key size d_k; n_queries queries against n_keys keys each."""

    d_ks: np.ndarray  # (n_d,)
    scores: np.ndarray  # (n_d, n_queries, n_keys) raw q·k
    std_raw: np.ndarray  # (n_d,) spread of q·k: grows like √d_k
    std_scaled: np.ndarray  # (n_d,) spread of q·k / √d_k: stays ≈ 1
    top_raw: np.ndarray  # (n_d,) mean largest softmax weight of a row of raw scores
    top_scaled: np.ndarray  # (n_d,) the same with ÷√d_k

    def example(self, i: int, query: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """One query's softmax over its keys at d_k = d_ks[i]: (without ÷√d_k, with)."""
        s = self.scores[i, query]  # (n_keys,)
        return softmax(s), softmax(s / math.sqrt(self.d_ks[i]))


def sqrt_dk_experiment(
    d_ks: tuple[int, ...] = D_KS, n_queries: int = 256, n_keys: int = 8, seed: int = 0
) -> DkExperiment:
    """Dot products of random unit-variance vectors as d_k grows, with and without the division by √d_k."""
    rng = np.random.default_rng(seed)
    scores = np.empty((len(d_ks), n_queries, n_keys))
    for i, d in enumerate(d_ks):
        q = rng.standard_normal((n_queries, 1, d))  # (n_queries, 1, d_k)
        k = rng.standard_normal((n_queries, n_keys, d))  # (n_queries, n_keys, d_k)
        # e_j = q · k_j
        scores[i] = (q * k).sum(-1)  # (n_queries, n_keys)
    root = np.sqrt(np.asarray(d_ks, dtype=np.float64))[:, None, None]  # (n_d, 1, 1)
    return DkExperiment(
        d_ks=np.asarray(d_ks),
        scores=scores,
        std_raw=scores.std(axis=(1, 2)),
        std_scaled=(scores / root).std(axis=(1, 2)),
        top_raw=softmax(scores).max(-1).mean(-1),
        top_scaled=softmax(scores / root).max(-1).mean(-1),
    )


# --- The Softmax & temperature page's words ---


def dk_note(ex: DkExperiment, i: int) -> str:
    """The spread of the scores at d_k = d_ks[i], without and with ÷√d_k, in words."""
    d_k = int(ex.d_ks[i])
    return (
        f"At d_k = {d_k} the scores spread by **{ex.std_raw[i]:.2f}** (√d_k = {math.sqrt(d_k):.2f}); "
        f"divided by √d_k, by **{ex.std_scaled[i]:.2f}**. One query's {ex.scores.shape[2]} weights:"
    )


def real_row_text(cfg: ModelConfig, layer: int, head: int) -> str:
    """What section 3 shows for this model: which scores (after RoPE in a rotary model), over which keys (a decoder's
    earlier tokens, an encoder's whole sentence), and how the page's τ differs from the sidebar's."""
    qk = "q·k (after RoPE, as the model dots them)" if cfg.pos_encoding == "rotary" else "q·k"
    seen = "the earlier tokens and itself" if cfg.causal else "the whole sentence: an encoder has no causal mask"
    return (
        f"Now real scores: the sidebar sentence, layer {layer}, head {head}. Pick a query token; its scores are "
        f"the model's {qk} / √d_k for every key it may see ({seen}). The page's τ divides them before softmax. "
        f"The orange bars are the model's layer {layer} with τ on this one head only (from its recorded scores: "
        "the layers before it do not change): they equal the blue ones. The sidebar's τ does "
        "the same to every head's weights the other pages show; with its *τ in every layer* on, it divides "
        "the scores of every head in a new forward pass instead, so later layers also receive different inputs."
    )


def real_row_note(r: RealRow, tau: float) -> str:
    """The row's top weight and entropy at τ, against the model as trained (τ = 1)."""
    p, p1 = r.weights, r.weights_at_1
    return (
        f"Top weight {p.max():.3f} and entropy {entropy_bits(p):.3f} bits at τ = {tau:g}; "
        f"at τ = 1 (as trained): {p1.max():.3f} and {entropy_bits(p1):.3f} bits."
    )
