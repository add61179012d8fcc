"""Translating with the encoder–decoder: greedy decoding, and the trace of one translation.

Greedy decoding writes the most likely next word at each step, reading everything written so far. A
TranslationTrace holds the steps and every intermediate of one forward pass over what was written (names and
shapes in transformer/families/seq2seq.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .families.seq2seq import NO_SEQ2SEQ_INTERVENTIONS, Seq2Seq, Seq2SeqInterventions, source_mask
from .trace import read_only
from .vocabulary import BOS, EOS, PAD, Vocab


@torch.inference_mode()
def greedy_decode(
    model: Seq2Seq, src: torch.Tensor, max_len: int, iv: Seq2SeqInterventions = NO_SEQ2SEQ_INTERVENTIONS
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy decoding of a padded batch src (B, S): at each step, the most likely next word.

    Returns the written ids (B, n) — [PAD] after a row's [EOS] — and each step's probabilities (B, n, V).
    """
    src_keys = source_mask(src)  # (B, 1, 1, S)
    memory = model.encode(src, src_keys, iv)  # (B, S, d)
    out = torch.full((src.size(0), 1), BOS)  # (B, 1)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    probs = []
    for _ in range(min(max_len, model.cfg.n_ctx)):
        logits = model.decode(out, memory, src_keys, iv=iv)[:, -1]  # (B, V) at the last position
        p = torch.softmax(logits, dim=-1)  # (B, V)
        nxt = torch.where(done, PAD, p.argmax(-1))  # (B,)
        probs.append(p)
        out = torch.cat([out, nxt[:, None]], dim=1)
        done |= nxt == EOS
        if done.all():
            break
    return out[:, 1:], torch.stack(probs, dim=1)


@dataclass(frozen=True)
class DecodeStep:
    """One step of greedy decoding: having read `read`, the model wrote `word`."""

    read: str
    word: str
    top: tuple[tuple[str, float], ...]  # the most likely words and their probabilities


@dataclass(frozen=True)
class TranslationTrace:
    source: tuple[str, ...]  # the source words (S)
    output: tuple[str, ...]  # the French words written, without [EOS]
    finished: bool  # True when the model wrote [EOS]; False when it ran out of room
    steps: tuple[DecodeStep, ...]  # greedy decoding, step by step (each step sees only what was written before it)
    cache: dict[str, np.ndarray]  # one forward pass over [BOS] + output: names and shapes in families/seq2seq.py
    interventions: Seq2SeqInterventions

    @property
    def decoder_input(self) -> tuple[str, ...]:
        """What each decoder position reads (T = len(output) + 1 rows)."""
        return ("[BOS]", *self.output)

    @property
    def written(self) -> tuple[str, ...]:
        """What each decoder position writes: the next word, [EOS] last."""
        return (*self.output, "[EOS]")

    @property
    def n_layer(self) -> int:
        return sum(name.endswith("cross_attn.hook_pattern") for name in self.cache)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cache[name]


def translate(
    model: Seq2Seq, vocab: Vocab, words, iv: Seq2SeqInterventions = NO_SEQ2SEQ_INTERVENTIONS, top_k: int = 5
) -> TranslationTrace:
    """Translate `words` greedily, then record every intermediate of one pass over what was written."""
    src = torch.tensor([vocab.encode(words)])  # (1, S)
    ids, probs = greedy_decode(model, src, model.cfg.n_ctx - 1, iv)
    ids, probs = ids[0].tolist(), probs[0]
    finished = EOS in ids
    out = ids[: ids.index(EOS)] if finished else ids
    read = ["[BOS]", *vocab.decode(out)]
    steps = []
    for i, p in enumerate(probs):
        top = torch.topk(p, top_k)
        best = tuple((vocab.words[j], float(v)) for v, j in zip(top.values, top.indices, strict=True))
        steps.append(DecodeStep(read[i], vocab.words[ids[i]], best))
    rec: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        model(src, torch.tensor([[BOS, *out]]), interventions=iv, rec=rec)
    cache = {name: read_only(t[0]) for name, t in rec.items()}
    return TranslationTrace(tuple(words), tuple(vocab.decode(out)), finished, tuple(steps), cache, iv)
