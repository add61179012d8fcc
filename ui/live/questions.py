"""The questions a teacher asks, built from what the page shows, each with the model's own answer for the reveal.

    look    "Where will «it» look?"   options: the tokens the query may see;  the model: that head's attention row
    next    "What comes next?"        options: the model's 8 likeliest;        the model: their probabilities
    head    "Which head does this?"   options: the layer's heads;              the model: each head's score for the
                                                                                role, on repeated random tokens
    change  "Does this change when …?" options: yes / a little / no;          the model: none (the page shows it)
"""

from __future__ import annotations

import numpy as np

from lessons.next_token import top_tokens
from transformer.head_scores import HeadScores

from .classroom import Question

TOP_K = 8  # "What comes next?" offers the model's TOP_K likeliest tokens
ROLES = {  # "Which head does this?": the role's words → its score (transformer.head_scores)
    "looks at the previous token": "previous_token",
    "completes a repeated pattern (induction)": "induction",
    "parks its weight on the first token (sink)": "first_token",
}
CHANGE_OPTIONS = ("yes, a lot", "a little", "no")


def token_option(i: int, label: str) -> str:
    """A token as an answer: its position and label ("3: ␣bear"), so that a word the sentence repeats stays two."""
    return f"{i}: {label}"


def look(labels: tuple[str, ...], weights: np.ndarray, query: int, layer: int, head: int, causal: bool) -> Question:
    """Where will token `query` look in this head? weights: (T, T) the head's attention weights as shown."""
    seen = range(query + 1) if causal else range(len(labels))  # a decoder's query sees itself and what came before
    options = tuple(token_option(i, labels[i]) for i in seen)
    prompt = f"Layer {layer}, head {head}: where will {token_option(query, labels[query])} look most?"
    truth = tuple((options[k], float(weights[query, j])) for k, j in enumerate(seen))
    return Question("look", prompt, options, truth=truth, truth_title="attention weight")


def next_token(text_end: str, logits_row: np.ndarray, vocab_labels: list[str]) -> Question:
    """What comes next after the sentence? logits_row: (V,) the model's logits at the last token."""
    top = top_tokens(logits_row, TOP_K)
    options = tuple(vocab_labels[i] for i, _ in top)
    truth = tuple((vocab_labels[i], p) for i, p in top)
    prompt = f"What comes next after “…{text_end}”? Pick one or type your own."
    return Question("next", prompt, options, typed=True, truth=truth, truth_title="probability")


def which_head(role: str, scores: HeadScores, layer: int) -> Question:
    """Which head of `layer` does `role` (a key of ROLES)? The model: every head's measured score for it."""
    row = getattr(scores, ROLES[role])[layer]  # (n_head,)
    options = tuple(f"head {h}" for h in range(len(row)))
    truth = tuple((options[h], float(row[h])) for h in range(len(row)))
    prompt = f"Which head of layer {layer} {role}?"
    return Question("head", prompt, options, truth=truth, truth_title="score on repeated random tokens")


def change(when: str) -> Question:
    """Does what the page shows change when … (the teacher's words)?"""
    return Question("change", f"Does this change when {when.strip().rstrip('?')}?", CHANGE_OPTIONS)


def tally(q: Question, answers: list[str]) -> tuple[list[str], np.ndarray]:
    """(labels, counts) of the answers: the question's options in their order, then typed answers, most given first."""
    counts = {o: 0 for o in q.options}
    for a in answers:
        counts[a] = counts.get(a, 0) + 1
    typed = sorted((a for a in counts if a not in q.options), key=lambda a: (-counts[a], a))
    labels = [*q.options, *typed]
    return labels, np.array([counts[a] for a in labels], dtype=np.int64)
