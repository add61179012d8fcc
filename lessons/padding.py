"""Several texts as one right-padded batch: what the padding mask protects.

The check: run each text alone and in the batch, and compare the model's final output on the real tokens (a decoder's
logits; an encoder without a language-model head: its last block's output). With the padding mask they agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from transformer import (
    END_OF_TEXT,
    NO_INTERVENTIONS,
    Encoding,
    Interventions,
    Model,
    ModelConfig,
    Tokenizer,
    encode_for_model,
    forward_padded,
    pad_right,
)
from transformer.trace import read_only, token_limit

from .words import noun


@dataclass(frozen=True)
class PaddedBatch:
    """Texts padded on the right to one length and run as one batch."""

    encodings: tuple[Encoding, ...]  # each text's own tokens (cut to the context)
    ids: np.ndarray  # (B, T) token ids, padding = pad_id
    attention_mask: np.ndarray  # (B, T) bool, True = real token
    pad_id: int
    cache: dict[str, np.ndarray]  # name → read-only float32 array WITH the batch axis, e.g. logits (B, T, V)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cache[name]


def pad_id(tokenizer: Tokenizer) -> int:
    """The id used for padding: the end-of-text token when the vocabulary has one, else 0."""
    i = tokenizer.hf.token_to_id(END_OF_TEXT)
    return 0 if i is None else int(i)


def padded_forward(
    model: Model,
    tokenizer: Tokenizer,
    texts: Sequence[str],
    interventions: Interventions = NO_INTERVENTIONS,
    use_padding_mask: bool = True,
    keep: Sequence[str] | None = None,
) -> PaddedBatch:
    """Run several texts as one batch, right-padded to the longest; the padding mask hides the pad keys.

    keep: the recorded names to return (None = all). Raises TraceInputError for an empty or whitespace-only text.
    """
    encs, pid = tuple(encode_for_model(tokenizer, t, token_limit(model.cfg))[0] for t in texts), pad_id(tokenizer)
    ids, real = pad_right(encs, pid)  # (B, T) each
    rec = forward_padded(
        model, encs, pid, interventions, use_padding_mask, None if keep is None else (lambda name: name in keep)
    )
    return PaddedBatch(encs, ids, real, pid, {name: read_only(t) for name, t in rec.items()})


MASK_NAME = "blocks.0.attn.hook_scores_masked"  # the mask is the same in every layer and head: layer 0's scores show it


def final_output(cfg: ModelConfig) -> str:
    """The trace name of the model's final output: the logits of a decoder, else the last block's output
    (BERT: after its last LayerNorm)."""
    return "logits" if cfg.has_lm_head else f"blocks.{cfg.n_layer - 1}.ln2.hook_normalized"


@dataclass(frozen=True)
class PaddingCheck:
    """A padded batch's mask, and how far each text's output in the batch is from its output alone."""

    encodings: tuple[Encoding, ...]
    real: np.ndarray  # (B, T) bool, True = real token
    visible: np.ndarray  # (B, T, T) bool: may query i look at key j, as the model did (every layer and head alike)
    output: str  # the compared output's name
    differences: np.ndarray  # (B,) largest |batch − alone| over each text's real tokens

    @property
    def lengths(self) -> list[int]:
        return [len(e) for e in self.encodings]

    def padded_labels(self, b: int) -> list[str]:
        """Text b's token labels, then "[pad]" for each padding position."""
        return [*self.encodings[b].labels, *["[pad]"] * (self.real.shape[1] - len(self.encodings[b]))]

    @property
    def output_words(self) -> str:
        """What was compared, in words."""
        return (
            "logits (the model's output for every real token)"
            if self.output == "logits"
            else "last block's outputs (an encoder without a next-token head: its final output)"
        )


def check(batch: PaddedBatch, output: str, alone: Sequence[np.ndarray]) -> PaddingCheck:
    """Compare `output` of each text in the batch with the same text run alone, (T_b, …) each, over its real tokens."""
    diffs = np.array(
        [
            np.abs(batch[output][b, : len(e)] - a).max()
            for b, (e, a) in enumerate(zip(batch.encodings, alone, strict=True))
        ]
    )  # (B,)
    visible = ~np.isneginf(batch[MASK_NAME][:, 0])  # (B, T, T) head 0 of layer 0
    return PaddingCheck(batch.encodings, batch.attention_mask, visible, output, diffs)


def verdict(use_padding_mask: bool, causal: bool) -> tuple[str, str]:
    """What the check shows, in words: (kind "success", "info" or "warning", message)."""
    if use_padding_mask:
        return (
            "success",
            (
                "With the padding mask, the real tokens never see the padding: "
                "their outputs equal those of the sentence alone (up to float rounding)."
            ),
        )
    if not causal:
        return (
            "warning",
            (
                "Without the padding mask an encoder lets real tokens read the padding: "
                "the padded sentence's outputs change."
            ),
        )
    return "info", (
        "With right padding and the causal mask, the padding comes after every real token, so the causal mask "
        "already hides it from them: the differences stay 0. Switch on encoder-style to see the padding mask matter."
    )


def mask_latex(decoder: bool) -> str:
    """The padding mask's formula, and how it adds to a decoder's causal mask (an encoder has the padding mask only)."""
    both = r"M = M^{\mathrm{causal}} + M^{\mathrm{pad}}" if decoder else r"M = M^{\mathrm{pad}}"
    return (
        r"M^{\mathrm{pad}}_{ij} = \begin{cases} 0 & \text{token } j \text{ is real} "
        r"\\ -\infty & \text{token } j \text{ is padding} \end{cases},\qquad "
    ) + both


def shorter_note(chk: PaddingCheck, b: int) -> str:
    """Text b of the batch (A = 0, B = 1), its padding, and the check that follows, in words."""
    length, T = chk.lengths[b], chk.real.shape[1]
    return (
        f"Sentence {'AB'[b]} has {length} {noun(length, 'token')} and {T - length} padding "
        f"{noun(T - length, 'position')}. Each real token's output should not depend on the padding. Check: "
        f"run each sentence alone, then compare its {chk.output_words} with those from the padded batch."
    )
