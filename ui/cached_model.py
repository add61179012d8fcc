"""Cached accessors of the pages that read one model's numbers: Tokens & embeddings, Positional encoding, Multi-head,
Inside a block, Next token, Context. Each calls a lessons/ computation and a figures/ builder; no math here.

They live here, not in the page files: a cached function defined in a page is made anew on every run. A trace passed
as `_tr` is not hashed: the arguments before it (model, sentence, τ, …) fix it. Building a figure costs far more than
sending it, so figures are cached per input.
"""

from __future__ import annotations

import re
import threading
import unicodedata

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from figures import attention as fa
from figures import block as fb
from figures import context as fc
from figures import multihead as fm
from figures.common import grouped_bars
from figures.embeddings import cosine_heatmap, neighbour_bars, pca_map, sentence_rows_heatmap, token_chips
from figures.positions import bits_heatmap, encoding_heatmap, similarity_heatmap, waves
from figures.prediction import lens_heatmap
from lessons import block_stats as bs
from lessons import context as cx
from lessons import embedding_space as es
from lessons import heads
from lessons import logit_lens as ll
from lessons.pca import PCA, pca
from lessons.words import noun
from transformer import Trace, sinusoidal_encoding
from transformer.head_scores import HeadScores, probe_scores

from .models import get_model

# --- Tokens & embeddings: embeddings come before any attention, so these do not depend on τ ---


@st.cache_resource(max_entries=4, show_spinner=False)
def embedding_directions(model_name: str) -> es.Directions:
    """W_E's rows compared by direction (cosine similarity), with their lengths computed once."""
    return es.directions(get_model(model_name).model.W_E.detach().numpy())


@st.cache_resource(max_entries=16, show_spinner=False)
def vocabulary_map(model_name: str, n: int) -> tuple[np.ndarray, PCA]:
    """The n 'frequent' vocabulary ids and a 3-component PCA fitted on their embeddings."""
    m = get_model(model_name)
    ids = es.frequent_ids(m.tokenizer, n)
    return ids, pca(m.model.W_E.detach().numpy()[ids], 3)


@st.cache_resource(max_entries=16, show_spinner=False)
def sentence_figures(model_name: str, sentence: str, _tr: Trace) -> tuple[go.Figure, go.Figure, go.Figure]:
    """Token chips, the embedding rows W_E[ids] and their cosine-similarity matrix."""
    enc, embed = _tr.encoding, _tr["hook_embed"]  # embed: (T, d_model)
    rows = sentence_rows_heatmap(embed, enc.labels, f"Embedding rows W_E[id] of your {len(enc)} tokens ({embed.shape[1]} dimensions)", "W_E value")
    return token_chips(enc), rows, cosine_heatmap(es.cosine_matrix(embed), enc.labels)


@st.cache_resource(max_entries=16, show_spinner=False)
def map_figure(model_name: str, sentence: str, n: int, k: int, _tr: Trace) -> tuple[go.Figure, float]:
    """The sentence's tokens among the n frequent vocabulary tokens, in k principal components; and the share of variance shown."""
    m = get_model(model_name)
    bg_ids, fit = vocabulary_map(model_name, n)
    bg = fit.project(m.model.W_E.detach().numpy()[bg_ids])[:, :k]  # (n, k)
    pts = fit.project(_tr["hook_embed"])[:, :k]  # (T, k)
    vocab_labels = m.tokenizer.vocab_labels()
    return pca_map(bg, [vocab_labels[i] for i in bg_ids], pts, _tr.encoding.labels, fit.explained[:k]), float(fit.explained[:k].sum())


@st.cache_resource(max_entries=64, show_spinner=False)
def neighbours_figure(model_name: str, token_id: int, k: int, label: str) -> go.Figure:
    """The k vocabulary tokens whose embeddings point most nearly the way token_id's does."""
    ids, cos = es.nearest(embedding_directions(model_name), get_model(model_name).model.W_E.detach().numpy()[token_id], k, exclude={token_id})
    names = get_model(model_name).tokenizer.vocab_labels()
    return neighbour_bars(cos, [names[i] for i in ids], f"The {k} tokens nearest to {label} (id {token_id})")


