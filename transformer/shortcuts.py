"""Traces made from what other traces already computed, running only what changed.

    tempered          a layer's scores and weights at another attention temperature, from its recorded raw scores
    Tempered          a trace seen with τ on every head's weights (each layer's from tempered), all else its own
    tempered_pattern  one head's weights at another attention temperature (no block runs)
    derive            a text's trace under other interventions: a trace's arrays below the first layer they change
    extend            a decoder's trace of a text that begins with another trace's tokens: those tokens' arrays
                      are taken, the new tokens alone run through the blocks that trace ran (reading earlier K, V)
    trace_from        run_trace, made by whichever of derive or extend saves the most from the traces at hand

Each gives the numbers a fresh run_trace gives: tempered, Tempered's weights and derive bit for bit (the same operations
on the same inputs); extend up to float32 rounding (its products have other shapes, so their sums run in another order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial

import numpy as np
import torch

from .attention import Interventions, weigh
from .protocol import Model
from .tokenizer import Encoding, Tokenizer
from .trace import (
    Forward,
    Recorder,
    Trace,
    embedded,
    encode_for_model,
    frozen,
    is_kept,
    layer_of,
    open_layer,
    read_only,
    run_trace,
    token_limit,
)

TEMPERED = ("attn.hook_scores_scaled", "attn.hook_scores_masked", "attn.hook_pattern")  # what a head's τ changes first


def tempered(trace: Trace, layer: int, tau: float) -> dict[str, np.ndarray]:
    """Layer `layer`'s scaled and masked scores and weights, (nh, T, T) each, with attention temperature τ on every head
    of that layer only: softmax(mask(Q·Kᵀ / √d_head / τ)) by the attention core's own steps, from the layer's recorded
    raw scores Q·Kᵀ. No block runs past reading those scores: a layer's τ changes nothing before its weights."""
    raw = torch.from_numpy(np.array(trace.peek(f"blocks.{layer}.attn.hook_scores_raw")))  # (nh, T, T)
    mask, _ = trace.forward.model.attention_context(raw.shape[-1], trace.interventions)  # (1, 1, T, T)
    steps = weigh(raw[None], mask, trace.cfg.d_head, torch.full(raw.shape[:1], float(tau)))  # (1, nh, T, T) each
    return {f"blocks.{layer}.{name}": read_only(t[0]) for name, t in zip(TEMPERED, steps, strict=True)}


def tempered_pattern(trace: Trace, layer: int, head: int, tau: float) -> np.ndarray:
    """(T, T) weights of one head with attention temperature τ on that head only (see tempered)."""
    return tempered(trace, layer, tau)[f"blocks.{layer}.attn.hook_pattern"][head]


class Tempered:
    """`trace` seen with attention temperature τ on every head's weights, and nothing else changed.

    Each layer's scaled and masked scores and weights (TEMPERED) are those a forward pass with τ on that layer's heads
    alone records (tempered: computed when the layer is first read, from its recorded raw scores; the view keeps the
    weights of every layer read, as a trace does, and the scores of the last one). Every other array, and everything
    else a Trace answers (tokens, config, interventions: the forward pass that ran, logits, …), is the trace's own: the
    heads' outputs and every later layer are the model's under the trace's interventions. τ in every layer of a
    forward pass is another trace, Interventions(temperature=τ).
    """

    def __init__(self, trace: Trace, tau: float):
        self.trace, self.tau = trace, float(tau)
        self._read: dict[str, np.ndarray] = {}  # the tempered arrays kept: name → array

    def __getattr__(self, name: str):
        return getattr(self.trace, name)  # what τ on the weights does not change: the trace's own

    def __contains__(self, name: str) -> bool:
        return name in self.trace

    def __getitem__(self, name: str) -> np.ndarray:
        layer = layer_of(name)
        if layer is None or not name.endswith(TEMPERED):
            return self.trace[name]
        arr = self._read.get(name)
        if arr is None:  # this layer's, all three: every layer's weights stay, the scores of this layer only
            arrays = tempered(self.trace, layer, self.tau)
            weights = {n: a for n, a in self._read.items() if n.endswith("attn.hook_pattern")}
            self._read, arr = weights | arrays, arrays[name]
        return arr

    def head_temperature(self, layer: int, head: int) -> float:
        """τ, the attention temperature that divides the head's scaled scores as this view shows them."""
        return self.tau

    @property
    def nbytes(self) -> int:
        """Bytes held: the trace's, and the tempered arrays kept."""
        return self.trace.nbytes + sum(arr.nbytes for arr in self._read.values())

    arrays = Trace.arrays  # every array by name, tempered where τ changes it

    def run_blocks(self) -> Tempered:
        self.trace.run_blocks()
        return self


