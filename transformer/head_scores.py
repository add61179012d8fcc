"""Head scores: what each attention head does, measured from its attention pattern.

Every score is read off a pattern α (T×T, rows sum to 1, row i = query i) and averaged over the queries
i ≥ 1 (in a decoder, query 0 sees only itself, so every score of row 0 is fixed):

    previous-token   P = mean_i α[i, i−1]                             weight on the token just before
    duplicate-token  D = mean_i Σ_{j<i, x_j = x_i} α[i, j]            weight on earlier copies of the same token
    induction        I = mean_i Σ_{1≤j<i, x_{j−1} = x_i} α[i, j]      weight on the token AFTER an earlier copy
    first-token      S = mean_i α[i, 0]                               the "attention sink"
    self             σ = mean_i α[i, i]
    distance         d = mean_i Σ_j α[i, j] |i − j|                   how far back the head looks, in tokens
    spread           H = mean_i −Σ_j α[i, j] log₂ α[i, j]             entropy of a row, in bits (0 = one key)

D and I average only over the queries that have a target (an earlier copy); without any, they are NaN.

They are measured on a probe that makes induction visible (`probe_ids`): a run of random tokens, seeded, drawn
from the model's vocabulary without its special tokens and without repeats, then the same run again. In the
second copy, a head that copies "what came after this token last time" puts its weight one position after the
earlier occurrence: the induction stripe, a diagonal n − 1 positions below the main one.

Labels follow from the scores with the thresholds in LABELS (a head may get several, or none).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .trace import Recorder

# label → (score, threshold): a head gets the label when its score ≥ the threshold
LABELS = {
    "previous-token": ("previous_token", 0.5),
    "induction": ("induction", 0.4),
    "duplicate-token": ("duplicate_token", 0.4),
    "first-token (sink)": ("first_token", 0.5),
    "self": ("self_token", 0.5),
}
PROBE_HALF = 48  # random tokens in each copy of the probe
PROBE_BATCH = 4  # probe sequences averaged
PROBE_SEED = 0


@dataclass(frozen=True)
class HeadScores:
    """One array per score, each (n_layer, n_head) (or any leading shape the patterns had, without (T, T))."""

    previous_token: np.ndarray
    duplicate_token: np.ndarray
    induction: np.ndarray
    first_token: np.ndarray
    self_token: np.ndarray
    distance: np.ndarray
    spread: np.ndarray

    def as_dict(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def of(self, *index: int) -> dict[str, float]:
        """Every score of one head, e.g. scores.of(layer, head)."""
        return {name: float(arr[index]) for name, arr in self.as_dict().items()}


SCORE_NAMES = tuple(f.name for f in dataclasses.fields(HeadScores))


def _queries(pattern: np.ndarray) -> np.ndarray:
    """The rows i ≥ 1 of (…, T, T) patterns, float64: (…, T−1, T)."""
    return np.asarray(pattern, dtype=np.float64)[..., 1:, :]


def previous_token_score(pattern: np.ndarray) -> np.ndarray:
    """P = mean over i ≥ 1 of α[i, i−1]; pattern (…, T, T) → (…)."""
    p = np.asarray(pattern, dtype=np.float64)
    return np.diagonal(p, offset=-1, axis1=-2, axis2=-1).mean(-1)


def self_score(pattern: np.ndarray) -> np.ndarray:
    """σ = mean over i ≥ 1 of α[i, i]."""
    return np.diagonal(np.asarray(pattern, dtype=np.float64), axis1=-2, axis2=-1)[..., 1:].mean(-1)


def first_token_score(pattern: np.ndarray) -> np.ndarray:
    """S = mean over i ≥ 1 of α[i, 0]: the weight on the first token (an attention sink)."""
    return _queries(pattern)[..., 0].mean(-1)


def attention_distance(pattern: np.ndarray) -> np.ndarray:
    """d = mean over i ≥ 1 of Σ_j α[i, j] |i − j|, in tokens."""
    p = _queries(pattern)
    T = p.shape[-1]
    gap = np.abs(np.arange(1, T)[:, None] - np.arange(T)[None, :])  # (T−1, T)
    return (p * gap).sum(-1).mean(-1)


def spread_bits(pattern: np.ndarray) -> np.ndarray:
    """H = mean over i ≥ 1 of the row's entropy −Σ_j α[i, j] log₂ α[i, j] in bits (0·log 0 = 0): 0 when a query
    puts all its weight on one key, log₂ n when it spreads evenly over n keys."""
    p = _queries(pattern)
    return (-(p * np.log2(np.where(p > 0, p, 1.0))).sum(-1)).mean(-1)


def duplicate_targets(ids) -> np.ndarray:
    """(T, T) bool: key j is an earlier copy of query i's token (j < i, x_j = x_i)."""
    x = np.asarray(ids)
    return (x[None, :] == x[:, None]) & np.tri(len(x), k=-1, dtype=bool)


def induction_targets(ids) -> np.ndarray:
    """(T, T) bool: key j comes right after an earlier copy of query i's token (1 ≤ j < i, x_{j−1} = x_i)."""
    x = np.asarray(ids)
    T = len(x)
    out = np.zeros((T, T), dtype=bool)
    out[:, 1:] = x[None, :-1] == x[:, None]  # key j ↔ token j − 1
    return out & np.tri(T, k=-1, dtype=bool)