@st.cache_resource(max_entries=64, show_spinner=False)
def analogy_figure(model_name: str, a: int, b: int, c: int, k: int) -> go.Figure:
    """The k tokens nearest to ŵ_a − ŵ_b + ŵ_c."""
    ids, cos = es.analogy(embedding_directions(model_name), a, b, c, k)
    names = get_model(model_name).tokenizer.vocab_labels()
    return neighbour_bars(cos, [names[i] for i in ids], f"Nearest to {names[a]} − {names[b]} + {names[c]}")


@st.cache_resource(max_entries=8, show_spinner=False)
def analogy_answer(model_name: str, words: tuple[str, str, str]) -> str | None:
    """The nearest token to a − b + c for three words of this vocabulary (inside a sentence), e.g. king − man + woman;
    None when a word is not one token."""
    tok = get_model(model_name).tokenizer
    ids, bad = es.read_words(tok, dict(zip("abc", words, strict=True)), tok.byte_level)
    return None if bad else tok.vocab_labels()[int(es.analogy(embedding_directions(model_name), ids["a"], ids["b"], ids["c"], 1)[0][0])]


# --- Positional encoding ---

COUNTER_ROWS, COUNTER_DIMS = 16, 32  # the positions and sinusoid dimensions shown next to the binary counter


@st.cache_resource(max_entries=16, show_spinner=False)
def sinusoid_figures(d: int, n_pos: int) -> tuple[go.Figure, go.Figure, go.Figure, go.Figure]:
    """PE heatmap, binary counter, the first positions and dimensions of PE, and PE_i · PE_j."""
    pe = sinusoidal_encoding(n_pos, d).numpy()  # (n_pos, d)
    n = min(n_pos, COUNTER_ROWS)
    return (
        encoding_heatmap(pe, f"Sinusoidal encoding: {n_pos} positions × {d} dimensions"),
        bits_heatmap(es.counter_bits(n)),
        encoding_heatmap(pe[:n, :COUNTER_DIMS], f"The same {n} positions, first {min(d, COUNTER_DIMS)} sinusoid dimensions"),
        similarity_heatmap(es.position_similarity(pe), f"PE_i · PE_j for {n_pos} positions, d = {d}"),
    )


@st.cache_resource(max_entries=32, show_spinner=False)
def waves_figure(d: int, n_pos: int, dims: tuple[int, ...]) -> go.Figure:
    return waves(sinusoidal_encoding(n_pos, d).numpy(), dims)


@st.cache_resource(max_entries=16, show_spinner=False)
def input_figures(model_name: str, sentence: str, _tr: Trace) -> tuple[go.Figure, ...]:
    """Token embedding, position vectors (BERT: and token-type vectors) and the input to block 0, one row per token."""
    labels, T = _tr.encoding.labels, len(_tr.encoding)
    panels = [(_tr["hook_embed"], "token embedding W_E[id]"), (_tr["hook_pos_embed"], f"+ position W_pos[0…{T - 1}]")]  # (T, d_model) each
    if "hook_token_type_embed" in _tr:
        panels += [(_tr["hook_token_type_embed"], "+ token type W_type[A/B]"), (_tr["blocks.0.hook_resid_pre"], "= LayerNorm(sum), input to block 0")]
    else:
        panels.append((_tr["blocks.0.hook_resid_pre"], "= input to block 0"))
    return tuple(sentence_rows_heatmap(z, labels, title, "value") for z, title in panels)


# --- Multi-head attention ---


@st.cache_resource(max_entries=32, show_spinner=False)
def heads_figure(model_name: str, sentence: str, tau: float, layer: int, hide: tuple[int, ...], per_row: int, _tr: Trace) -> tuple[go.Figure, float]:
    """Every head of `layer` side by side (at most per_row in a row) on one colour scale, and the top of that scale."""
    w, mask = _tr[f"blocks.{layer}.attn.hook_pattern"], heads.key_mask(_tr)  # (nh, T, T), (T, T)
    zmax = heads.shown_max(w, mask, hide)
    titles = [f"head {h}" for h in range(len(w))]
    return fm.weight_panels(w, _tr.encoding.labels, mask, titles, f"The heads of layer {layer}, one colour scale 0 … {zmax:.3f}", zmax=zmax, hide=hide, per_row=per_row), zmax


