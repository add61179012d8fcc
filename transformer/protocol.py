"""What the engine's traces and the lessons read of a model: the contract every traced family meets.

GPT and Llama (families/gpt.py) and BERT (families/bert.py) are different classes; trace.py and lessons/ reach
them through these names only. A trace embeds the tokens, runs blocks[l] one at a time on what attention_context
gives every block (the mask, and RoPE's cos and sin), then final_norm; a batch runs as one whole forward pass. A
decoder (GPT, Llama) also has W_U, the unembedding its logits, generation and the logit lens read; an encoder
(BERT) has none. The translator (families/seq2seq.py) is read through its own trace and meets neither.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
import torch.nn as nn

from .attention import NO_INTERVENTIONS, Interventions, Record
from .config import ModelConfig

Rope = tuple[torch.Tensor, torch.Tensor] | None  # cos and sin of the RoPE angles, (T, d_head) each (layers.rotation)


@runtime_checkable
class Model(Protocol):
    """A model a trace runs: GPT, Llama or BERT."""

    cfg: ModelConfig
    blocks: nn.ModuleList  # blocks[l](x, mask, interventions, rec, rope, past=None): layers.Block, (B, T, d) → same

    def embed(self, idx: torch.Tensor, rec: Record = None, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T) token ids (and an encoder's sentence A/B types) → block 0's input (B, T, d_model)."""
        ...

    def attention_context(
        self, T: int, interventions: Interventions, attention_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, Rope]:
        """What every block's attention reads besides its input: the visible mask (1 or B, 1, T, T) and the RoPE
        rotation (None without rotary positions)."""
        ...

    def final_norm(self, x: torch.Tensor, rec: Record = None) -> torch.Tensor:
        """The last block's output (B, T, d) → what the model hands on: LN(x) for a decoder, x for BERT."""
        ...

    def __call__(
        self,
        idx: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        interventions: Interventions = NO_INTERVENTIONS,
        rec: Record = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor | None:
        """One whole forward pass (nn.Module's forward): logits (B, T, V) of a decoder, the last block's output
        (B, T, d) of an encoder; None when `rec` is a record that drops the logits."""
        ...


@runtime_checkable
class Decoder(Model, Protocol):
    """A model with next-token logits = final_norm(x)·W_U: GPT, Llama."""

    @property
    def W_U(self) -> torch.Tensor:
        """The unembedding (d_model, vocab)."""
        ...
