"""Cached computations of the pages. They live here, not in the page files: a cached function defined in a page is
made anew on every run, and Streamlit hashes its source each time (~1–2 ms per function per rerun).

Figures are cached per input. A trace passed as `_tr` is not hashed: the arguments before it (model, sentence, τ)
fix it. Building a figure costs far more than sending it."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from figures import attention as fa
from figures import block as fb
from figures import context as fc
from figures.common import grouped_bars
from figures.embeddings import cosine_heatmap, pca_map, sentence_rows_heatmap, token_chips
from figures.matrices import lecture_figures as lecture_matrices
from figures.positions import bits_heatmap, encoding_heatmap, similarity_heatmap
from figures.prediction import lens_heatmap
from lessons import block_stats as bs
from lessons import context as cx
from lessons import padding
from lessons import softmax_lab as lab
from lessons.embedding_space import binary_bits, cosine_matrix, frequent_ids, unit_rows
from lessons.lecture import lecture_example
from lessons.logit_lens import logit_lens, stage_names
from lessons.pca import PCA, pca
from transformer import Interventions, Trace, sinusoidal_encoding
from transformer.data import phrases as td
from transformer.families import seq2seq as s2s
from transformer.loading import get_translator

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
def padded_batch(model_name: str, texts: tuple[str, ...], temperature: float, causal: bool, use_padding_mask: bool) -> padding.PaddedBatch:
    """The texts as one right-padded batch (logits and masked scores only), cached."""
    lm = get_model(model_name)
    keep = ["logits", *(f"blocks.{layer}.attn.hook_scores_masked" for layer in range(lm.cfg.n_layer))]
    return padding.padded_forward(lm.model, lm.tokenizer, texts, Interventions(temperature=temperature, causal=causal), use_padding_mask, keep)


# Context: (model, sentences, word, forms, τ) fix the traces and the word's vectors, passed unhashed (_vectors, _numbers).
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


# --- Tokens & embeddings: embeddings come before any attention, so these do not depend on τ ---


@st.cache_resource(max_entries=4, show_spinner=False)
def unit_embedding(model_name: str) -> np.ndarray:
    """Every row of W_E scaled to length 1, (V, d): cosine similarity becomes a dot product."""
    return unit_rows(get_model(model_name).model.W_E.detach().numpy())


@st.cache_resource(max_entries=16, show_spinner=False)
def vocabulary_map(model_name: str, n: int) -> tuple[np.ndarray, PCA]:
    """The n 'frequent' vocabulary ids and a 3-component PCA fitted on their embeddings."""
    m = get_model(model_name)
    ids = frequent_ids(m.tokenizer, n)
    return ids, pca(m.model.W_E.detach().numpy()[ids], 3)


@st.cache_resource(max_entries=16, show_spinner=False)
def sentence_figures(model_name: str, sentence: str, _tr: Trace) -> tuple[go.Figure, go.Figure, go.Figure]:
    """Token chips, the embedding rows W_E[ids] and their cosine-similarity matrix."""
    enc, embed = _tr.encoding, _tr["hook_embed"]  # embed: (T, d_model)
    rows = sentence_rows_heatmap(embed, enc.labels, f"Embedding rows W_E[id] of your {len(enc)} tokens ({embed.shape[1]} dimensions)", "W_E value")
    return token_chips(enc), rows, cosine_heatmap(cosine_matrix(embed), enc.labels)


@st.cache_resource(max_entries=16, show_spinner=False)
def map_figure(model_name: str, sentence: str, n: int, k: int, _tr: Trace) -> tuple[go.Figure, float]:
    """The sentence's tokens among the n frequent vocabulary tokens, in k principal components; and the share of variance shown."""
    m = get_model(model_name)
    bg_ids, fit = vocabulary_map(model_name, n)
    bg = fit.project(m.model.W_E.detach().numpy()[bg_ids])[:, :k]  # (n, k)
    pts = fit.project(_tr["hook_embed"])[:, :k]  # (T, k)
    vocab_labels = m.tokenizer.vocab_labels()
    return pca_map(bg, [vocab_labels[i] for i in bg_ids], pts, _tr.encoding.labels, fit.explained[:k]), float(fit.explained[:k].sum())


# --- Positional encoding ---

COUNTER_ROWS, COUNTER_DIMS = 16, 32  # the positions and sinusoid dimensions shown next to the binary counter


