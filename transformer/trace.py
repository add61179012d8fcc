"""One call that runs a model on a text and returns every intermediate, by name.

Names and shapes (T tokens, nh query heads, n_kv key/value heads (= nh except in grouped-query attention),
hs = d_head, d = d_model, V = vocab; one text, so no batch axis). Families record what they compute:

    hook_embed                         (T, d)          token embedding W_E[id]
    hook_pos_embed                     (T, d)          position vector (sinusoidal or learned; none with RoPE)
    hook_token_type_embed              (T, d)          BERT: sentence A or B
    ln_embed.hook_normalized           (T, d)          BERT: LN(embed + pos + type), the input to block 0
    blocks.{l}.hook_resid_pre          (T, d)          block input; GPT block 0: embed + pos_embed
    blocks.{l}.ln1.hook_normalized     (T, d)          pre-norm: the attention's input; BERT: LN(resid_mid)
    blocks.{l}.attn.hook_q             (T, nh, hs)     Q = X·W_Q (+ b_Q)
    blocks.{l}.attn.hook_k / hook_v    (T, n_kv, hs)   K, V; query head h reads key/value head cfg.kv_head(h)
    blocks.{l}.attn.hook_rot_q         (T, nh, hs)     Llama: Q after RoPE
    blocks.{l}.attn.hook_rot_k         (T, n_kv, hs)   Llama: K after RoPE
    blocks.{l}.attn.hook_scores_raw    (nh, T, T)      Q·Kᵀ
    blocks.{l}.attn.hook_scores_scaled (nh, T, T)      Q·Kᵀ / √d_head / τ  (τ = attention temperature)
    blocks.{l}.attn.hook_scores_masked (nh, T, T)      scaled, −∞ where masked (TransformerLens: hook_attn_scores)
    blocks.{l}.attn.hook_pattern       (nh, T, T)      softmax weights; rows sum to 1
    blocks.{l}.attn.hook_z             (T, nh, hs)     per-head output weights·V (0 for an ablated head)
    blocks.{l}.attn.hook_concat        (T, nh·hs)      the heads' outputs side by side
    blocks.{l}.attn.hook_result        (T, nh, d)      each head's share of the output, z_h·W_O[h]
    blocks.{l}.hook_attn_out           (T, d)          concat·W_O (+ b_O)
    blocks.{l}.hook_resid_mid          (T, d)          resid_pre + attn_out
    blocks.{l}.ln2.hook_normalized     (T, d)          pre-norm: the MLP's input; BERT: the block's output
    blocks.{l}.mlp.hook_pre            (T, d_mlp)      x·W_in + b_in; Llama: the gate x·W_gate
    blocks.{l}.mlp.hook_pre_linear     (T, d_mlp)      Llama: the linear branch x·W_in
    blocks.{l}.mlp.hook_post           (T, d_mlp)      GELU(pre); Llama: SiLU(pre) ⊙ pre_linear
    blocks.{l}.hook_mlp_out            (T, d)          post·W_out (+ b_out)
    blocks.{l}.hook_resid_post         (T, d)          pre-norm: resid_mid + mlp_out; BERT: ln1 output + mlp_out
    ln_final.hook_normalized           (T, d)          decoders: the final norm
    logits                             (T, V)          decoders: ln_final·W_U (W_U = W_Eᵀ when tied)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .attention import NO_INTERVENTIONS, Interventions
from .config import ModelConfig
from .errors import TraceInputError
from .families.gpt import GPT
from .tokenizer import Encoding, Tokenizer

MAX_CHARS = 20_000  # longer input is cut before tokenizing
MAX_TOKENS = 256  # a trace reads at most this many tokens, whatever the model's context: 30 layers of T×T patterns grow fast


def token_limit(cfg: ModelConfig) -> int:
    """How many tokens a trace of this model reads: its context, at most MAX_TOKENS."""
    return min(cfg.n_ctx, MAX_TOKENS)

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


def block_names(cfg: ModelConfig) -> tuple[str, ...]:
    """The names one block of this family records (without the "blocks.{l}." prefix)."""
    rotary = ("attn.hook_rot_q", "attn.hook_rot_k") if cfg.pos_encoding == "rotary" else ()
    if cfg.attn_only:  # no LN2, no MLP
        return (*(n for n in BLOCK_NAMES if not n.startswith(("ln2.", "mlp.", "hook_mlp"))), *rotary)
    gated = ("mlp.hook_pre_linear",) if cfg.activation == "silu" else ()
    return (*BLOCK_NAMES, *rotary, *gated)


def trace_names(cfg: ModelConfig) -> list[str]:
    """Every name a trace of this model holds."""
    blocks = [f"blocks.{layer}.{n}" for layer in range(cfg.n_layer) for n in block_names(cfg)]
    if cfg.family == "bert":
        return ["hook_embed", "hook_pos_embed", "hook_token_type_embed", "ln_embed.hook_normalized", *blocks]
    positions = [] if cfg.pos_encoding == "rotary" else ["hook_pos_embed"]
    return ["hook_embed", *positions, *blocks, "ln_final.hook_normalized", "logits"]


# What a trace keeps of every layer: the residual stream, what each sublayer adds, and the attention pattern.
# The rest of a layer (Q, K, V, scores, norms, MLP neurons…) is recomputed from its hook_resid_pre when a page
# reads it, for at most OPEN_LAYERS layers at a time: a 30-layer model's full trace at 64 tokens is ~135 MiB,
# what it keeps ~39 MiB. The logits (T × vocabulary: 12 MiB for SmolLM2 at 64 tokens, and a fifth of its forward
# pass) are computed from ln_final.hook_normalized when a page first reads them.
KEPT = ("hook_resid_pre", "hook_resid_mid", "hook_resid_post", "hook_attn_out", "hook_mlp_out", "attn.hook_pattern")
OPEN_LAYERS = 2


def layer_of(name: str) -> int | None:
    """The layer of a "blocks.{l}.…" name, else None."""
    head, _, rest = name.partition(".")
    number = rest.partition(".")[0]
    return int(number) if head == "blocks" and number.isdigit() else None


def is_kept(name: str) -> bool:
    return (layer_of(name) is None and name != "logits") or name.endswith(KEPT)


class Recorder(dict):
    """A record that keeps only the names `keep` accepts (the others are dropped as they are written)."""

    def __init__(self, keep: Callable[[str], bool]):
        super().__init__()
        self.keep = keep

    def __setitem__(self, name: str, value: torch.Tensor) -> None:
        if self.keep(name):
            super().__setitem__(name, value)


def read_only(t: torch.Tensor) -> np.ndarray:
    arr = t.float().numpy()
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True)
class Trace:
    """Every intermediate of one text's forward pass, by name (shapes in the module docstring).

    Arrays are read-only float32. A layer's full internals are recomputed on first read, from the layer's own
    recorded input, by the same block with the same interventions: the same numbers the forward pass had.
    """

    encoding: Encoding  # the tokens that were run (after any cut)
    cache: dict[str, np.ndarray]  # the arrays always kept (KEPT of every layer, and everything outside the blocks)
    interventions: Interventions
    n_tokens_in: int  # tokens in the text as given; > len(encoding) when it was cut
    cut_chars: bool  # the text was longer than MAX_CHARS characters
    cfg: ModelConfig | None = None  # the traced model's configuration (which family: which names, which parts)
    names: tuple[str, ...] = ()  # every name the trace answers
    open_layer: Callable[[int], dict[str, np.ndarray]] | None = field(default=None, repr=False, compare=False)
    layer_nbytes: int = 0  # bytes of one layer's full internals
    unembed: Callable[[np.ndarray], np.ndarray] | None = field(default=None, repr=False, compare=False)  # LN(x) (T, d) → logits (T, vocab)
    _open: OrderedDict = field(default_factory=OrderedDict, repr=False, compare=False)  # layer → its arrays, most recent last
    _logits: list = field(default_factory=list, repr=False, compare=False)  # the logits, once read
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def truncated(self) -> bool:
        return self.cut_chars or self.n_tokens_in > len(self.encoding)

    @property
    def nbytes(self) -> int:
        """Bytes the trace may hold: the kept arrays, OPEN_LAYERS layers' full internals and the logits once read."""
        logits = len(self.encoding) * self.cfg.vocab_size * 4 if self.unembed is not None else 0
        return sum(arr.nbytes for arr in self.cache.values()) + OPEN_LAYERS * self.layer_nbytes + logits

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def __getitem__(self, name: str) -> np.ndarray:
        arr = self.cache.get(name)
        if arr is not None:
            return arr
        if name == "logits" and self.unembed is not None:
            with self._lock:
                if not self._logits:
                    self._logits.append(self.unembed(self.cache["ln_final.hook_normalized"]))  # (T, vocab)
                return self._logits[0]
        layer = layer_of(name)
        if layer is None or self.open_layer is None or name not in self.names:
            raise KeyError(name)
        with self._lock:
            if layer in self._open:
                self._open.move_to_end(layer)
            else:
                self._open[layer] = self.open_layer(layer)
                while len(self._open) > OPEN_LAYERS:
                    self._open.popitem(last=False)
            return self._open[layer][name]

    def attention_input(self, layer: int) -> np.ndarray:
        """(T, d) what the layer's attention reads: the normalized stream (pre-norm), or the stream itself (BERT)."""
        return self[f"blocks.{layer}.hook_resid_pre" if self.cfg.post_norm else f"blocks.{layer}.ln1.hook_normalized"]

    def head_qkv(self, layer: int, head: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, k, v), each (T, hs), of query head `head`: the query and key whose dot products are the raw scores
        (after RoPE for a rotary model) and the value, from the key/value head this query head reads."""
        a, g = f"blocks.{layer}.attn.", self.cfg.kv_head(head)
        rot = "rot_" if self.cfg.pos_encoding == "rotary" else ""
        return self[f"{a}hook_{rot}q"][:, head], self[f"{a}hook_{rot}k"][:, g], self[f"{a}hook_v"][:, g]

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array, by name (opens every layer in turn: for saving a whole trace)."""
        return {name: self[name] for name in self.names}