@st.cache_resource(max_entries=32, show_spinner=False)
def averages_figure(model_name: str, sentence: str, tau: float, layer: int, hide: tuple[int, ...], per_row: int, _tr: Trace) -> go.Figure:
    """The mean pattern of `layer`'s heads and of every head of the model (side by side when per_row ≥ 2)."""
    n_layer, nh = _tr.cfg.n_layer, _tr.cfg.n_head
    means = np.stack([heads.mean_pattern(_tr, layer), heads.mean_pattern(_tr, None)])  # (2, T, T)
    mask = heads.key_mask(_tr)[None]  # (1, T, T)
    titles = [f"AVERAGE over the {nh} heads of layer {layer}", f"AVERAGE over all {n_layer * nh} heads ({n_layer} layers × {nh} heads)"]
    top = heads.shown_max(means, mask, hide)
    return fm.weight_panels(means, _tr.encoding.labels, mask, titles, f"Averages (not heads), one colour scale 0 … {top:.3f}", zmax=top, hide=hide, value_name="mean weight", per_row=per_row)


THUMB = 32  # overview thumbnails are at most THUMB × THUMB cells


@st.cache_resource(max_entries=32, show_spinner=False)
def overview_figure(model_name: str, sentence: str, tau: float, opened: tuple[int, int], hide: tuple[int, ...], _tr: Trace, _badges: dict) -> tuple[go.Figure, int, int]:
    """Every head's pattern as a small map (b × b blocks averaged), the opened head outlined, with the badges (fixed by
    the model); b and the thumbnail size."""
    thumbs, block, zmax = heads.overview(_tr, hide, THUMB)  # thumbs (n_layer, nh, n, n)
    return fm.head_overview(thumbs, opened, f"All {_tr.cfg.n_layer * _tr.cfg.n_head} heads", zmax=zmax, badges=_badges), block, thumbs.shape[-1]


@st.cache_resource(max_entries=32, show_spinner=False)
def opened_figures(
    model_name: str, sentence: str, tau: float, opened: tuple[int, int], hide: tuple[int, ...], sink_name: str, threshold: float, token: int, _tr: Trace
) -> tuple[go.Figure, go.Figure, int]:
    """One head large, and its lines from query to key (weights ≥ threshold; of one token, unless token < 0); the line count."""
    layer, head = opened
    w, mask = _tr[f"blocks.{layer}.attn.hook_pattern"][head], heads.key_mask(_tr)  # (T, T) each
    labels = _tr.encoding.labels
    top = heads.shown_max(w, mask, hide)
    big = fm.weights_map(w, labels, mask, f"Opened: layer {layer}, head {head}", zmax=top, hide=hide, sink_name=sink_name, height=520)
    shown = mask.copy()
    shown[:, list(hide)] = False
    i, j, lw = heads.line_pairs(w, shown, threshold, None if token < 0 else token)
    return big, fm.token_lines([(f"head {head}", i, j, lw)], labels, f"Lines, layer {layer}, head {head}"), len(lw)


@st.cache_resource(max_entries=32, show_spinner=False)
def layer_lines_figure(model_name: str, sentence: str, tau: float, layer: int, hide: tuple[int, ...], threshold: float, token: int, _tr: Trace) -> go.Figure:
    """Every head of `layer` as lines from query to key, a colour per head (weights ≥ threshold; of one token, unless token < 0)."""
    w, shown = _tr[f"blocks.{layer}.attn.hook_pattern"], heads.key_mask(_tr).copy()  # (nh, T, T), (T, T)
    shown[:, list(hide)] = False
    pairs = [(f"head {h}", *heads.line_pairs(w[h], shown, threshold, None if token < 0 else token)) for h in range(len(w))]
    return fm.token_lines(pairs, _tr.encoding.labels, f"Every head of layer {layer} as lines")


