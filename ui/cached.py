"""Cached computations of the pages. They live here, not in the page files: a cached function defined in a page is
made anew on every run, and Streamlit hashes its source each time (~2 ms per function per rerun)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from figures import attention as fa
from figures import context as fc
from figures.prediction import lens_heatmap
from transformer import Interventions, Trace, predict
from transformer import context as cx
from transformer.logit_lens import logit_lens, stage_names

from .models import get_model, get_trace

LENS_POSITIONS = 32  # the logit-lens heatmap shows at most this many positions


def lens_window(pos: int, T: int) -> range:
    """All positions, or the LENS_POSITIONS ending at `pos` (the last ones by default)."""
    start = max(0, min(pos - LENS_POSITIONS + 1, T - LENS_POSITIONS))
    return range(start, min(T, start + LENS_POSITIONS))


@st.cache_resource(max_entries=32, show_spinner=False)
def lens(model_name: str, text: str, tau: float, pos: int) -> tuple[go.Figure, range, np.ndarray]:
    """The logit-lens heatmap on the window around `pos`, the window, and every stage's logits at `pos` (L+1, V); cached."""
    loaded = get_model(model_name)
    tr = get_trace(model_name, text, tau)
    window = lens_window(pos, len(tr.encoding))
    lz = logit_lens(loaded.model, tr, window)
    names = loaded.tokenizer.vocab_labels()
    top_labels = [[names[i] for i in row] for row in lz.top_ids]
    fig = lens_heatmap(lz.top_probs, top_labels, stage_names(loaded.cfg.n_layer), window, tr.encoding.labels[window.start : window.stop], chosen=pos)
    return fig, window, lz.logits[:, pos - window.start].copy()


@st.cache_resource(max_entries=8, show_spinner=False)
def padded_batch(model_name: str, texts: tuple[str, ...], temperature: float, causal: bool, use_padding_mask: bool) -> predict.PaddedBatch:
    """The texts as one right-padded batch (logits and masked scores only), cached."""
    lm = get_model(model_name)
    keep = ["logits", *(f"blocks.{layer}.attn.hook_scores_masked" for layer in range(lm.cfg.n_layer))]
    return predict.padded_forward(lm.model, lm.tokenizer, texts, Interventions(temperature=temperature, causal=causal), use_padding_mask, keep)


# Figures are cached per input: (model, sentences, word, forms, τ) fix the traces and the word's vectors, which are
# passed unhashed (_vectors, _numbers); building a figure costs far more than sending it.
@st.cache_resource(max_entries=32, show_spinner=False)
def cosine_figure(model_name: str, sentences: tuple[str, ...], word: str, forms: bool, tau: float, _numbers: list, _vectors: np.ndarray) -> tuple[go.Figure, np.ndarray]:
    """cos of the word's vectors for every pair of sentences, at every layer; and those cosines, (n_pairs, n_layer + 1)."""
    pairs = list(combinations(range(len(_numbers)), 2))
    cos = np.stack([cx.cosine_by_layer(_vectors[a], _vectors[b]) for a, b in pairs])  # (n_pairs, n_layer + 1)
    names = [f"sentence {_numbers[a]} vs {_numbers[b]}" for a, b in pairs]
    return fc.cosine_lines(cos, names, cx.stage_labels(len(_vectors[0]) - 1), "Cosine similarity of the word's vectors"), cos


@st.cache_resource(max_entries=32, show_spinner=False)
def pca_figure(model_name: str, sentences: tuple[str, ...], word: str, forms: bool, tau: float, unit: bool, _numbers: list, _vectors: np.ndarray) -> tuple[go.Figure, np.ndarray]:
    """Every sentence's trajectory in 2 principal components; and the share of variance they hold, (2,)."""
    coords, explained = cx.trajectories(_vectors, unit)  # (n, n_layer + 1, 2)
    points = ["emb", *(f"L{layer}" for layer in range(len(_vectors[0]) - 1))]
    title = f"The word's vectors in 2 principal components ({'unit length' if unit else 'raw'})"
    return fc.trajectories_figure(coords, [f"sentence {n}" for n in _numbers], points, explained, title), explained


@st.cache_resource(max_entries=64, show_spinner=False)
def attention_figure(model_name: str, sentence: str, tau: float, layer: int, head: int, number: int, position: int, _tr: Trace) -> go.Figure:
    """The weights of the word's token over its sentence's tokens, for one head."""
    row = _tr[f"blocks.{layer}.attn.hook_pattern"][head, position]  # (T,) weights over the keys
    return fa.weight_bars(row, _tr.encoding.labels, f"Sentence {number} · token {position}")