def same(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    return a is b or (a is not None and b is not None and torch.equal(a, b))


def shared_layers(a: Interventions, b: Interventions, n_layer: int, n_head: int) -> int:
    """How many blocks, from the first, compute the same under interventions a and b: up to the first layer whose
    temperatures or ablated heads differ (none when the causal mask differs, n_layer when nothing does)."""
    if a.causal != b.causal:
        return 0
    for layer in range(n_layer):
        if not same(a.temperatures(layer, n_head), b.temperatures(layer, n_head)):
            return layer
        if not same(a.kept_heads(layer, n_head), b.kept_heads(layer, n_head)):
            return layer
    return n_layer


def derive(base: Trace, interventions: Interventions) -> Trace:
    """base's tokens under other interventions. The arrays of the blocks below the first layer they change (and of
    those base has run) are base's own, shared (read-only); the blocks from there run, when read, on base's recorded
    input to that layer. The same operations on the same inputs as run_trace: its numbers, bit for bit."""
    cfg = base.cfg
    ran, cache = base.ran()
    start = min(shared_layers(base.interventions, interventions, cfg.n_layer, cfg.n_head), ran, cfg.n_layer - 1)
    first = f"blocks.{start}.hook_resid_pre"
    before = base.names[: base.names.index(first) + 1]  # the embedding's names, blocks < start, block start's input
    kept = {name: cache[name] for name in before if name in cache}
    forward = Forward(base.forward.model, interventions, torch.from_numpy(np.array(kept[first]))[None], done=start)
    return Trace(base.encoding, kept, interventions, base.n_tokens_in, base.cut_chars, cfg, base.names, forward)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many ids a and b share from the start."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def join(name: str, known: np.ndarray, new: np.ndarray, P: int) -> np.ndarray:
    """Every token's array `name`: the first P tokens' rows known, then the new tokens' rows. A pattern's known rows
    (nh, P, P) get zeros on the later keys (nh, P, T): under a causal mask their weights there are exactly 0."""
    if name.endswith("attn.hook_pattern"):
        T = P + new.shape[1]
        return frozen(
            np.concatenate([np.pad(known[:, :P, :P], ((0, 0), (0, 0), (0, T - P))), new], axis=1)
        )  # (nh, T, T)
    return frozen(np.concatenate([known[:P], new]))  # (T, …)


class Continuation(Forward):
    """The forward pass of a text whose first P tokens a shorter text's trace ran through blocks 0…start−1 (extend).

    Under a causal mask the activations of tokens 0…t depend on tokens 0…t only: the first P tokens' kept arrays are
    the shorter trace's (`known`). Blocks below `start` run on the new tokens alone, their attention reading the first
    P tokens' keys and values, made from the block inputs `known` holds (the residual stream a trace keeps serves as
    a KV cache). From block `start` on, every token runs, as in Forward.
    """

    def __init__(self, model: Model, interventions: Interventions, x: torch.Tensor, P: int, start: int, known: dict):
        super().__init__(model, interventions, x)  # x (1, T, d): block 0's input, every token's
        self.P, self.start = P, start
        # what the blocks below `start` read of the shorter trace (let go of as they run): their kept arrays, and
        # the input of block `start`
        first = f"blocks.{start}.hook_resid_pre"
        self.known = {n: a for n, a in known.items() if n == first or layer_of(n) in range(start)}

    def run_to(self, layer: int, whole_layer: bool) -> dict[str, np.ndarray]:
        arrays: dict[str, np.ndarray] = {}
        while self.done < min(layer + 1, self.start):
            arrays |= self.run_new_tokens()
        if layer >= self.start:
            return arrays | super().run_to(layer, whole_layer)
        if whole_layer:  # all of the layer: its block again, on every token
            arrays = (
                open_layer(self.model, arrays[f"blocks.{layer}.hook_resid_pre"], layer, self.interventions) | arrays
            )
        return arrays

    def run_new_tokens(self) -> dict[str, np.ndarray]:
        """Block `done` on the new tokens; returns its kept arrays (every token's) and the next block's input."""
        layer, P, (mask, rope) = self.done, self.P, self.context
        rec = Recorder(is_kept)
        with torch.inference_mode():
            past, new = self.x[:, :P], self.x[:, P:]  # (1, P, d), (1, T − P, d)
            new = self.model.blocks[layer](new, mask[:, :, P:], self.interventions, rec, rope, past)  # (1, T − P, d)
        arrays = {name: join(name, self.known.pop(name), read_only(t[0]), P) for name, t in rec.items()}
        after = f"blocks.{layer + 1}.hook_resid_pre"
        self.x = torch.cat([torch.from_numpy(np.array(self.known[after][:P]))[None], new], dim=1)  # (1, T, d)
        arrays[after] = read_only(self.x[0])
        self.done += 1
        if self.done == self.start:
            self.known = {}  # every block from here runs on every token
        return arrays


def extend(prefix: Trace, enc: Encoding, n_tokens_in: int, cut_chars: bool) -> Trace:
    """The trace of tokens `enc`, whose first P tokens are prefix's (a decoder, prefix's interventions, causal mask
    on), run as a Continuation of prefix through the blocks prefix ran. P < len(enc): the last token runs, even when a
    text was cut back to tokens prefix has."""
    model, cfg = prefix.forward.model, prefix.cfg
    ran, known = prefix.ran()
    P = min(common_prefix(prefix.encoding.ids, enc.ids), len(enc) - 1)
    x, kept = embedded(model, enc)  # every token's: a look-up
    forward = Continuation(model, prefix.interventions, x, P, min(ran, cfg.n_layer - 1), known)
    return Trace(enc, kept, prefix.interventions, n_tokens_in, cut_chars, cfg, prefix.names, forward)


def trace_from(
    model: Model, tokenizer: Tokenizer, text: str, interventions: Interventions, traces: Iterable[Trace]
) -> Trace:
    """run_trace(model, tokenizer, text, interventions), made from whichever of `traces` (any at hand) saves the most
    tokens × blocks: one of the same tokens (derive), or, for a decoder with its causal mask on, one under the same
    interventions whose tokens begin the same way (extend). Run afresh when none saves a block."""
    cfg = model.cfg
    enc, n_in, cut_chars = encode_for_model(tokenizer, text, token_limit(cfg))
    best, most = None, 0
    for t in traces:
        if t.forward.model is not model:
            continue
        ran = min(t.forward.done, cfg.n_layer - 1)  # read without its lock: a guess, derive and extend read it again
        if (t.encoding, t.n_tokens_in, t.cut_chars) == (enc, n_in, cut_chars):
            saved = len(enc) * min(ran, shared_layers(t.interventions, interventions, cfg.n_layer, cfg.n_head))
            make = partial(derive, t, interventions)
        elif cfg.causal and interventions.causal and t.interventions == interventions:
            saved, make = common_prefix(t.encoding.ids, enc.ids) * ran, partial(extend, t, enc, n_in, cut_chars)
        else:
            continue
        if saved > most:
            best, most = make, saved
    return run_trace(model, tokenizer, text, interventions) if best is None else best()