@st.cache_resource(max_entries=32, show_spinner=False)
def concat_figures(model_name: str, sentence: str, tau: float, layer: int, t: int, _tr: Trace) -> tuple[go.Figure, go.Figure, go.Figure, float]:
    """Token t's heads side by side (concat), W_O, each head's share of the output with their sum; and the recomputation error."""
    cfg, model = _tr.cfg, get_model(model_name).model
    nh, hs, d = cfg.n_head, cfg.d_head, cfg.d_model
    names = [f"head {h}" for h in range(nh)]
    concat = _tr[f"blocks.{layer}.attn.hook_concat"][t]  # (nh·hs,)
    concat_title = f"z of each head for token {t}, ({nh} × {hs}), side by side = concat, (1, {nh * hs})"
    concat_fig = fm.vector_rows(concat[None], concat_title, row_blocks=[f"token {t}"], col_blocks=[f"z, {n}" for n in names], value_name="concat", height=170)
    W_O, b_O = heads.out_projection(model, layer)  # (nh·hs, d), (d,) or None
    wo_fig = fm.vector_rows(W_O, f"W_O of layer {layer}, ({nh * hs}, {d})", row_blocks=[f"rows of {n}" for n in names], x_title="output dimension", value_name="W_O", height=460)
    sh = heads.output_shares(_tr, model, layer, t)
    title = f"Attention output of token {t} = concat·W_O{'' if b_O is None else ' + b_O'}, (1, {d})"
    return concat_fig, wo_fig, fm.vector_rows(sh.rows, title, row_blocks=sh.names, x_title="output dimension", height=460), sh.error


@st.cache_resource(max_entries=32, show_spinner=False)
def ablation(model_name: str, sentence: str, tau: float, ablate: tuple[tuple[int, int], ...], k: int, _before: Trace, _after: Trace) -> tuple[go.Figure, dict | None, float]:
    """What switching the heads `ablate` off changes: a decoder's next-token probabilities (figure, table of the top k before and
    after, share of probability moved); an encoder's final vectors (figure, no table, mean 1 − cos over the tokens)."""
    if _before.cfg.has_lm_head:
        change = heads.next_token_change(_before["logits"][-1], _after["logits"][-1], k)
        table = heads.change_table(change, get_model(model_name).tokenizer.vocab_labels())
        fig = fm.ablation_bars(table["next token"], change.before, change.after, f"Next-token probabilities, {len(ablate)} {noun(len(ablate), 'head')} switched off")
        return fig, table, change.moved
    oc = heads.output_change(_before, _after)
    fig = fm.output_change_bars(oc.cosine, oc.relative, _before.encoding.labels, f"Every token's final vector, {len(ablate)} {noun(len(ablate), 'head')} switched off")
    return fig, None, float(oc.turned)


# --- Inside a block ---


@st.cache_resource(max_entries=16, show_spinner=False)
def stream_figure(model_name: str, sentence: str, tau: float, _tr: Trace) -> tuple[go.Figure, np.ndarray, tuple[int, float, float] | None]:
    """‖x‖ of every token at every stage of the residual stream (the colours capped below a token that stands far out);
    those lengths, (n_stages, T); and the token that stands out (see block_stats.stand_out)."""
    norms = bs.residual_norms(_tr)
    out = bs.stand_out(norms)
    fig = fb.residual_norm_heatmap(norms, [label for _, label in bs.stream_stages(_tr.cfg)], _tr.encoding.labels, zmax=None if out is None else out[2])
    return fig, norms, out


NORM_STEPS = {"layernorm": ("normalized x̂", "output x̂⊙w + b"), "rmsnorm": ("normalized x̂", "output x̂⊙w")}


@st.cache_resource(max_entries=32, show_spinner=False)
def norm_figures(model_name: str, sentence: str, tau: float, layer: int, ln: str, _tr: Trace) -> tuple[go.Figure, go.Figure, bs.NormSteps]:
    """Per-token mean and spread (LayerNorm: standard deviation; RMSNorm: root mean square) of the norm's input,
    normalized vectors and output; and those vectors."""
    cfg, steps = _tr.cfg, bs.norm_steps(_tr, layer, ln)
    names = ("input x", *NORM_STEPS[cfg.norm])
    stats = {name: bs.token_stats(v, cfg.norm) for name, v in zip(names, (steps.x, steps.x_hat, steps.y), strict=True)}
    labels = _tr.encoding.labels
    spread = ("Root mean square √mean(x²)", "root mean square") if cfg.norm == "rmsnorm" else ("Standard deviation σ", "standard deviation")
    mean_fig = grouped_bars({k: m for k, (m, _) in stats.items()}, labels, title=f"Mean μ of each token's {cfg.d_model} numbers", x_title="token", y_title="mean")
    spread_fig = grouped_bars({k: s for k, (_, s) in stats.items()}, labels, title=f"{spread[0]} of each token's numbers", x_title="token", y_title=spread[1])
    return mean_fig, spread_fig, steps


