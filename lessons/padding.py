"""Several texts as one right-padded batch: what the padding mask protects."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from transformer import END_OF_TEXT, GPT, NO_INTERVENTIONS, Encoding, Interventions, Tokenizer, encode_for_model, forward_padded, pad_right
from transformer.trace import read_only, token_limit


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
    model: GPT, tokenizer: Tokenizer, texts: Sequence[str], interventions: Interventions = NO_INTERVENTIONS, use_padding_mask: bool = True, keep: Sequence[str] | None = None
) -> PaddedBatch:
    """Run several texts as one batch, right-padded to the longest; the padding mask hides the pad keys.

    keep: the recorded names to return (None = all). Raises TraceInputError for an empty or whitespace-only text.
    """
    encs, pid = tuple(encode_for_model(tokenizer, t, token_limit(model.cfg))[0] for t in texts), pad_id(tokenizer)
    ids, real = pad_right(encs, pid)  # (B, T) each
    rec = forward_padded(model, encs, pid, interventions, use_padding_mask, None if keep is None else (lambda name: name in keep))
    return PaddedBatch(encs, ids, real, pid, {name: read_only(t) for name, t in rec.items()})