@st.cache_resource(max_entries=16, show_spinner=False)
def sinusoid_figures(d: int, n_pos: int) -> tuple[go.Figure, go.Figure, go.Figure, go.Figure]:
    """PE heatmap, binary counter, the first positions and dimensions of PE, and PE_i · PE_j."""
    pe = sinusoidal_encoding(n_pos, d).numpy()  # (n_pos, d)
    n = min(n_pos, COUNTER_ROWS)
    counter = bits_heatmap(binary_bits(n, max(1, math.ceil(math.log2(n)))))
    # PE_i · PE_j for every pair
    sim = similarity_heatmap(pe @ pe.T, f"PE_i · PE_j for {n_pos} positions, d = {d}")  # (n_pos, n_pos)
    return (
        encoding_heatmap(pe, f"Sinusoidal encoding: {n_pos} positions × {d} dimensions"),
        counter,
        encoding_heatmap(pe[:n, :COUNTER_DIMS], f"The same {n} positions, first {min(d, COUNTER_DIMS)} sinusoid dimensions"),
        sim,
    )


@st.cache_resource(max_entries=16, show_spinner=False)
def input_figures(model_name: str, sentence: str, _tr: Trace) -> tuple[go.Figure, go.Figure, go.Figure]:
    """Token embedding, position vectors and their sum (the input to block 0), one row per token."""
    embed, pos_embed, resid = _tr["hook_embed"], _tr["hook_pos_embed"], _tr["blocks.0.hook_resid_pre"]  # 3 × (T, d_model)
    labels, T = _tr.encoding.labels, len(_tr.encoding)
    panels = ((embed, "token embedding W_E[id]"), (pos_embed, f"+ position W_pos[0…{T - 1}]"), (resid, "= input to block 0"))
    return tuple(sentence_rows_heatmap(z, labels, title, "value") for z, title in panels)


# --- Inside a block ---


@st.cache_resource(max_entries=16, show_spinner=False)
def stream_figure(model_name: str, sentence: str, tau: float, _tr: Trace) -> go.Figure:
    """‖x‖ of every token at every stage of the residual stream."""
    stages = [label for _, label in bs.stream_stages(bs.n_layers(_tr))]
    return fb.residual_norm_heatmap(bs.residual_norms(_tr), stages, _tr.encoding.labels)


@st.cache_resource(max_entries=32, show_spinner=False)
def layernorm_figures(model_name: str, sentence: str, tau: float, layer: int, ln: str, _tr: Trace) -> tuple[go.Figure, go.Figure]:
    """Per-token mean and standard deviation of the LayerNorm's input, normalized vectors and output."""
    cfg = get_model(model_name).cfg
    steps = bs.layernorm_steps(_tr, layer, ln, cfg.ln_eps)
    stats = {name: bs.token_mean_std(v) for name, v in (("input x", steps.x), ("normalized x̂", steps.x_hat), ("output x̂⊙w + b", steps.y))}
    labels = _tr.encoding.labels
    mean_fig = grouped_bars({k: m for k, (m, _) in stats.items()}, labels, title=f"Mean μ of each token's {cfg.d_model} numbers", x_title="token", y_title="mean")
    std_fig = grouped_bars({k: s for k, (_, s) in stats.items()}, labels, title="Standard deviation σ of each token's numbers", x_title="token", y_title="standard deviation")
    return mean_fig, std_fig


@st.cache_resource(max_entries=32, show_spinner=False)
def token_figures(model_name: str, sentence: str, tau: float, layer: int, ln: str, tok: int, _tr: Trace) -> tuple[go.Figure, go.Figure]:
    """One token: its numbers before and after the LayerNorm, and its MLP neurons on the GELU curve."""
    cfg = get_model(model_name).cfg
    steps = bs.layernorm_steps(_tr, layer, ln, cfg.ln_eps)
    label = _tr.encoding.labels[tok]
    values = {"input x": steps.x[tok], "normalized x̂": steps.x_hat[tok], "output x̂⊙w + b": steps.y[tok]}
    values_fig = fb.token_values(values, f"The {cfg.d_model} numbers of token {tok} ({label}) before and after {ln.upper()}")
    pre, post = _tr[f"blocks.{layer}.mlp.hook_pre"][tok], _tr[f"blocks.{layer}.mlp.hook_post"][tok]  # (d_mlp,) each
    curve_x = np.linspace(min(float(pre.min()), -3.0), max(float(pre.max()), 3.0), 200, dtype=np.float32)  # (200,)
    gelu_fig = fb.gelu_figure(curve_x, bs.gelu(curve_x, cfg.activation), pre, post, f"GELU, and the {cfg.d_mlp} neurons of token {tok} ({label})")
    return values_fig, gelu_fig


@st.cache_resource(max_entries=32, show_spinner=False)
def mlp_figure(model_name: str, sentence: str, tau: float, layer: int, n: int, _tr: Trace) -> go.Figure:
    """The n most active neurons of the block's MLP, for every token."""
    post = _tr[f"blocks.{layer}.mlp.hook_post"]  # (T, d_mlp)
    neurons = bs.top_neurons(post, n)  # (n,) neuron ids
    title = f"MLP activations GELU(x·W_in + b_in): the {n} most active of {post.shape[1]} neurons"
    return fb.mlp_heatmap(post[:, neurons], neurons, _tr.encoding.labels, title)