@st.cache_resource(max_entries=32, show_spinner=False)
def token_figures(model_name: str, sentence: str, tau: float, layer: int, ln: str, tok: int, _tr: Trace) -> tuple[go.Figure, go.Figure, go.Figure | None]:
    """One token: its numbers before and after the norm; its MLP neurons on the activation curve (GELU, or SwiGLU's
    SiLU of the gate); and for SwiGLU the strongest neurons' SiLU(gate), linear branch and product."""
    cfg, steps = _tr.cfg, bs.norm_steps(_tr, layer, ln)
    label = _tr.encoding.labels[tok]
    values = dict(zip(("input x", *NORM_STEPS[cfg.norm]), (steps.x[tok], steps.x_hat[tok], steps.y[tok]), strict=True))
    values_fig = fb.token_values(values, f"The {cfg.d_model} numbers of token {tok} ({label}) before and after {bs.norm_name(cfg)} {ln[-1]}")
    pre = _tr[f"blocks.{layer}.mlp.hook_pre"][tok]  # (d_mlp,): GELU's input, or SwiGLU's gate
    curve_x, curve_y = bs.activation_curve(pre, cfg.activation)
    if not bs.gated(cfg):
        post = _tr[f"blocks.{layer}.mlp.hook_post"][tok]  # (d_mlp,)
        return values_fig, fb.activation_figure(curve_x, curve_y, pre, post, f"GELU, and the {cfg.d_mlp} neurons of token {tok} ({label})"), None
    act = fb.activation_figure(curve_x, curve_y, pre, bs.activation(pre, "silu"), f"SiLU of the gate, for the {cfg.d_mlp} neurons of token {tok} ({label})", fn="SiLU", pre_name="x·W_gate")
    sw = bs.swiglu(_tr, layer, tok, 12)
    bars = fb.swiglu_bars(sw.neurons, sw.silu_gate, sw.linear, sw.post, f"Token {tok}'s 12 strongest neurons: SiLU(gate) ⊙ linear = output")
    return values_fig, act, bars


@st.cache_resource(max_entries=32, show_spinner=False)
def mlp_figure(model_name: str, sentence: str, tau: float, layer: int, n: int, _tr: Trace) -> go.Figure:
    """The n most active neurons of the block's MLP (SwiGLU: the n largest in size), for every token."""
    post, swi = _tr[f"blocks.{layer}.mlp.hook_post"], bs.gated(_tr.cfg)  # (T, d_mlp)
    neurons = bs.top_neurons(post, n, by_size=swi)  # (n,) neuron ids
    formula = "SiLU(x·W_gate) ⊙ x·W_in" if swi else "GELU(x·W_in + b_in)"
    title = f"MLP activations {formula}: the {n} most active of {post.shape[1]} neurons"
    return fb.mlp_heatmap(post[:, neurons], neurons, _tr.encoding.labels, title, "SwiGLU output" if swi else "GELU output", signed=swi)


@st.cache_resource(max_entries=32, show_spinner=False)
def adds_figures(model_name: str, sentence: str, tau: float, layer: int, _tr: Trace) -> tuple[go.Figure, go.Figure]:
    """‖attn_out‖ and ‖mlp_out‖: per block averaged over the tokens, and per token for `layer`."""
    attn, mlp = bs.contribution_norms(_tr)  # (n_layer, T) each
    per_layer = {"‖attention output‖": attn.mean(axis=1), "‖MLP output‖": mlp.mean(axis=1)}
    layers_fig = grouped_bars(per_layer, [str(i) for i in range(len(attn))], title="Average over tokens, per block", x_title="block", y_title="average length")
    per_token = {"‖attention output‖": attn[layer], "‖MLP output‖": mlp[layer]}
    return layers_fig, grouped_bars(per_token, _tr.encoding.labels, title=f"Block {layer}, per token", x_title="token", y_title="length")


# --- Next token: the logit lens ---


LENS_TOP = 10  # the lens table lists up to this many tokens per stage


