"""Cached computations of the pages. They live here, not in the page files: a cached function defined in a page is
made anew on every run, and Streamlit hashes its source each time (~1–2 ms per function per rerun).

Figures are cached per input. A trace passed as `_tr` is not hashed: the arguments before it (model, sentence, τ)
fix it. Building a figure costs far more than sending it."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from transformer import Trace
from transformer.data import phrases as td
from transformer.decoding import TranslationTrace, translate
from transformer.families.seq2seq import Seq2SeqInterventions
from transformer.loading import get_translator
from transformer.vocabulary import SourceText, read_source

from .models import get_model, model_choices

# --- Cross-attention (the translator) ---


@st.cache_resource(max_entries=64, show_spinner=False)
def translation(words: tuple[str, ...], temperature: float, causal: bool, ablate: tuple[tuple[str, int, int], ...]) -> TranslationTrace:
    """Greedy translation and its trace, cached; the arrays are read-only."""
    t = get_translator()
    return translate(t.model, t.tokenizer, words, Seq2SeqInterventions(temperature, causal, frozenset(ablate)))


@st.cache_resource(max_entries=1, show_spinner=False)
def held_out_phrases(n: int, seed: int) -> list[td.Pair]:
    """n held-out phrases: the model never trained on them."""
    return td.test_pairs(n, seed)


@st.cache_data(max_entries=64, show_spinner=False)
def read_phrase(phrase: str) -> SourceText:
    return read_source(get_translator().tokenizer, phrase, get_translator().cfg.n_ctx)


# --- RoPE and shared heads; encoder vs decoder ---
# (imported here, at the end of the file, so that these pages' additions stay in one block)

from figures import compare as fcmp  # noqa: E402
from figures import rope as frope  # noqa: E402
from figures.multihead import weight_panels  # noqa: E402
from lessons import encoder_decoder as ed  # noqa: E402
from lessons import gqa, rope  # noqa: E402
from lessons.heads import visible_keys  # noqa: E402

MAX_SHIFT = 1000  # the shift chart moves q and k up to this many positions


@st.cache_data(ttl=60, max_entries=64, show_spinner=False)
def model_family(name: str) -> str | None:
    """The family ("bert", "gpt" or "llama") of a model the picker offers, read from its files without loading it."""
    return ed.family(name)


def models_of(*families: str) -> list[str]:
    """The models the picker offers whose family is one of `families`, in the picker's order."""
    return [name for name in model_choices() if model_family(name) in families]


@st.cache_resource(max_entries=16, show_spinner=False)
def rope_angle_figures(model_name: str, n_pos: int, n_tokens: int) -> tuple[go.Figure, go.Figure]:
    """The angle table m·ω_i of the first n_pos positions, and each pair's wavelength next to the text's length."""
    cfg = get_model(model_name).cfg
    angles = rope.angle_table(cfg, n_pos)  # (n_pos, d_head/2)
    table = frope.angle_heatmap(angles, f"Angle of each pair at positions 0…{n_pos - 1} (θ = {cfg.rope_theta:g}, d = {cfg.d_head})")
    return table, frope.wavelength_chart(rope.wavelengths(cfg), n_tokens, "How many positions each pair needs for one full turn")


@st.cache_resource(max_entries=32, show_spinner=False)
def rope_shifts(model_name: str, sentence: str, tau: float, layer: int, head: int, m: int, n: int, _tr: Trace) -> rope.Shifts:
    """The model's own pre-RoPE q_m and k_n moved by every shift s from −min(m, n) to MAX_SHIFT."""
    cfg = get_model(model_name).cfg
    qk = rope.query_key(_tr, cfg, layer, head, m, n)
    return rope.shift_scores(qk.q, qk.k, m, n, np.arange(-min(m, n), MAX_SHIFT + 1), cfg)


@st.cache_resource(max_entries=32, show_spinner=False)
def gqa_figures(model_name: str, sentence: str, tau: float, layer: int, g: int, per_row: tuple[int, int], _tr: Trace) -> tuple[go.Figure, go.Figure, go.Figure, gqa.Group]:
    """K and V of every key/value head of `layer`, and the patterns of key/value head g's query heads; per_row: how many
    query heads' patterns, and how many key/value heads' K (and V), go in a row."""
    cfg = get_model(model_name).cfg
    labels = _tr.encoding.labels
    keys, values = gqa.keys_used(_tr, cfg, layer), _tr[f"blocks.{layer}.attn.hook_v"]  # (T, n_kv, hs) each
    names = [f"K/V head {k}" for k in range(cfg.n_kv_heads)]
    k_name = "K after RoPE" if rope.has_rope(cfg) else "K"
    k_fig = frope.head_panels(keys.transpose(1, 0, 2), labels, names, f"{k_name} of each key/value head, layer {layer}", value_name=k_name, per_row=per_row[1])
    v_fig = frope.head_panels(values.transpose(1, 0, 2), labels, names, f"V of each key/value head, layer {layer}", value_name="V", per_row=per_row[1])
    grp = gqa.group(_tr, cfg, layer, g)
    visible = visible_keys(_tr, layer)[grp.heads[0]]  # (T, T) the same mask for every head
    titles = [f"query head {h}" for h in grp.heads]
    p_fig = weight_panels(grp.patterns, labels, visible, titles, f"Weights of the query heads that share K/V head {g}, layer {layer}", per_row=per_row[0])
    return k_fig, v_fig, p_fig, grp


@st.cache_resource(max_entries=32, show_spinner=False)
def compare_grid(model_name: str, sentence: str, tau: float, word: int, target: int, _tr: Trace) -> tuple[np.ndarray, go.Figure]:
    """The weight from word `word` (its last token) on word `target` (all its tokens) in every head, and its heatmap."""
    src, tgt = ed.pair_tokens(_tr.encoding, sentence, word, target)  # words of the text the page shows (a trace cut by its model holds fewer)
    grid = ed.weight_grid(_tr, get_model(model_name).cfg.n_layer, src, tgt)  # (n_layer, n_head)
    layer, head, _ = ed.best_head(grid)
    ws = ed.words(sentence)
    return grid, fcmp.head_grid(grid, (layer, head), f"{ed.short_name(model_name)}: weight from “{ws[word].text}” on “{ws[target].text}”")


@st.cache_resource(max_entries=16, show_spinner=False)
def compare_sinks(models: tuple[str, ...], sentence: str, tau: float, _traces: tuple[Trace, ...]) -> tuple[go.Figure | None, list[ed.Sinks]]:
    """Per layer, an encoder's share of attention on [CLS] and [SEP] and a decoder's on its first token, in one chart
    (None when a text is too short to measure); and each model's numbers."""
    sinks, shares, evens = [], {}, {}
    for name, tr in zip(models, _traces, strict=True):
        cfg = get_model(name).cfg
        s = ed.sinks(tr, cfg.n_layer, cfg.causal)
        if s is None:
            return None, []
        label = f"{ed.short_name(name)}: {'on the first token' if cfg.causal else 'on [CLS] and [SEP]'}"
        sinks.append(s)
        shares[label], evens[label] = s.share, s.even
    return fcmp.sink_lines(shares, evens, "Attention on the sink tokens, averaged over heads and tokens"), sinks
