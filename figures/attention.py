"""Attention figures built from a trace."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer import Trace

from .common import heatmap


def pattern_weights(tr: Trace, layer: int, head: int) -> np.ndarray:
    """The attention weights of one head, (T, T): rows are queries, columns keys."""
    return tr[f"blocks.{layer}.attn.hook_pattern"][head]


def pattern_heatmap(tr: Trace, layer: int, head: int, title: str = "") -> go.Figure:
    """One head's weights; masked (future) cells are drawn blank and say −∞ in their score."""
    masked = np.isneginf(tr[f"blocks.{layer}.attn.hook_scores_masked"][head])
    labels = tr.encoding.labels
    return heatmap(pattern_weights(tr, layer, head), labels, labels, title=title or f"Attention weights, layer {layer}, head {head}", x_title="key (looked at)", y_title="query (looking)", zmin=0, zmax=1, value_name="weight", show_values=len(labels) <= 12, masked=masked)
