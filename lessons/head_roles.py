"""What each head does, in words: badges from the measured head scores (transformer.head_scores).

The scores are measured on a probe of repeated random tokens, not on the reader's sentence, so a badge says what a
head does in general (it copies the previous token, it completes a repeated run, …), whatever the sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

from transformer import head_scores as hs

from .heads import head_name

BADGES = {
    "previous-token": "prev",
    "induction": "ind",
    "duplicate-token": "dup",
    "first-token (sink)": "sink",
    "self": "self",
}  # label → badge
MORE = "+"  # after a short badge: the head has more labels
MORE_NOTE = f" A “{MORE}” after a badge: the head has more labels, read when it is opened."


@dataclass(frozen=True)
class ScoreInfo:
    title: str
    latex: str
    plain: str


SCORES = {
    "induction": ScoreInfo(
        "Induction",
        r"I = \operatorname{mean}_i \sum_{j<i:\ x_{j-1} = x_i} \alpha_{ij}",
        (
            "Weight on the token that came right AFTER an earlier copy of the current token. "
            "If “K f” appeared before and the current token is K again, "
            "an induction head looks at f, and so the model can guess that f comes next."
        ),
    ),
    "previous_token": ScoreInfo(
        "Previous token",
        r"P = \operatorname{mean}_i\ \alpha_{i,\,i-1}",
        (
            "Weight on the token just before. A previous-token head writes “the token before me was "
            "K” into every position: exactly what an induction head in the next layer searches for."
        ),
    ),
    "duplicate_token": ScoreInfo(
        "Duplicate token",
        r"D = \operatorname{mean}_i \sum_{j<i:\ x_j = x_i} \alpha_{ij}",
        "Weight on earlier copies of the current token itself (not on the token after them).",
    ),
    "first_token": ScoreInfo(
        "First token (sink)",
        r"S = \operatorname{mean}_i\ \alpha_{i,0}",
        "Weight parked on the very first token: many heads of large models do this when they have nothing to look for.",
    ),
    "self_token": ScoreInfo("Self", r"\sigma = \operatorname{mean}_i\ \alpha_{ii}", "Weight a token puts on itself."),
    "distance": ScoreInfo(
        "Mean distance",
        r"d = \operatorname{mean}_i \sum_j \alpha_{ij}\,\lvert i-j \rvert",
        (
            "How far back a head looks, in tokens: 1 for a previous-token head, "
            "about the distance to the earlier copy for an induction head."
        ),
    ),
    "spread": ScoreInfo(
        "Spread (entropy)",
        r"H = \operatorname{mean}_i \Big(-\sum_j \alpha_{ij} \log_2 \alpha_{ij}\Big)",
        (
            "How spread out each row of weights is, in bits: "
            "0 when one key gets all the weight, log₂ n when n keys share it evenly."
        ),
    ),
}
assert set(SCORES) == set(hs.SCORE_NAMES)


def score_title(name: str) -> str:
    """The title of the score called `name` ("previous_token" → "Previous token")."""
    return SCORES[name].title


def threshold_of(name: str) -> float | None:
    """The threshold at which a score gives a head its label (transformer.head_scores.LABELS), if it gives one."""
    return next((t for score, t in hs.LABELS.values() if score == name), None)


def label_of(name: str) -> str | None:
    return next((label for label, (score, _) in hs.LABELS.items() if score == name), None)


def badges(scores: hs.HeadScores, short: bool = False) -> dict[tuple[int, int], str]:
    """(layer, head) → its badges joined by "·" (e.g. "prev·sink"), for every head that has a label. short: a head with
    several shows its first and MORE ("prev+"), for thumbnails too small for two words (a phone's column)."""
    n_layer, n_head = scores.previous_token.shape
    found = {
        (layer, head): [BADGES[label] for label in hs.head_labels(scores, layer, head)]
        for layer in range(n_layer)
        for head in range(n_head)
    }
    return {k: v[0] + MORE if short and len(v) > 1 else "·".join(v) for k, v in found.items() if v}


DEMOS = {"induction": "induction", "previous-token": "previous-token", "first-token (sink)": "sink"}  # label → button


def labelled(scores: hs.HeadScores, label: str) -> list[str]:
    """Every head with this label (transformer.head_scores.LABELS), as "L.H" in layer order: what Multi-head's "Switch
    off the induction heads" (and previous-token, sink) switches off."""
    return [head_name(layer, head) for layer, head, _ in sorted(hs.heads_with(scores, label))]


def legend() -> str:
    """One line that reads the badges: each badge, its score and the threshold that gives it."""
    return "; ".join(
        f"**{BADGES[label]}** = {label} score ≥ {threshold}" for label, (_, threshold) in hs.LABELS.items()
    )


def summary(scores: hs.HeadScores, layer: int, head: int) -> str:
    """One head in a sentence of markdown: its labels (or none) and every score."""
    labels = hs.head_labels(scores, layer, head)
    values = scores.of(layer, head)
    # v == v: NaN scores (no target) are left out
    shown = " · ".join(f"{SCORES[k].title.lower()} {v:.2f}" for k, v in values.items() if v == v)
    what = f"**{', '.join(labels)}** head" if labels else "no label (no score reaches its threshold)"
    return f"Layer {layer}, head {head}: {what}. Scores: {shown}."
