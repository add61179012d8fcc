"""What the cross-attention page computes from a translation's trace: one part's attention weights, per head or averaged."""

from __future__ import annotations

import numpy as np

from transformer.families.seq2seq import TranslationTrace


def weights(tr: TranslationTrace, part: str, layer: int | None, head: int | None) -> np.ndarray:
    """Attention weights of a part ("encoder", "decoder" or "cross"), (rows, cols): one head of a layer,
    the mean of the layer's heads (head None), or the mean over every layer too (layer None)."""
    name = {"encoder": "encoder.blocks.{}.attn", "decoder": "decoder.blocks.{}.attn", "cross": "decoder.blocks.{}.cross_attn"}[part]
    layers = range(tr.n_layer) if layer is None else [layer]
    stack = np.stack([tr[name.format(lay) + ".hook_pattern"] for lay in layers])  # (layers, nh, rows, cols)
    return (stack.mean(axis=(0, 1)) if head is None else stack[:, head].mean(axis=0)).astype(np.float32)
