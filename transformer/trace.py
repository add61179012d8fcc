"""One call that runs the model on a text and returns every intermediate, by name.

Names and shapes (T tokens, nh heads, hs = d_head, d = d_model, V = vocab; one text, so no batch axis):

    hook_embed                       (T, d)       token embedding W_E[id]
    hook_pos_embed                   (T, d)       positional encoding (sinusoidal or learned)
    blocks.{l}.hook_resid_pre        (T, d)       block input; for l = 0: embed + pos_embed
    blocks.{l}.ln1.hook_normalized   (T, d)       LayerNorm 1 output (after its gain and bias)
    blocks.{l}.attn.hook_q / _k / _v (T, nh, hs)  Q = X·W_Q + b_Q, K, V per head
    blocks.{l}.attn.hook_scores_raw  (nh, T, T)   Q·Kᵀ
    blocks.{l}.attn.hook_scores_scaled (nh, T, T) Q·Kᵀ / √d_head / τ  (τ = attention temperature)
    blocks.{l}.attn.hook_scores_masked (nh, T, T) scaled, −∞ where masked (TransformerLens: hook_attn_scores)
    blocks.{l}.attn.hook_pattern     (nh, T, T)   softmax weights; rows sum to 1
    blocks.{l}.attn.hook_z           (T, nh, hs)  per-head output weights·V (0 for an ablated head)
    blocks.{l}.attn.hook_concat      (T, nh·hs)   the heads' outputs side by side
    blocks.{l}.attn.hook_result      (T, nh, d)   each head's share of the output, z_h·W_O[h]
    blocks.{l}.hook_attn_out         (T, d)       concat·W_O + b_O
    blocks.{l}.hook_resid_mid        (T, d)       resid_pre + attn_out
    blocks.{l}.ln2.hook_normalized   (T, d)       LayerNorm 2 output
    blocks.{l}.mlp.hook_pre          (T, d_mlp)   x·W_in + b_in
    blocks.{l}.mlp.hook_post         (T, d_mlp)   GELU(pre)
    blocks.{l}.hook_mlp_out          (T, d)       post·W_out + b_out
    blocks.{l}.hook_resid_post       (T, d)       resid_mid + mlp_out
    ln_final.hook_normalized         (T, d)       final LayerNorm
    logits                           (T, V)       ln_final·W_U (W_U = W_Eᵀ when tied)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .model import GPT, NO_INTERVENTIONS, Interventions
from .tokenizer import Encoding, Tokenizer

MAX_CHARS = 20_000  # longer input is cut before tokenizing

BLOCK_NAMES = (
    "hook_resid_pre",
    "ln1.hook_normalized",
    "attn.hook_q",
    "attn.hook_k",
    "attn.hook_v",
    "attn.hook_scores_raw",
    "attn.hook_scores_scaled",
    "attn.hook_scores_masked",
    "attn.hook_pattern",
    "attn.hook_z",
    "attn.hook_concat",
    "attn.hook_result",
    "hook_attn_out",
    "hook_resid_mid",
    "ln2.hook_normalized",
    "mlp.hook_pre",
    "mlp.hook_post",
    "hook_mlp_out",
    "hook_resid_post",
)


def trace_names(n_layer: int) -> list[str]:
    """Every name a trace holds, in the order the forward pass computes them."""
    blocks = [f"blocks.{layer}.{n}" for layer in range(n_layer) for n in BLOCK_NAMES]
    return ["hook_embed", "hook_pos_embed", *blocks, "ln_final.hook_normalized", "logits"]


class TraceInputError(ValueError):
    """The text cannot be traced; the message says why, in words for the user."""


@dataclass(frozen=True)
class Trace:
    encoding: Encoding  # the tokens that were run (after any cut)
    cache: dict[str, np.ndarray]  # name → read-only float32 array, shapes in the module docstring
    interventions: Interventions
    n_tokens_in: int  # tokens in the text as given; > len(encoding) when it was cut
    cut_chars: bool  # the text was longer than MAX_CHARS characters

    @property
    def truncated(self) -> bool:
        return self.cut_chars or self.n_tokens_in > len(self.encoding)

    @property
    def nbytes(self) -> int:
        """Bytes held by the recorded arrays."""
        return sum(arr.nbytes for arr in self.cache.values())

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cache[name]


def encode_for_model(tokenizer: Tokenizer, text: str, n_ctx: int) -> tuple[Encoding, int, bool]:
    """Tokenize, keeping the first n_ctx tokens. Returns (encoding, tokens before the cut, chars were cut)."""
    if not isinstance(text, str) or not text:
        raise TraceInputError("The text is empty: type a sentence.")
    if not text.strip():
        raise TraceInputError("The text holds only whitespace: type some words.")
    cut_chars = len(text) > MAX_CHARS
    text = text[:MAX_CHARS]
    enc = tokenizer.encode(text)
    n_in = len(enc)
    if n_in > n_ctx:
        end = enc.offsets[n_ctx - 1][1]
        enc = Encoding(text[:end], enc.ids[:n_ctx], enc.tokens[:n_ctx], enc.offsets[:n_ctx], enc.labels[:n_ctx])
    return enc, n_in, cut_chars


def pad_right(encodings: Sequence[Encoding], pad: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, real), both (B, T): the encodings right-padded with the id `pad` to the longest; real is False on the padding."""
    T = max(len(e) for e in encodings)
    ids = np.full((len(encodings), T), pad, dtype=np.int64)  # (B, T)
    real = np.zeros((len(encodings), T), dtype=bool)  # (B, T)
    for b, e in enumerate(encodings):
        ids[b, : len(e)] = e.ids
        real[b, : len(e)] = True
    return ids, real


PAIRWISE = ("attn.hook_scores_raw", "attn.hook_scores_scaled", "attn.hook_scores_masked", "attn.hook_pattern")  # (nh, T, T)


def run_trace(model: GPT, tokenizer: Tokenizer, text: str, interventions: Interventions = NO_INTERVENTIONS) -> Trace:
    """Run `model` on `text` and record every intermediate. Text longer than the context is cut to its first n_ctx tokens."""
    return run_traces(model, tokenizer, [text], interventions)[0]


def run_traces(model: GPT, tokenizer: Tokenizer, texts: Sequence[str], interventions: Interventions = NO_INTERVENTIONS) -> list[Trace]:
    """run_trace for several texts in one batched pass: right-padded to the longest, the padding keys masked.

    A real token never sees a padding key, so each trace holds the numbers run_trace gives (up to float rounding);
    four short texts cost about 1.6 times one, not 4 times.
    """
    if not texts:
        return []
    encoded = [encode_for_model(tokenizer, text, model.cfg.n_ctx) for text in texts]
    ids, real = pad_right([enc for enc, _, _ in encoded], pad=0)  # (B, T) each; the padding's id is never seen
    rec: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        model(torch.from_numpy(ids), attention_mask=torch.from_numpy(real), interventions=interventions, rec=rec)
    traces = []
    for b, (enc, n_in, cut_chars) in enumerate(encoded):
        T = len(enc)
        cache = {}
        for name, t in rec.items():
            arr = (t[b, :, :T, :T] if name.endswith(PAIRWISE) else t[b, :T]).float().numpy()  # drop the padding
            arr.flags.writeable = False
            cache[name] = arr
        traces.append(Trace(enc, cache, interventions, n_in, cut_chars))
    return traces
