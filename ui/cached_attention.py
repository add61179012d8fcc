"""Cached accessors of the attention pages: Masking (predictions without the causal mask, the padded batch), Softmax & temperature (the √d_k experiment),
Lecture example (its matrices and figures). Each calls a lessons/ computation and a figures/ builder; no math here.

They live here, not in the page files: a cached function defined in a page is made anew on every run.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from figures.matrices import lecture_figures as lecture_matrices
from lessons import one_head, padding
from lessons import softmax_lab as lab
from lessons.lecture import lecture_example
from transformer import Interventions, shortcuts

from .models import get_model, get_trace, together


@st.cache_resource(max_entries=32, show_spinner=False)
def future_comparison(model_name: str, sentence: str, temperature: float, n_rows: int) -> tuple[list[dict], tuple[int, int, int]]:
    """The next-token table of the first n_rows positions with and without the causal mask, and how many predictions
    changed (softmax over the whole vocabulary at every position: ~0.1 s for SmolLM2 at 64 tokens, so cached). The two
    forward passes run at the same time."""
    with_mask, without = get_trace(model_name, sentence, temperature), get_trace(model_name, sentence, temperature, causal=False)
    together(lambda: with_mask["logits"], lambda: without["logits"])
    return one_head.future_table(with_mask, without, get_model(model_name).tokenizer.vocab_labels(), n_rows), one_head.changes(with_mask, without)


@st.cache_resource(max_entries=8, show_spinner=False)
def padding_check(model_name: str, texts: tuple[str, ...], temperature: float, causal: bool, use_padding_mask: bool) -> padding.PaddingCheck:
    """The texts as one right-padded batch: its mask, and each text's final output in the batch against the text alone.
    Keeps no logits (SmolLM2's are 48 MiB per 256 tokens): only the mask and the differences."""
    lm = get_model(model_name)
    output, traces = padding.final_output(lm.cfg), [get_trace(model_name, text, temperature, causal) for text in texts]
    batch, *alone = together(
        lambda: padding.padded_forward(lm.model, lm.tokenizer, texts, Interventions(temperature=temperature, causal=causal), use_padding_mask, [output, padding.MASK_NAME]),
        *[lambda tr=tr: tr[output] for tr in traces],
    )  # the batch and each text alone at the same time
    return padding.check(batch, output, alone)


@st.cache_resource(max_entries=32, show_spinner=False)
def tempered_pattern(model_name: str, sentence: str, layer: int, head: int, tau: float) -> np.ndarray:
    """One head's weights with attention temperature τ on that head only (the rest of the model as trained)."""
    return shortcuts.tempered_pattern(get_trace(model_name, sentence), layer, head, tau)


sqrt_dk_experiment = st.cache_data(max_entries=16, show_spinner=False)(lab.sqrt_dk_experiment)


@st.cache_resource(max_entries=32, show_spinner=False)
def lecture_figures(X: np.ndarray, words: tuple[str, ...], dims: tuple[str, ...], seed: int) -> tuple[dict[str, np.ndarray], dict[str, go.Figure]]:
    """Every matrix of the worked example for these inputs (read-only), and its figure."""
    m = lecture_example(X, seed)
    for a in m.values():
        a.flags.writeable = False
    return m, lecture_matrices(m, words, dims)
