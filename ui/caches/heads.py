"""Multi-head attention's figures, and what each head does (the head-score badges of One head and Multi-head)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from figures import multihead as fm
from lessons import head_roles, heads
from lessons.words import noun
from transformer.head_scores import HeadScores, probe_scores

from ..models import CLASS_SENTENCES, TraceKey, get_model, get_trace, shared

THUMB = 32  # overview thumbnails are at most THUMB × THUMB cells


@shared(max_entries=32)
def heads_figure(key: TraceKey, layer: int, hide: tuple[int, ...], per_row: int) -> tuple[go.Figure, float]:
    """Every head of `layer` side by side (at most per_row in a row) on one colour scale, and the top of that scale."""
    tr = get_trace(key)
    w, mask = tr[f"blocks.{layer}.attn.hook_pattern"], heads.key_mask(tr)  # (nh, T, T), (T, T)
    zmax = heads.shown_max(w, mask, hide)
    titles = [f"head {h}" for h in range(len(w))]
    title = f"The heads of layer {layer}, one colour scale 0 … {zmax:.3f}"
    return fm.weight_panels(w, tr.encoding.labels, mask, titles, title, zmax=zmax, hide=hide, per_row=per_row), zmax


@shared(max_entries=32)
def averages_figure(key: TraceKey, layer: int, hide: tuple[int, ...], per_row: int) -> go.Figure:
    """The mean pattern of `layer`'s heads and of every head of the model (side by side when per_row ≥ 2)."""
    tr = get_trace(key)
    n_layer, nh = tr.cfg.n_layer, tr.cfg.n_head
    means = np.stack([heads.mean_pattern(tr, layer), heads.mean_pattern(tr, None)])  # (2, T, T)
    mask = heads.key_mask(tr)[None]  # (1, T, T)
    # short: side by side in presenter view's larger type at 1024 px, longer titles ran into each other
    titles = [f"AVERAGE of layer {layer}'s {nh} heads", f"AVERAGE of all {n_layer * nh} heads"]
    top = heads.shown_max(means, mask, hide)
    title = f"Averages (not heads), one colour scale 0 … {top:.3f}"
    return fm.weight_panels(
        means, tr.encoding.labels, mask, titles, title, zmax=top, hide=hide, value_name="mean weight", per_row=per_row
    )


@shared(max_entries=32)
def overview_figure(
    key: TraceKey, opened: tuple[int, int], hide: tuple[int, ...], short: bool, layers_across: bool = False
) -> tuple[go.Figure, int, int]:
    """Every head's pattern as a small map (b × b blocks averaged), the opened head outlined, with the model's badges
    (head_badges: short or not), a row per layer or a column (figures.multihead.head_overview); b and the thumbnail
    size. The model's head scores must be measured first (head_scores, with its progress bar)."""
    tr = get_trace(key)
    thumbs, block, zmax = heads.overview(tr, hide, THUMB)  # thumbs (n_layer, nh, n, n)
    title = f"All {tr.cfg.n_layer * tr.cfg.n_head} heads"
    badges = head_badges(key.model, short)
    fig = fm.head_overview(thumbs, opened, title, zmax=zmax, badges=badges, layers_across=layers_across)
    return fig, block, thumbs.shape[-1]


@shared(max_entries=32)
def opened_figures(
    key: TraceKey, opened: tuple[int, int], hide: tuple[int, ...], sink_name: str, threshold: float, token: int
) -> tuple[go.Figure, go.Figure, int]:
    """One head large, and its lines from query to key (weights ≥ threshold; of one token, unless token < 0); the line
    count."""
    tr, (layer, head) = get_trace(key), opened
    w, mask = tr[f"blocks.{layer}.attn.hook_pattern"][head], heads.key_mask(tr)  # (T, T) each
    labels = tr.encoding.labels
    top = heads.shown_max(w, mask, hide)
    title = f"Opened: layer {layer}, head {head}"
    big = fm.weights_map(w, labels, mask, title, zmax=top, hide=hide, sink_name=sink_name, height=520)
    shown = mask.copy()
    shown[:, list(hide)] = False
    i, j, lw = heads.line_pairs(w, shown, threshold, None if token < 0 else token)
    return big, fm.token_lines([(f"head {head}", i, j, lw)], labels, f"Lines, layer {layer}, head {head}"), len(lw)


@shared(max_entries=32)
def layer_lines_figure(key: TraceKey, layer: int, hide: tuple[int, ...], threshold: float, token: int) -> go.Figure:
    """Every head of `layer` as lines from query to key, a colour per head (weights ≥ threshold; of one token, unless
    token < 0)."""
    tr = get_trace(key)
    w, shown = tr[f"blocks.{layer}.attn.hook_pattern"], heads.key_mask(tr).copy()  # (nh, T, T), (T, T)
    shown[:, list(hide)] = False
    one = None if token < 0 else token
    pairs = [(f"head {h}", *heads.line_pairs(w[h], shown, threshold, one)) for h in range(len(w))]
    return fm.token_lines(pairs, tr.encoding.labels, f"Every head of layer {layer} as lines")


