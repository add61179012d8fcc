"""Cross-attention: the translator's greedy translation, its held-out phrases and how it reads a phrase."""

from __future__ import annotations

import streamlit as st

from transformer.data import phrases as td
from transformer.decoding import TranslationTrace, translate
from transformer.families.seq2seq import Seq2SeqInterventions
from transformer.loading import get_translator
from transformer.vocabulary import SourceText, read_source

from ..models import shared


@shared(max_entries=64)
def translation(
    words: tuple[str, ...], temperature: float, causal: bool, ablate: tuple[tuple[str, int, int], ...]
) -> TranslationTrace:
    """Greedy translation and its trace, cached; the arrays are read-only."""
    t = get_translator()
    return translate(t.model, t.tokenizer, words, Seq2SeqInterventions(temperature, causal, frozenset(ablate)))


@shared(max_entries=1)
def held_out_phrases(n: int, seed: int) -> list[td.Pair]:
    """n held-out phrases: the model never trained on them."""
    return td.test_pairs(n, seed)


@st.cache_data(max_entries=64, show_spinner=False)
def read_phrase(phrase: str) -> SourceText:
    return read_source(get_translator().tokenizer, phrase, get_translator().cfg.n_ctx)