def encode_for_model(tokenizer: Tokenizer, text: str, n_ctx: int, pair: str | None = None) -> tuple[Encoding, int, bool]:
    """Tokenize (a sentence pair for an encoder when `pair` is given), keeping the first n_ctx tokens.
    Returns (encoding, tokens before the cut, chars were cut)."""
    for t in (text, *([] if pair is None else [pair])):
        if not isinstance(t, str) or not t:
            raise TraceInputError("The text is empty: type a sentence.")
        if not t.strip():
            raise TraceInputError("The text holds only whitespace: type some words.")
    cut_chars = len(text) > MAX_CHARS or (pair is not None and len(pair) > MAX_CHARS)
    enc = tokenizer.encode(text[:MAX_CHARS], None if pair is None else pair[:MAX_CHARS])
    n_in = len(enc)
    return (enc.cut(n_ctx) if n_in > n_ctx else enc), n_in, cut_chars


def pad_right(encodings: Sequence[Encoding], pad: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, real), both (B, T): the encodings right-padded with the id `pad` to the longest; real is False on the padding."""
    T = max(len(e) for e in encodings)
    ids = np.full((len(encodings), T), pad, dtype=np.int64)  # (B, T)
    real = np.zeros((len(encodings), T), dtype=bool)  # (B, T)
    for b, e in enumerate(encodings):
        ids[b, : len(e)] = e.ids
        real[b, : len(e)] = True
    return ids, real


def forward_padded(
    model: GPT, encodings: Sequence[Encoding], pad: int, interventions: Interventions = NO_INTERVENTIONS, mask_padding: bool = True, keep: Callable[[str], bool] | None = None
) -> dict[str, torch.Tensor]:
    """One batched forward pass over the encodings, right-padded with the id `pad`; the intermediates `keep` accepts
    (default: all) recorded with their batch axis. mask_padding=False lets real tokens see the padding keys."""
    ids, real = pad_right(encodings, pad)  # (B, T) each
    types = np.zeros_like(ids)  # (B, T) sentence A, B for an encoder's pairs
    for b, e in enumerate(encodings):
        types[b, : len(e.type_ids)] = e.type_ids
    rec: dict[str, torch.Tensor] = {} if keep is None else Recorder(keep)
    with torch.inference_mode():
        mask = torch.from_numpy(real) if mask_padding else None
        model(torch.from_numpy(ids), attention_mask=mask, interventions=interventions, rec=rec, token_type_ids=torch.from_numpy(types))
    return rec


PAIRWISE = ("attn.hook_scores_raw", "attn.hook_scores_scaled", "attn.hook_scores_masked", "attn.hook_pattern")  # (nh, T, T)


def run_trace(model: GPT, tokenizer: Tokenizer, text: str, interventions: Interventions = NO_INTERVENTIONS, pair: str | None = None) -> Trace:
    """Run `model` on `text` (and a second sentence `pair`, for an encoder) and record every intermediate.
    Text longer than the context is cut to its first n_ctx tokens."""
    return run_traces(model, tokenizer, [text], interventions, [pair])[0]


def run_traces(model: GPT, tokenizer: Tokenizer, texts: Sequence[str], interventions: Interventions = NO_INTERVENTIONS, pairs: Sequence[str | None] | None = None) -> list[Trace]:
    """run_trace for several texts in one batched pass: right-padded to the longest, the padding keys masked.

    A real token never sees a padding key, so each trace holds the numbers run_trace gives (up to float rounding);
    four short texts cost about 1.6 times one, not 4 times.
    """
    if not texts:
        return []
    pairs = [None] * len(texts) if pairs is None else pairs
    encoded = [encode_for_model(tokenizer, text, token_limit(model.cfg), pair) for text, pair in zip(texts, pairs, strict=True)]
    # keep what every trace keeps, and all of layer 0 (most pages open it first; it also gives a layer's size)
    rec = forward_padded(model, [enc for enc, _, _ in encoded], pad=0, interventions=interventions, keep=lambda n: is_kept(n) or layer_of(n) == 0)
    names = tuple(trace_names(model.cfg))
    traces = []
    for b, (enc, n_in, cut_chars) in enumerate(encoded):
        T = len(enc)
        arrays = {name: read_only(t[b, :, :T, :T] if name.endswith(PAIRWISE) else t[b, :T]) for name, t in rec.items()}  # drop the padding
        layer0 = {name: arr for name, arr in arrays.items() if not is_kept(name)}
        kept = {name: arr for name, arr in arrays.items() if is_kept(name)}
        opener = layer_opener(model, kept, T, interventions)
        layer_nbytes = sum(a.nbytes for a in layer0.values())
        unembed = unembedder(model) if "logits" in names else None
        traces.append(Trace(enc, kept, interventions, n_in, cut_chars, model.cfg, names, opener, layer_nbytes, unembed, OrderedDict({0: layer0})))
    return traces


def unembedder(model: GPT) -> Callable[[np.ndarray], np.ndarray]:
    """logits = LN(x)·W_U, as the model's forward computes them, for a trace's final normalized stream (T, d)."""

    def unembed(final: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return read_only(torch.from_numpy(np.array(final)) @ model.W_U)  # (T, vocab)

    return unembed


def layer_opener(model: GPT, kept: dict[str, np.ndarray], T: int, interventions: Interventions) -> Callable[[int], dict[str, np.ndarray]]:
    """A function that runs one block again on its recorded input and returns all that block records."""

    def open_layer(layer: int) -> dict[str, np.ndarray]:
        x = torch.from_numpy(np.array(kept[f"blocks.{layer}.hook_resid_pre"]))[None]  # (1, T, d)
        mask, rope = model.attention_context(T, interventions)
        rec: dict[str, torch.Tensor] = {}
        with torch.inference_mode():
            model.blocks[layer](x, mask, interventions, rec, rope)
        return {name: read_only(t[0]) for name, t in rec.items()}

    return open_layer