@shared(max_entries=32)
def concat_figures(key: TraceKey, layer: int, t: int) -> tuple[go.Figure, go.Figure, go.Figure, float]:
    """Token t's heads side by side (concat), W_O, each head's share of the output with their sum; and the
    recomputation error."""
    tr, model = get_trace(key), get_model(key.model).model
    nh, hs, d = tr.cfg.n_head, tr.cfg.d_head, tr.cfg.d_model
    names = [f"head {h}" for h in range(nh)]
    concat = tr[f"blocks.{layer}.attn.hook_concat"][t]  # (nh·hs,)
    concat_title = f"z of each head for token {t}, ({nh} × {hs}), side by side = concat, (1, {nh * hs})"
    z_names = [f"z, {n}" for n in names]
    concat_fig = fm.vector_rows(
        concat[None], concat_title, row_blocks=[f"token {t}"], col_blocks=z_names, value_name="concat", height=170
    )
    W_O, b_O = heads.out_projection(model, layer)  # (nh·hs, d), (d,) or None
    wo_title, wo_rows = f"W_O of layer {layer}, ({nh * hs}, {d})", [f"rows of {n}" for n in names]
    wo_fig = fm.vector_rows(W_O, wo_title, row_blocks=wo_rows, x_title="output dimension", value_name="W_O", height=460)
    sh = heads.output_shares(tr, model, layer, t)
    title = f"Attention output of token {t} = concat·W_O{'' if b_O is None else ' + b_O'}, (1, {d})"
    out_fig = fm.vector_rows(sh.rows, title, row_blocks=sh.names, x_title="output dimension", height=460)
    return concat_fig, wo_fig, out_fig, sh.error


@shared(max_entries=CLASS_SENTENCES)
def ablation(key: TraceKey, ablate: tuple[tuple[int, int], ...], k: int) -> tuple[go.Figure, dict | None, heads.Effect]:
    """What switching the heads `ablate` off changes: a decoder's next-token probabilities (figure, table of the top k
    before and after, the share of probability moved and the top token before and after); an encoder's final vectors
    (figure, no table, mean 1 − cos over the tokens)."""
    before, after = get_trace(key), get_trace(key.but(ablate=ablate))
    off = f"{len(ablate)} {noun(len(ablate), 'head')} switched off"
    if before.cfg.has_lm_head:
        change = heads.next_token_change(before["logits"][-1], after["logits"][-1], max(k, 1))
        vocab = get_model(key.model).tokenizer.vocab_labels()
        table = heads.change_table(change, vocab)
        fig = fm.ablation_bars(table["next token"], change.before, change.after, f"Next-token probabilities, {off}")
        return fig, table, heads.change_effect(change, vocab)
    oc = heads.output_change(before, after)
    fig = fm.output_change_bars(oc.cosine, oc.relative, before.encoding.labels, f"Every token's final vector, {off}")
    return fig, None, heads.Effect(float(oc.turned))


# --- What each head does: its scores on a probe of repeated random tokens ---

# model name → scores; a plain dict, not st.cache_resource: its progress bar must not be replayed
_HEAD_SCORES: dict[str, HeadScores] = {}
_HEAD_SCORES_LOCK = threading.Lock()


def head_scores(model_name: str) -> HeadScores:
    """Every head's scores (transformer.head_scores.probe_scores), measured once per model and server process, with a
    progress bar meanwhile (SmolLM2: ~5 s on one core); sessions that ask at the same time wait for the one result."""
    with _HEAD_SCORES_LOCK:
        if model_name not in _HEAD_SCORES:
            slot = st.empty()
            text = "Measuring what every head does (once per model): probe {} of {}…"
            shown = lambda done, total: slot.progress(done / total, text=text.format(done + 1, total))  # noqa: E731
            m = get_model(model_name)
            _HEAD_SCORES[model_name] = probe_scores(m.model, m.tokenizer, on_progress=shown)
            slot.empty()
        return _HEAD_SCORES[model_name]


_BADGES: dict[tuple[str, bool], Mapping[tuple[int, int], str]] = {}


def head_badges(model_name: str, short: bool) -> Mapping[tuple[int, int], str]:
    """head_roles.badges of the model's head scores (head_scores), made once per model and server process for each
    size; read-only. (Built on every run, and hashed as an argument of a cached figure, SmolLM2's 270 badges would
    cost ~12 % of a run of Multi-head's part 3.)"""
    found = _BADGES.get((model_name, short))
    if found is None:
        found = _BADGES[model_name, short] = MappingProxyType(head_roles.badges(head_scores(model_name), short))
    return found
