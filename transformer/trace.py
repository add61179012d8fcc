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
from .protocol import Model
from .tokenizer import Encoding, Tokenizer

MAX_CHARS = 20_000  # longer input is cut before tokenizing
# a trace reads at most this many tokens, whatever the model's context: 30 layers of T×T patterns grow fast
MAX_TOKENS = 256


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
# what it keeps ~39 MiB. A trace runs its blocks only as far as a page reads (One head on layer 0 of SmolLM2 runs
# one block of 30), and the logits (T × vocabulary: 12 MiB for SmolLM2 at 64 tokens, and a fifth of its forward
# pass) are computed from ln_final.hook_normalized when a page first reads them.
KEPT = ("hook_resid_pre", "hook_resid_mid", "hook_resid_post", "hook_attn_out", "hook_mlp_out", "attn.hook_pattern")
OPEN_LAYERS = 2


def layer_of(name: str) -> int | None:
    """The layer of a "blocks.{l}.…" name, else None."""
    head, _, rest = name.partition(".")
    number = rest.partition(".")[0]
    return int(number) if head == "blocks" and number.isdigit() else None


def is_kept(name: str) -> bool:
    return name.endswith(KEPT) or (layer_of(name) is None and name != "logits")


class Recorder(dict):
    """A record that keeps only the names `keep` accepts (the others are dropped as they are written)."""

    def __init__(self, keep: Callable[[str], bool]):
        super().__init__()
        self.keep = keep

    def __setitem__(self, name: str, value: torch.Tensor) -> None:
        if self.keep(name):
            super().__setitem__(name, value)


def frozen(arr: np.ndarray) -> np.ndarray:
    """arr, made read-only: a trace's arrays are shared by every session (and by traces made from it)."""
    arr.flags.writeable = False
    return arr


def read_only(t: torch.Tensor) -> np.ndarray:
    return frozen(t.float().numpy())


def run_block(
    model: Model, x: torch.Tensor, layer: int, interventions: Interventions, rec: dict, context: tuple | None = None
) -> torch.Tensor:
    """Block `layer` on its input x (1, T, d), recording into rec; returns its output (1, T, d). context: the model's
    attention_context for these T tokens and interventions, when already at hand."""
    mask, rope = model.attention_context(x.shape[1], interventions) if context is None else context
    with torch.inference_mode():
        return model.blocks[layer](x, mask, interventions, rec, rope)


def open_layer(model: Model, resid_pre: np.ndarray, layer: int, interventions: Interventions) -> dict[str, np.ndarray]:
    """Everything block `layer` records, run again on its recorded input (T, d) with the same interventions."""
    rec: dict[str, torch.Tensor] = {}
    run_block(model, torch.from_numpy(np.array(resid_pre))[None], layer, interventions, rec)
    return {name: read_only(t[0]) for name, t in rec.items()}


def _size(arrays: dict[str, np.ndarray]) -> int:
    return sum(arr.nbytes for arr in arrays.values())


class Forward:
    """The rest of one text's forward pass, run block by block as far as its trace is read."""

    def __init__(self, model: Model, interventions: Interventions, x: torch.Tensor | None, done: int = 0):
        self.model, self.interventions = model, interventions
        # x (1, T, d): the input of block `done`; done = n_layer + 1 once the final norm ran
        self.x, self.done = x, done
        # the mask and RoPE angles every block reads
        self.context = None if x is None else model.attention_context(x.shape[1], interventions)

    def run_to(self, layer: int, whole_layer: bool) -> dict[str, np.ndarray]:
        """Run the blocks up to `layer` (all of them and the final norm when layer ≥ n_layer). Returns what a trace
        keeps of them, all of block `layer` when whole_layer, and the next block's input."""
        n_layer = self.model.cfg.n_layer
        rec = Recorder(lambda name: is_kept(name) or (whole_layer and layer_of(name) == layer))
        while self.done <= min(layer, n_layer - 1):
            self.x = run_block(self.model, self.x, self.done, self.interventions, rec, self.context)  # (1, T, d)
            self.done += 1
        if self.done == n_layer and layer >= n_layer:
            with torch.inference_mode():
                self.model.final_norm(self.x, rec)
            self.x, self.done = None, n_layer + 1  # nothing is left to run
        elif self.done < n_layer:
            rec[f"blocks.{self.done}.hook_resid_pre"] = self.x  # known now: the last block's output
        return {name: read_only(t[0]) for name, t in rec.items()}

    def unembed(self, final: np.ndarray) -> np.ndarray:
        """logits = LN(x)·W_U (T, vocab), as the model's forward computes them, from the final normalized stream (T, d)
        (only a decoder's trace has logits: its model is a protocol.Decoder)."""
        with torch.inference_mode():
            return read_only(torch.from_numpy(np.array(final)) @ self.model.W_U)