def target_score(pattern: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Mean over the queries that have at least one target of the weight they put on their targets; NaN if none has."""
    rows = targets.any(-1)  # (T,)
    if not rows.any():
        return np.full(np.shape(pattern)[:-2], np.nan)
    p = np.asarray(pattern, dtype=np.float64)
    return (p * targets).sum(-1)[..., rows].mean(-1)


def score_patterns(pattern: np.ndarray, ids) -> HeadScores:
    """Every score of patterns (…, T, T) read on the tokens `ids` (T,)."""
    return HeadScores(
        previous_token=previous_token_score(pattern),
        duplicate_token=target_score(pattern, duplicate_targets(ids)),
        induction=target_score(pattern, induction_targets(ids)),
        first_token=first_token_score(pattern),
        self_token=self_score(pattern),
        distance=attention_distance(pattern),
        spread=spread_bits(pattern),
    )


def mean_scores(scores: list[HeadScores]) -> HeadScores:
    """The scores averaged over several probes (NaN where none defines a score)."""
    with np.errstate(invalid="ignore"):
        return HeadScores(
            **{name: np.nanmean(np.stack([getattr(s, name) for s in scores]), axis=0) for name in SCORE_NAMES}
        )


def allowed_ids(tokenizer, vocab_size: int) -> np.ndarray:
    """The ids a probe may use: the model's vocabulary without the tokenizer's special (added) tokens."""
    special = set(tokenizer.hf.get_added_tokens_decoder()) if tokenizer is not None else set()
    return np.array([i for i in range(vocab_size) if i not in special], dtype=np.int64)


def probe_ids(
    allowed: np.ndarray, half: int = PROBE_HALF, batch: int = PROBE_BATCH, seed: int = PROBE_SEED
) -> np.ndarray:
    """(batch, 2·half) ids: `half` distinct random tokens from `allowed`, then the same tokens again; seeded."""
    if half > len(allowed):
        raise ValueError(f"a probe of {half} distinct tokens needs a vocabulary of at least {half} tokens")
    rng = np.random.default_rng(seed)
    runs = np.stack([rng.choice(allowed, size=half, replace=False) for _ in range(batch)])  # (B, half)
    return np.concatenate([runs, runs], axis=1)


def patterns_of(model: torch.nn.Module, ids: np.ndarray) -> np.ndarray:
    """Every layer's attention pattern of the model on ids (B, T): (B, n_layer, n_head, T, T), float32."""
    rec = Recorder(lambda name: name.endswith("attn.hook_pattern"))
    with torch.inference_mode():
        model(torch.as_tensor(ids, dtype=torch.long), rec=rec)
    return np.stack(
        [rec[f"blocks.{layer}.attn.hook_pattern"].float().numpy() for layer in range(model.cfg.n_layer)], axis=1
    )


def probe_scores(
    model: torch.nn.Module,
    tokenizer=None,
    half: int = PROBE_HALF,
    batch: int = PROBE_BATCH,
    seed: int = PROBE_SEED,
    on_progress: Callable[[int, int], None] | None = None,
) -> HeadScores:
    """Every head's scores, (n_layer, n_head) each, averaged over `batch` seeded repeated-random-token probes, run one
    probe at a time (on_progress(done, batch) before each: SmolLM2 takes ~1.2 s per probe on one core)."""
    half = min(half, model.cfg.n_ctx // 2)
    ids = probe_ids(allowed_ids(tokenizer, model.cfg.vocab_size), half, batch, seed)  # (B, 2·half)
    scores = []
    for b, row in enumerate(ids):
        if on_progress is not None:
            on_progress(b, len(ids))
        scores.append(score_patterns(patterns_of(model, row[None])[0], row))  # patterns (L, nh, T, T)
    return mean_scores(scores)


def head_labels(scores: HeadScores, *index: int) -> list[str]:
    """The labels of one head (scores.of(*index)) whose score reaches its threshold in LABELS."""
    values = scores.of(*index)
    return [label for label, (name, threshold) in LABELS.items() if values[name] >= threshold]


def heads_with(scores: HeadScores, label: str) -> list[tuple[int, int, float]]:
    """(layer, head, score) of every head with this label, highest score first."""
    name, threshold = LABELS[label]
    arr = getattr(scores, name)
    found = [
        (int(layer), int(head), float(arr[layer, head]))
        for layer, head in zip(*np.nonzero(arr >= threshold), strict=True)
    ]
    return sorted(found, key=lambda x: -x[2])


def _json_number(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 4)


def scores_report(scores: HeadScores, model: str, probe: dict) -> dict:
    """What `python -m transformer heads` writes: thresholds, the probe, and every head's scores and labels."""
    n_layer, n_head = scores.previous_token.shape
    heads = [
        {
            "layer": layer,
            "head": head,
            **{k: _json_number(v) for k, v in scores.of(layer, head).items()},
            "labels": head_labels(scores, layer, head),
        }
        for layer in range(n_layer)
        for head in range(n_head)
    ]
    return {
        "model": model,
        "probe": probe,
        "thresholds": {label: {"score": name, "at_least": t} for label, (name, t) in LABELS.items()},
        "heads": heads,
        "labelled": {
            label: [{"layer": a, "head": b, "score": round(s, 4)} for a, b, s in heads_with(scores, label)]
            for label in LABELS
        },
    }
