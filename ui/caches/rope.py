"""RoPE and shared heads: the rotation's angles, a query and key moved along the text, and the key/value heads that
groups of query heads share."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from figures import rope as frope
from figures.multihead import weight_panels
from lessons import gqa, rope
from lessons.heads import visible_keys

from ..models import TraceKey, get_model, get_trace, shared

MAX_SHIFT = 1000  # the shift chart moves q and k up to this many positions


@shared(max_entries=16)
def rope_angle_figures(model_name: str, n_pos: int, n_tokens: int) -> tuple[go.Figure, go.Figure]:
    """The angle table m·ω_i of the first n_pos positions, and each pair's wavelength next to the text's length."""
    cfg = get_model(model_name).cfg
    angles = rope.angle_table(cfg, n_pos)  # (n_pos, d_head/2)
    title = f"Angle of each pair at positions 0…{n_pos - 1} (θ = {cfg.rope_theta:g}, d = {cfg.d_head})"
    waves_title = "How many positions each pair needs for one full turn"
    return frope.angle_heatmap(angles, title), frope.wavelength_chart(rope.wavelengths(cfg), n_tokens, waves_title)


@shared(max_entries=32)
def rope_shifts(key: TraceKey, layer: int, head: int, m: int, n: int) -> rope.Shifts:
    """The model's own pre-RoPE q_m and k_n moved by every shift s from −min(m, n) to MAX_SHIFT."""
    cfg = get_model(key.model).cfg
    qk = rope.query_key(get_trace(key), cfg, layer, head, m, n)
    return rope.shift_scores(qk.q, qk.k, m, n, np.arange(-min(m, n), MAX_SHIFT + 1), cfg)


@shared(max_entries=32)
def gqa_figures(
    key: TraceKey, layer: int, g: int, per_row: tuple[int, int]
) -> tuple[go.Figure, go.Figure, go.Figure, gqa.Group]:
    """K and V of every key/value head of `layer`, and the patterns of key/value head g's query heads; per_row: how many
    query heads' patterns, and how many key/value heads' K (and V), go in a row."""
    tr, cfg = get_trace(key), get_model(key.model).cfg
    labels = tr.encoding.labels
    keys, values = gqa.keys_used(tr, cfg, layer), tr[f"blocks.{layer}.attn.hook_v"]  # (T, n_kv, hs) each
    names = [f"K/V head {k}" for k in range(cfg.n_kv_heads)]
    k_name = "K after RoPE" if rope.has_rope(cfg) else "K"
    k_title, v_title = f"{k_name} of each key/value head, layer {layer}", f"V of each key/value head, layer {layer}"
    k_fig = frope.head_panels(keys.transpose(1, 0, 2), labels, names, k_title, value_name=k_name, per_row=per_row[1])
    v_fig = frope.head_panels(values.transpose(1, 0, 2), labels, names, v_title, value_name="V", per_row=per_row[1])
    grp = gqa.group(tr, cfg, layer, g)
    visible = visible_keys(tr, layer)[grp.heads[0]]  # (T, T) the same mask for every head
    titles = [f"query head {h}" for h in grp.heads]
    title = f"Weights of the query heads that share K/V head {g}, layer {layer}"
    return k_fig, v_fig, weight_panels(grp.patterns, labels, visible, titles, title, per_row=per_row[0]), grp