@dataclass(frozen=True)
class Trace:
    """Every intermediate of one text's forward pass, by name (shapes in the module docstring).

    Arrays are read-only float32. The blocks run when a page first reads them, up to the layer it reads; a layer's
    full internals are recomputed on first read, from the layer's own recorded input, by the same block with the same
    interventions: the same numbers one whole forward pass has. Shared by every session: it grows under its lock.
    """

    encoding: Encoding  # the tokens that were run (after any cut)
    # the arrays always kept (KEPT of every layer run so far, and everything outside the blocks)
    cache: dict[str, np.ndarray]
    interventions: Interventions
    n_tokens_in: int  # tokens in the text as given; > len(encoding) when it was cut
    cut_chars: bool  # the text was longer than MAX_CHARS characters
    cfg: ModelConfig
    names: tuple[str, ...]  # every name the trace answers
    forward: Forward = field(repr=False, compare=False)
    # layer → its arrays, most recent last
    _open: OrderedDict = field(default_factory=OrderedDict, repr=False, compare=False)
    _logits: list = field(default_factory=list, repr=False, compare=False)  # the logits, once read
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    # [bytes held], kept up to date under the lock
    _held: list = field(default_factory=lambda: [0], repr=False, compare=False)
    _peeked: dict = field(default_factory=dict, repr=False, compare=False)  # name → an array peek() recorded alone

    def __post_init__(self):
        self._held[0] = (
            sum(arr.nbytes for arr in self.cache.values()) + sum(_size(arrays) for arrays in self._open.values())
        )

    @property
    def truncated(self) -> bool:
        return self.cut_chars or self.n_tokens_in > len(self.encoding)

    @property
    def nbytes(self) -> int:
        """Bytes the trace holds now: the kept arrays, the open layers' full internals and the logits once read."""
        return self._held[0]

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def __getitem__(self, name: str) -> np.ndarray:
        arr = self.cache.get(name)
        if arr is not None:
            return arr
        if name not in self.names:
            raise KeyError(name)
        layer = layer_of(name)
        with self._lock:
            if name in self.cache:  # another session ran the blocks meanwhile
                return self.cache[name]
            if self.forward.done <= (self.cfg.n_layer if layer is None else layer):
                self._run_to(
                    self.cfg.n_layer if layer is None else layer, whole_layer=layer is not None and not is_kept(name)
                )
                if name in self.cache:
                    return self.cache[name]
            if name == "logits":
                if not self._logits:
                    self._logits.append(self.forward.unembed(self.cache["ln_final.hook_normalized"]))  # (T, vocab)
                    self._held[0] += self._logits[0].nbytes
                return self._logits[0]
            if layer not in self._open:
                self._keep_open(
                    layer,
                    open_layer(
                        self.forward.model, self.cache[f"blocks.{layer}.hook_resid_pre"], layer, self.interventions
                    ),
                )
            self._open.move_to_end(layer)
            return self._open[layer][name]

    def peek(self, name: str) -> np.ndarray:
        """self[name], without opening its layer when it is not open: the block runs again on its recorded input and
        records that name alone, kept for the next read (a page that reads one name of every layer pays one forward
        pass once, not one that records and keeps every layer's internals, nor one per rerun)."""
        layer = layer_of(name)
        if layer is None or is_kept(name) or name not in self.names:
            return self[name]
        resid_pre = self[f"blocks.{layer}.hook_resid_pre"]  # (T, d): runs the blocks below, if not yet run
        with self._lock:
            if layer in self._open:
                return self._open[layer][name]
            if name in self._peeked:
                return self._peeked[name]
        rec = Recorder(lambda n: n == name)
        run_block(self.forward.model, torch.from_numpy(np.array(resid_pre))[None], layer, self.interventions, rec)
        with self._lock:  # kept, and counted in the trace's bytes: the next τ reads it again
            if name not in self._peeked:
                self._peeked[name] = read_only(rec[name][0])
                self._held[0] += self._peeked[name].nbytes
            return self._peeked[name]

    def logits_at(self, pos: int) -> np.ndarray:
        """(vocab,) the logits of position `pos`: self["logits"][pos] once a page has read every position's logits;
        until then only this row is unembedded (SmolLM2: a 64-token text's logits cost ~90 ms here, one row ~12 ms).
        A row alone is summed in another order: it differs from the full product by float32 rounding (~1e-6 × |z|)."""
        final = self["ln_final.hook_normalized"]  # (T, d): runs every block
        with self._lock:
            if self._logits:
                return self._logits[0][pos]
        return self.forward.unembed(final[pos : pos + 1])[0]

    def ran(self) -> tuple[int, dict[str, np.ndarray]]:
        """How many blocks have run, and the arrays kept so far (a new dict; the arrays are shared, read-only)."""
        with self._lock:
            return min(self.forward.done, self.cfg.n_layer), dict(self.cache)

    def run_blocks(self) -> Trace:
        """Run every block that has not run yet, and the final norm, as one whole
        forward pass would; returns the trace."""
        with self._lock:
            if self.forward.done <= self.cfg.n_layer:
                self._run_to(self.cfg.n_layer, whole_layer=False)
        return self

    def _run_to(self, layer: int, whole_layer: bool) -> None:
        """Run the blocks up to `layer` (under the lock): their kept arrays join the cache, and block `layer` opens
        when whole_layer (a page that reads its Q, K, scores… reads them next; one that reads only the kept arrays of
        layer after layer would record every layer's internals for nothing)."""
        arrays = self.forward.run_to(layer, whole_layer)
        for name, arr in arrays.items():
            if is_kept(name) and name not in self.cache:
                self.cache[name] = arr
                self._held[0] += arr.nbytes
        if whole_layer:
            self._keep_open(layer, {name: arr for name, arr in arrays.items() if layer_of(name) == layer})

    def _keep_open(self, layer: int, arrays: dict[str, np.ndarray]) -> None:
        self._held[0] += _size(arrays) - _size(self._open.pop(layer, {}))
        self._open[layer] = arrays
        while len(self._open) > OPEN_LAYERS:
            self._held[0] -= _size(self._open.popitem(last=False)[1])

    def head_temperature(self, layer: int, head: int) -> float:
        """τ, the attention temperature that divided the head's scaled scores (1 unless the interventions change it)."""
        taus = self.interventions.temperatures(layer, self.cfg.n_head)
        return 1.0 if taus is None else float(taus[head])

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
        """Every array, by name (runs and opens every layer in turn: for saving a whole trace)."""
        return {name: self[name] for name in self.names}