@st.cache_resource(max_entries=16, show_spinner=False)
def lens_columns(model_name: str, text: str, tau: float) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], threading.Lock]:
    """Position → the lens's top-1 token ids and probabilities at every stage, (L+1,) each: filled as windows need
    them, so moving the chosen position computes only the positions new to the window (in one batch: SmolLM2's
    unembedding is 113 MB, read once per batch). Shared by every session: written only under its lock."""
    return {}, threading.Lock()


@st.cache_resource(max_entries=32, show_spinner=False)
def lens_figure(model_name: str, text: str, tau: float, pos: int, _tr: Trace) -> tuple[go.Figure, range]:
    """The logit-lens heatmap on the window of positions around `pos` (pos outlined), and the window."""
    loaded = get_model(model_name)
    window = ll.window(pos, len(_tr.encoding), ll.window_size(loaded.cfg.vocab_size))
    store, lock = lens_columns(model_name, text, tau)
    with lock:
        if missing := [p for p in window if p not in store]:
            lz = ll.logit_lens(loaded.model, _tr, missing, keep_logits=False)
            store.update({p: (lz.top_ids[:, j], lz.top_probs[:, j]) for j, p in enumerate(missing)})
        top_ids, top_probs = (np.stack([store[p][k] for p in window], axis=1) for k in (0, 1))  # (L+1, P) each
    names = loaded.tokenizer.vocab_labels()
    top_labels = [[names[i] for i in row] for row in top_ids]
    stages = ll.stage_names(loaded.cfg.n_layer)
    return lens_heatmap(top_probs, top_labels, stages, window, _tr.encoding.labels[window.start : window.stop], chosen=pos), window


@st.cache_resource(max_entries=64, show_spinner=False)
def lens_column(model_name: str, text: str, tau: float, pos: int, _tr: Trace) -> ll.LensColumn:
    """The logit lens at one position, with the LENS_TOP most probable tokens of every stage."""
    loaded = get_model(model_name)
    return ll.column(loaded.model, _tr, pos, loaded.tokenizer.vocab_labels(), LENS_TOP)


def lens_table(model_name: str, text: str, tau: float, pos: int, n: int, _tr: Trace) -> dict[str, list[str]]:
    """The n (≤ LENS_TOP) most probable next tokens of every stage at `pos`."""
    return {stage: row[:n] for stage, row in lens_column(model_name, text, tau, pos, _tr).table.items()}


# --- Context: (model, sentences, word, forms, τ) fix the traces and the word's vectors, passed unhashed (_numbers, _vectors) ---


@st.cache_resource(max_entries=32, show_spinner=False)
def cosine_figure(model_name: str, sentences: tuple[str, ...], word: str, forms: bool, tau: float, _numbers: list, _vectors: np.ndarray) -> tuple[go.Figure, np.ndarray]:
    """cos of the word's vectors for every pair of sentences, at every layer; and those cosines, (n_pairs, n_layer + 1)."""
    pairs, cos = cx.pair_cosines(_vectors)
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


# --- What each head does: its scores on a probe of repeated random tokens (badges on One head and Multi-head) ---

_HEAD_SCORES: dict[str, HeadScores] = {}  # model name → scores; a plain dict, not st.cache_resource: its progress bar must not be replayed
_HEAD_SCORES_LOCK = threading.Lock()


def head_scores(model_name: str) -> HeadScores:
    """Every head's scores (transformer.head_scores.probe_scores), measured once per model and server process, with a
    progress bar meanwhile (SmolLM2: ~5 s on one core); sessions that ask at the same time wait for the one result."""
    with _HEAD_SCORES_LOCK:
        if model_name not in _HEAD_SCORES:
            slot = st.empty()
            shown = lambda done, total: slot.progress(done / total, text=f"Measuring what every head does (once per model): probe {done + 1} of {total}…")  # noqa: E731
            m = get_model(model_name)
            _HEAD_SCORES[model_name] = probe_scores(m.model, m.tokenizer, on_progress=shown)
            slot.empty()
        return _HEAD_SCORES[model_name]


# --- Messages ---


def quote(text: str, n: int = 60) -> str:
    """User text for a markdown message: shortened, invisible characters shown by code, markdown characters escaped."""
    short = text if len(text) <= n else text[: n - 1] + "…"
    shown = "".join(ch if ch == " " or unicodedata.category(ch)[0] not in "CZ" else f"⟨U+{ord(ch):04X}⟩" for ch in short)
    return "«" + re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", shown) + "»"