@st.cache_resource(max_entries=32, show_spinner=False)
def adds_figures(model_name: str, sentence: str, tau: float, layer: int, _tr: Trace) -> tuple[go.Figure, go.Figure]:
    """‖attn_out‖ and ‖mlp_out‖: per block averaged over the tokens, and per token for `layer`."""
    attn, mlp = bs.contribution_norms(_tr)  # (n_layer, T) each
    per_layer = {"attention ‖attn_out‖": attn.mean(axis=1), "MLP ‖mlp_out‖": mlp.mean(axis=1)}
    layers_fig = grouped_bars(per_layer, [f"block {i}" for i in range(len(attn))], title="Average over tokens, per block", x_title="block", y_title="average length")
    per_token = {"attention ‖attn_out‖": attn[layer], "MLP ‖mlp_out‖": mlp[layer]}
    return layers_fig, grouped_bars(per_token, _tr.encoding.labels, title=f"Block {layer}, per token", x_title="token", y_title="length")


# --- Cross-attention (the translator) ---


@st.cache_resource(max_entries=64, show_spinner=False)
def translation(words: tuple[str, ...], temperature: float, causal: bool, ablate: tuple[tuple[str, int, int], ...]) -> s2s.TranslationTrace:
    """Greedy translation and its trace, cached; the arrays are read-only."""
    t = get_translator()
    return s2s.translate(t.model, t.tokenizer, words, s2s.Seq2SeqInterventions(temperature, causal, frozenset(ablate)))


@st.cache_resource(max_entries=1, show_spinner=False)
def held_out_phrases(n: int, seed: int) -> list[td.Pair]:
    """n held-out phrases: the model never trained on them."""
    return td.test_pairs(n, seed)


@st.cache_data(max_entries=64, show_spinner=False)
def read_phrase(phrase: str) -> s2s.SourceText:
    return s2s.read_source(get_translator().tokenizer, phrase, get_translator().cfg.n_ctx)


# --- Softmax & temperature ---

sqrt_dk_experiment = st.cache_data(max_entries=16, show_spinner=False)(lab.sqrt_dk_experiment)


# --- Lecture example ---


@st.cache_resource(max_entries=32, show_spinner=False)
def lecture_figures(X: np.ndarray, words: tuple[str, ...], dims: tuple[str, ...], seed: int) -> tuple[dict[str, np.ndarray], dict[str, go.Figure]]:
    """Every matrix of the worked example for these inputs (read-only), and its figure."""
    m = lecture_example(X, seed)
    for a in m.values():
        a.flags.writeable = False
    return m, lecture_matrices(m, words, dims)


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
def gqa_figures(model_name: str, sentence: str, tau: float, layer: int, g: int, _tr: Trace) -> tuple[go.Figure, go.Figure, go.Figure, gqa.Group]:
    """K and V of every key/value head of `layer`, and the patterns of key/value head g's query heads."""
    cfg = get_model(model_name).cfg
    labels = _tr.encoding.labels
    keys, values = gqa.keys_used(_tr, cfg, layer), _tr[f"blocks.{layer}.attn.hook_v"]  # (T, n_kv, hs) each
    names = [f"K/V head {k}" for k in range(cfg.n_kv_heads)]
    k_name = "K after RoPE" if rope.has_rope(cfg) else "K"
    k_fig = frope.head_panels(keys.transpose(1, 0, 2), labels, names, f"{k_name} of each key/value head, layer {layer}", value_name=k_name)
    v_fig = frope.head_panels(values.transpose(1, 0, 2), labels, names, f"V of each key/value head, layer {layer}", value_name="V")
    grp = gqa.group(_tr, cfg, layer, g)
    visible = visible_keys(_tr, layer)[grp.heads[0]]  # (T, T) the same mask for every head
    titles = [f"query head {h}" for h in grp.heads]
    p_fig = weight_panels(grp.patterns, labels, visible, titles, f"Weights of the query heads that share K/V head {g}, layer {layer}")
    return k_fig, v_fig, p_fig, grp


@st.cache_resource(max_entries=32, show_spinner=False)
def compare_grid(model_name: str, sentence: str, tau: float, word: int, target: int, _tr: Trace) -> tuple[np.ndarray, go.Figure]:
    """The weight from word `word` (its last token) on word `target` (all its tokens) in every head, and its heatmap."""
    ws = ed.words(sentence)  # the text the page shows (a trace cut by its model holds fewer words)
    src, tgt = ed.tokens_of(_tr.encoding, ws[word]), ed.tokens_of(_tr.encoding, ws[target])
    grid = ed.weight_grid(_tr, get_model(model_name).cfg.n_layer, src, tgt)  # (n_layer, n_head)
    layer, head, _ = ed.best_head(grid)
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