def encode_for_model(
    tokenizer: Tokenizer, text: str, n_ctx: int, pair: str | None = None
) -> tuple[Encoding, int, bool]:
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
    """(ids, real), both (B, T): the encodings right-padded with the id `pad` to the
    longest; real is False on the padding."""
    T = max(len(e) for e in encodings)
    ids = np.full((len(encodings), T), pad, dtype=np.int64)  # (B, T)
    real = np.zeros((len(encodings), T), dtype=bool)  # (B, T)
    for b, e in enumerate(encodings):
        ids[b, : len(e)] = e.ids
        real[b, : len(e)] = True
    return ids, real


def forward_padded(
    model: Model,
    encodings: Sequence[Encoding],
    pad: int,
    interventions: Interventions = NO_INTERVENTIONS,
    mask_padding: bool = True,
    keep: Callable[[str], bool] | None = None,
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
        model(
            torch.from_numpy(ids),
            attention_mask=mask,
            interventions=interventions,
            rec=rec,
            token_type_ids=torch.from_numpy(types),
        )
    return rec


# (nh, T, T)
PAIRWISE = ("attn.hook_scores_raw", "attn.hook_scores_scaled", "attn.hook_scores_masked", "attn.hook_pattern")


def run_trace(
    model: Model,
    tokenizer: Tokenizer,
    text: str,
    interventions: Interventions = NO_INTERVENTIONS,
    pair: str | None = None,
) -> Trace:
    """Run `model` on `text` (and a second sentence `pair`, for an encoder): the embedding now, the blocks when the
    trace is first read, as far as it is read. Text longer than the context is cut to its first n_ctx tokens."""
    enc, n_in, cut_chars = encode_for_model(tokenizer, text, token_limit(model.cfg), pair)
    x, cache = embedded(model, enc)
    names = tuple(trace_names(model.cfg))
    return Trace(enc, cache, interventions, n_in, cut_chars, model.cfg, names, Forward(model, interventions, x))


def embedded(model: Model, enc: Encoding) -> tuple[torch.Tensor, dict[str, np.ndarray]]:
    """Block 0's input (1, T, d) for these tokens, and what a trace keeps of the embedding (with that input)."""
    rec: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        x = model.embed(torch.tensor([enc.ids]), rec, torch.tensor([enc.type_ids or [0] * len(enc)]))  # (1, T, d)
    return x, {name: read_only(t[0]) for name, t in rec.items()} | {"blocks.0.hook_resid_pre": read_only(x[0])}


def run_traces(
    model: Model,
    tokenizer: Tokenizer,
    texts: Sequence[str],
    interventions: Interventions = NO_INTERVENTIONS,
    pairs: Sequence[str | None] | None = None,
) -> list[Trace]:
    """run_trace for several texts in one batched pass of every block:
    right-padded to the longest, the padding keys masked.

    A real token never sees a padding key, so each trace holds the numbers run_trace gives (up to float rounding);
    four short texts cost about 1.6 times one, not 4 times.
    """
    if not texts:
        return []
    pairs = [None] * len(texts) if pairs is None else pairs
    encoded = [
        encode_for_model(tokenizer, text, token_limit(model.cfg), pair) for text, pair in zip(texts, pairs, strict=True)
    ]
    # keep what every trace keeps, and all of layer 0 (most pages open it first)
    rec = forward_padded(
        model,
        [enc for enc, _, _ in encoded],
        pad=0,
        interventions=interventions,
        keep=lambda n: is_kept(n) or layer_of(n) == 0,
    )
    names = tuple(trace_names(model.cfg))
    traces = []
    for b, (enc, n_in, cut_chars) in enumerate(encoded):
        T = len(enc)
        # drop the padding
        arrays = {name: read_only(t[b, :, :T, :T] if name.endswith(PAIRWISE) else t[b, :T]) for name, t in rec.items()}
        layer0 = {name: arr for name, arr in arrays.items() if not is_kept(name)}
        kept = {name: arr for name, arr in arrays.items() if is_kept(name)}
        done = Forward(model, interventions, None, done=model.cfg.n_layer + 1)  # every block ran
        traces.append(
            Trace(enc, kept, interventions, n_in, cut_chars, model.cfg, names, done, OrderedDict({0: layer0}))
        )
    return traces
