"""Choosing the next token: softmax with a temperature, top-k and top-p filtering, sampling, generation.

Every distribution is over the FULL vocabulary. A token is drawn by inverse-CDF sampling: one
uniform number u from a seeded torch.Generator, then the first token (most probable first) whose
cumulative probability passes u. Generation seeds a fresh generator for every position from
(seed, position), so the token at a position depends only on the seed, the settings and the text
before it: N tokens at once = N times one token, and stepping back then continuing replays the same tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer import NO_INTERVENTIONS, Decoder, Interventions, ModelConfig, Tokenizer, encode_for_model
from transformer.trace import token_limit

from .probability import softmax
from .words import percent

GREEDY_BELOW = 1e-3  # a temperature below this means greedy: always the most probable token
N_CANDIDATES = 5  # top tokens recorded for each generated step
SEED_STRIDE = 1 << 20  # > any context length: (seed, position) → one generator seed, never shared


def probabilities(logits_row: np.ndarray, temperature: float) -> np.ndarray:
    """p = softmax(z / T) over the full vocabulary, float64, shape (V,). Greedy T (≈ 0) gives
    the limit: all mass on the argmax."""
    z = np.asarray(logits_row, dtype=np.float64)  # (V,)
    if temperature < GREEDY_BELOW:
        p = np.zeros_like(z)
        p[np.argmax(z)] = 1.0
        return p
    # p_i = exp(z_i/T) / Σ_j exp(z_j/T)
    return softmax(z / temperature)


def n_kept(sorted_probs: np.ndarray, top_k: int = 0, top_p: float = 1.0) -> int:
    """How many of the most probable tokens survive: the first top_k (0 = no limit), and the smallest
    set whose cumulative probability reaches top_p (1 = no limit); always at least one."""
    n = len(sorted_probs) if top_k <= 0 else min(top_k, len(sorted_probs))
    if top_p < 1.0:
        # first index where Σ_{r ≤ i} p_(r) ≥ top_p, counted inclusively
        n = min(n, int(np.searchsorted(np.cumsum(sorted_probs), top_p, side="left")) + 1)
    return max(n, 1)


@dataclass(frozen=True)
class Distribution:
    """The next-token distribution before and after filtering, over the full vocabulary (V tokens)."""

    probs: np.ndarray  # (V,) softmax(z / T)
    filtered: np.ndarray  # (V,) after top-k / top-p, renormalised to sum to 1; 0 for dropped tokens
    order: np.ndarray  # (V,) token ids, most probable first (ties: lower id first)
    n_kept: int  # tokens that survived the filters: order[:n_kept]

    @property
    def kept_mass(self) -> float:
        """The probability the kept tokens held before renormalising."""
        return float(self.probs[self.order[: self.n_kept]].sum())


def distribution(logits_row: np.ndarray, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> Distribution:
    """softmax(z / T), then keep the top_k most probable and the smallest top_p nucleus
    (both over the full vocabulary), renormalise."""
    p = probabilities(logits_row, temperature)  # (V,)
    order = np.argsort(-p, kind="stable")  # (V,)
    n = n_kept(p[order], top_k, top_p)
    kept = order[:n]
    filtered = np.zeros_like(p)
    # p'_i = p_i / Σ_{j kept} p_j for kept tokens, else 0
    filtered[kept] = p[kept] / p[kept].sum()
    return Distribution(p, filtered, order, n)


def draw(dist: Distribution, u: float) -> int:
    """Inverse-CDF sampling: the first kept token (most probable first) whose cumulative
    filtered probability passes u ∈ [0, 1)."""
    kept = dist.order[: dist.n_kept]
    cum = np.cumsum(dist.filtered[kept])  # (n_kept,)
    # u·total < total, so the search stops at a token with probability > 0 even when rounding leaves total ≠ 1
    return int(kept[min(int(np.searchsorted(cum, u * cum[-1], side="right")), len(kept) - 1)])


def sample_next(
    logits_row: np.ndarray,
    temperature: float,
    top_k: int,
    top_p: float,
    generator: torch.Generator,
    greedy: bool = False,
) -> tuple[int, Distribution, float]:
    """One next token from one row of logits. Returns (token id, its distribution, the uniform number u drawn).

    Greedy (the flag, or T ≈ 0) is the limit T → 0: all mass on the most probable token, which u then always picks.
    """
    dist = distribution(logits_row, 0.0 if greedy else temperature, top_k, top_p)
    u = float(torch.rand((), generator=generator, dtype=torch.float64))
    return draw(dist, u), dist, u


def step_generator(seed: int, position: int) -> torch.Generator:
    """The generator that draws the token at `position` (0-based, in the whole sequence) for `seed`."""
    return torch.Generator().manual_seed(int(seed) * SEED_STRIDE + int(position))


@dataclass(frozen=True)
class Candidate:
    id: int
    label: str
    prob: float  # softmax(z / T)
    filtered: float  # after top-k / top-p, renormalised


@dataclass(frozen=True)
class GenerationStep:
    """One generated token."""

    id: int
    label: str
    position: int  # where it lands in the sequence
    prob: float  # its probability before filtering, softmax(z / T)
    chosen_prob: float  # the probability it was drawn with (after filtering)
    u: float  # the uniform number that picked it
    top: tuple[Candidate, ...]  # the most probable tokens at this step
    text: str  # the whole text after this step


@dataclass(frozen=True)
class Generation:
    prompt: str  # the starting text (cut to the context if it was longer)
    prompt_ids: tuple[int, ...]
    steps: tuple[GenerationStep, ...]
    n_ctx: int  # the model's context length

    @property
    def ids(self) -> tuple[int, ...]:
        return (*self.prompt_ids, *(s.id for s in self.steps))

    @property
    def at_context(self) -> bool:
        """The sequence fills the context: no further token fits."""
        return len(self.prompt_ids) + len(self.steps) >= self.n_ctx

    def text_at(self, k: int) -> str:
        """The text after k generated tokens (k = 0: the prompt)."""
        return self.prompt if k == 0 else self.steps[k - 1].text

    def cut(self, k: int) -> Generation:
        """The same generation with only its first k steps."""
        return Generation(self.prompt, self.prompt_ids, self.steps[:k], self.n_ctx)


def generate(
    model: Decoder,
    tokenizer: Tokenizer,
    text: str,
    n_tokens: int,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int = 0,
    on_step: Callable[[int, int, GenerationStep], None] | None = None,
    *,
    greedy: bool = False,
    previous: Sequence[GenerationStep] = (),
    interventions: Interventions = NO_INTERVENTIONS,
) -> Generation:
    """Append up to n_tokens tokens to `text` (after the already generated `previous` steps), one forward pass each.

    Stops early when the sequence fills the model's context. on_step(done, total, step) is called after each token.
    Raises TraceInputError for an empty or whitespace-only text.
    """
    n_ctx = token_limit(model.cfg)
    enc = encode_for_model(tokenizer, text, n_ctx)[0]
    labels = tokenizer.vocab_labels()
    steps = list(previous)
    ids = [*enc.ids, *(s.id for s in steps)]
    total = max(0, min(int(n_tokens), n_ctx - len(ids)))
    for done in range(1, total + 1):
        with torch.inference_mode():
            logits = model(torch.tensor([ids]), interventions=interventions)[0, -1].float().numpy()  # (V,)
        token, dist, u = sample_next(logits, temperature, top_k, top_p, step_generator(seed, len(ids)), greedy)
        top = tuple(
            Candidate(int(i), labels[i], float(dist.probs[i]), float(dist.filtered[i]))
            for i in dist.order[:N_CANDIDATES]
        )
        new_ids = [s.id for s in steps] + [token]
        step = GenerationStep(
            token,
            labels[token],
            len(ids),
            float(dist.probs[token]),
            float(dist.filtered[token]),
            u,
            top,
            enc.text + tokenizer.decode(new_ids),
        )
        steps.append(step)
        ids.append(token)
        if on_step is not None:
            on_step(done, total, step)
    return Generation(enc.text, enc.ids, tuple(steps), n_ctx)


def distribution_rows(dist: Distribution, logits_row: np.ndarray, labels: Sequence[str], n: int) -> dict[str, list]:
    """The n most probable tokens as table columns: token, id, logit z, p and p′ (after the filters)."""
    ids = dist.order[:n]
    return {
        "token": [labels[i] for i in ids],
        "id": ids,
        "logit z": np.asarray(logits_row)[ids],
        "p": dist.probs[ids],
        "p′": dist.filtered[ids],
    }


def actual_next(dist: Distribution, token: int) -> tuple[float, int, bool]:
    """The token that really followed: (its p, its rank 1…V, whether the filters kept it)."""
    rank = int(np.flatnonzero(dist.order == token)[0]) + 1
    return float(dist.probs[token]), rank, rank <= dist.n_kept


def timeline_rows(gen: Generation) -> list[dict]:
    """One table row per generated token: where it landed, how likely it was, the u that drew it, the top candidates."""
    return [
        {
            "step": i + 1,
            "position": s.position,
            "token": s.label,
            "id": s.id,
            "p": s.prob,
            "p′ (drawn with)": s.chosen_prob,
            "u": s.u,
            "top candidates": "   ".join(f"{c.label} {percent(c.prob)}" for c in s.top),
        }
        for i, s in enumerate(gen.steps)
    ]


def actual_next_note(dist: Distribution, token: int, position: int) -> str:
    """The token that really follows `position - 1` (it stands at `position`), in words:
    its p, its rank, whether the filters kept it."""
    p, rank, kept = actual_next(dist, token)
    return (
        f"The token that really follows (position {position}) has p = {percent(p)}, "
        f"rank {rank:,} of {len(dist.probs):,}: {'kept' if kept else 'dropped by the filters'}."
    )


# --- The Next token page's words for one model ---


@dataclass(frozen=True)
class Reading:
    """What the Next token page says about one model: why an encoder has nothing to show here, or how a decoder's final
    norm and W_U (tied to W_E or not) turn its last stream into logits, and what the logit lens reads."""

    no_head: str  # an encoder has no next-token head: this message, and nothing more
    intro: str  # the page's opening paragraph
    lens: str  # part 3: the logit lens


def reading(cfg: ModelConfig, model_name: str) -> Reading:
    """The Next token page's texts for this model (RMSNorm or LayerNorm, W_U tied to W_E or not)."""
    norm = "RMSNorm" if cfg.norm == "rmsnorm" else "LayerNorm"
    no_head = (
        f"**{model_name} is an encoder: it has no next-token head.** It does not write text one token at a time; "
        "it reads the whole sentence at once and turns every token into a vector that depends "
        "on the whole sentence (both directions), used to compare or classify texts. So there are no logits, "
        "no next-token probabilities and no logit lens here. Pick a decoder in the sidebar (**smollm2-135m** "
        "or **shakespeare-gpt**) to see prediction, or open **Encoder vs decoder** to compare the two kinds."
    )
    tied = ": in this model W_U is W_E transposed" if cfg.tie_embeddings else ""
    intro = (
        f"After the last block and a final {norm}, each position holds one vector. "
        "Multiplying it by the **unembedding matrix** W_U gives one score per token of the vocabulary "
        f"({cfg.vocab_size:,} **logits**{tied}). Softmax turns the logits into probabilities for the next token. "
        "To write text, the model then **draws** one token from them, appends it, and runs again. A **temperature** "
        "T reshapes the probabilities before the draw; **top-k** and **top-p** throw away the unlikely tail."
    )
    lens = (
        f"The final {norm} and W_U normally read only the **last** block's output. "
        "The logit lens applies them to the stream after **every** block (and to the embedding itself), "
        "as if the model stopped there. It shows how the prediction builds up layer by layer. "
        "At the last block it is exactly the model's own prediction (T = 1, no filters)."
    )
    return Reading(no_head, intro, lens)
