"""Context: one word followed through several sentences, run in one batched pass (a BatchKey)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from figures import attention as fa
from figures import context as fc
from lessons import context as cx

from ..models import BatchKey, get_traces, shared


def matches(key: BatchKey, word: str, forms: bool) -> dict[int, cx.WordMatch | None]:
    """Sentence number (from 1) → where the word is in it (lessons.context.find_word), or None when it is not."""
    found = {}
    for n, tr in enumerate(get_traces(key), start=1):
        try:
            found[n] = cx.find_word(tr.encoding, word, forms)
        except cx.WordNotFound:
            found[n] = None
    return found


@shared(max_entries=32)
def word_vectors(key: BatchKey, word: str, forms: bool) -> tuple[list[int], np.ndarray]:
    """The numbers of the sentences that hold the word (two or more), and the word's vectors in them, read-only:
    (n, n_layer + 1, d), its embedding then every block's output at its last token."""
    traces = get_traces(key)
    found = {n: m for n, m in matches(key, word, forms).items() if m is not None}
    vectors = np.stack([cx.word_vectors(traces[n - 1], m.position) for n, m in found.items()])  # (n, n_layer + 1, d)
    vectors.flags.writeable = False
    return list(found), vectors


@shared(max_entries=32)
def cosine_figure(key: BatchKey, word: str, forms: bool) -> tuple[go.Figure, np.ndarray, list[str]]:
    """cos of the word's vectors for every pair of sentences, at every layer; those cosines, (n_pairs, n_layer + 1);
    and the pairs' names ("sentence 1 vs 3")."""
    numbers, vectors = word_vectors(key, word, forms)
    pairs, cos = cx.pair_cosines(vectors)
    names = [f"sentence {numbers[a]} vs {numbers[b]}" for a, b in pairs]
    stages = cx.stage_labels(vectors.shape[1] - 1)
    return fc.cosine_lines(cos, names, stages, "Cosine similarity of the word's vectors"), cos, names


@shared(max_entries=32)
def pca_figure(key: BatchKey, word: str, forms: bool, unit: bool) -> tuple[go.Figure, np.ndarray]:
    """Every sentence's trajectory in 2 principal components; and the share of variance they hold, (2,)."""
    numbers, vectors = word_vectors(key, word, forms)
    coords, explained = cx.trajectories(vectors, unit)  # (n, n_layer + 1, 2)
    points = ["emb", *(f"L{layer}" for layer in range(vectors.shape[1] - 1))]
    title = f"The word's vectors in 2 principal components ({'unit length' if unit else 'raw'})"
    return fc.trajectories_figure(coords, [f"sentence {n}" for n in numbers], points, explained, title), explained


@shared(max_entries=64)
def attention_figure(key: BatchKey, number: int, position: int, layer: int, head: int) -> go.Figure:
    """The weights of token `position` of sentence `number` (from 1) over its sentence's tokens, for one head."""
    tr = get_traces(key)[number - 1]
    row = tr[f"blocks.{layer}.attn.hook_pattern"][head, position]  # (T,) weights over the keys
    return fa.weight_bars(row, tr.encoding.labels, f"Sentence {number} · token {position}")
