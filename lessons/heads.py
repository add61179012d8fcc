"""Many heads at once: names, averages, thumbnails, the W_O projection, head ablation.

Everything works on a trace's numpy arrays (or reads the model's weights); nothing draws.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from transformer import Model, ModelConfig, Trace, visible_mask
from transformer.tokenizer import Encoding

from .block_stats import block_output
from .probability import softmax
from .words import md, noun, percent, shown

SINK_TOKENS = ("[CLS]", "[SEP]")  # where an encoder's heads park their weight


def head_name(layer: int, head: int) -> str:
    """(layer, head) → "L.H", the name a head goes by on the pages."""
    return f"{layer}.{head}"


def head_title(name: str) -> str:
    """ "L.H" → "layer L, head H"."""
    return "layer {}, head {}".format(*parse_head(name))


def parse_head(name: str) -> tuple[int, int]:
    """ "L.H" → (layer, head)."""
    layer, head = name.split(".")
    return int(layer), int(head)


def all_heads(n_layer: int, n_head: int) -> list[str]:
    """Every head of the model as "L.H", layer by layer."""
    return [head_name(layer, head) for layer in range(n_layer) for head in range(n_head)]


def visible_keys(tr: Trace, layer: int) -> np.ndarray:
    """(nh, T, T) bool: True where query i may look at key j (the score is not −∞)."""
    return ~np.isneginf(tr[f"blocks.{layer}.attn.hook_scores_masked"])


def key_mask(tr: Trace) -> np.ndarray:
    """(T, T) bool: may query i look at key j? The same for every layer and head of one text: j ≤ i in a decoder
    (unless the trace lifted the causal mask), every key in an encoder. Unlike `visible_keys`, opens no layer."""
    return visible_mask(len(tr.encoding), causal=tr.cfg.causal and tr.interventions.causal)[0, 0].numpy()  # (T, T)


def sink_columns(enc: Encoding, cfg: ModelConfig) -> tuple[int, ...]:
    """The keys where heads park weight they have no use for: a decoder's first token; an encoder's [CLS] and [SEP]."""
    if cfg.causal:
        return (0,) if len(enc) else ()
    return tuple(p for p, label in enumerate(enc.labels) if label in SINK_TOKENS)


def sink_share(weights: np.ndarray, columns: tuple[int, ...], causal: bool) -> np.ndarray:
    """Mean weight each head puts on the sink columns, weights (nh, T, T) → (nh,). A decoder's rows 1…T−1 (row 0 can
    see only itself); an encoder's every row. NaN when no row counts."""
    rows = weights[:, 1:] if causal else weights  # (nh, R, T)
    if rows.shape[1] == 0 or not columns:
        return np.full(weights.shape[0], np.nan)
    return rows[..., list(columns)].sum(axis=-1).mean(axis=1)


def mean_pattern(tr: Trace, layer: int | None) -> np.ndarray:
    """The attention weights averaged over the heads of `layer`, or over every layer
    and head when None. Shape (T, T)."""
    layers = range(tr.cfg.n_layer) if layer is None else [layer]
    stacked = np.stack([tr[f"blocks.{lay}.attn.hook_pattern"] for lay in layers])  # (n_layers, nh, T, T)
    return stacked.mean(axis=(0, 1))  # (T, T)


def shown_max(weights: np.ndarray, visible: np.ndarray, hide: tuple[int, ...] | bool = ()) -> float:
    """The largest weight a view shows (the hidden sink columns left out; True = the first column): the top of its
    colour scale; 1 if nothing is shown."""
    shown = np.broadcast_to(np.asarray(visible, dtype=bool), np.shape(weights)).copy()
    hide = (0,) if hide is True else () if hide is False else hide
    shown[..., list(hide)] = False
    top = float(np.max(weights, where=shown, initial=0.0))
    return top if top > 0 else 1.0


def pool(weights: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """Shrink (…, T, T) maps to at most size × size by averaging b × b blocks (NaN cells left out).

    Returns (pooled (…, n, n), b) with b = ⌈T / size⌉ and n = ⌈T / b⌉; b = 1 returns the maps unchanged.
    """
    T = weights.shape[-1]
    b = -(-T // size)
    if b == 1:
        return np.asarray(weights, dtype=np.float32), 1
    n = -(-T // b)
    lead = weights.shape[:-2]
    padded = np.full((*lead, n * b, n * b), np.nan)
    padded[..., :T, :T] = weights
    blocks = padded.reshape(*lead, n, b, n, b)
    count = (~np.isnan(blocks)).sum(axis=(-3, -1))  # (…, n, n) cells that hold a number
    total = np.nansum(blocks, axis=(-3, -1))  # (…, n, n)
    out = np.divide(total, count, out=np.full(count.shape, np.nan), where=count > 0)  # block mean
    return out.astype(np.float32), b


def overview(tr: Trace, hide: tuple[int, ...], size: int) -> tuple[np.ndarray, int, float]:
    """Every head's pattern as a map of at most size × size cells (b × b blocks averaged, future and hidden columns
    left out): (thumbnails (n_layer, nh, n, n), b, the largest cell, 1 when there is none)."""
    # (n_layer, nh, T, T)
    every_w = np.stack([tr[f"blocks.{layer}.attn.hook_pattern"] for layer in range(tr.cfg.n_layer)])
    shown = key_mask(tr).copy()  # (T, T)
    shown[:, list(hide)] = False
    thumbs, block = pool(np.where(shown, every_w, np.nan), size)  # (n_layer, nh, n, n)
    return thumbs, block, float(np.nanmax(thumbs, initial=0.0)) or 1.0


def line_pairs(
    weights: np.ndarray, visible: np.ndarray, threshold: float, token: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (query i, key j, weight) pairs with α_ij ≥ threshold; with `token`, only pairs
    where it is the query or the key."""
    keep = visible & (weights >= threshold)  # (T, T)
    if token is not None:
        touches = np.zeros_like(keep)
        touches[token, :] = touches[:, token] = True
        keep &= touches
    i, j = np.nonzero(keep)
    return i, j, weights[i, j]


def strongest_keys(
    weights: np.ndarray, visible: np.ndarray, top_k: int, min_weight: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every query i, its top_k keys by weight (among keys it may see, weight ≥ min_weight), as (i, j, weight)."""
    w = np.where(visible, weights, -np.inf)  # (T, T)
    order = np.argsort(-w, axis=1, kind="stable")[:, :top_k]  # (T, top_k) keys by falling weight
    i = np.repeat(np.arange(w.shape[0]), order.shape[1])
    j = order.reshape(-1)
    keep = np.isfinite(w[i, j]) & (w[i, j] >= min_weight)
    return i[keep], j[keep], weights[i[keep], j[keep]]


def out_projection(model: Model, layer: int) -> tuple[np.ndarray, np.ndarray | None]:
    """W_O of `layer` as one matrix (nh·hs, d), rows head by head, and b_O (d,) (None: Llama has no bias)."""
    attn = model.blocks[layer].attn
    nh, hs, d = attn.W_O.shape
    b_O = attn.b_O.detach().numpy().copy() if getattr(attn, "bias", True) else None
    return attn.W_O.detach().reshape(nh * hs, d).numpy().copy(), b_O


@dataclass(frozen=True)
class NextTokenChange:
    """Next-token probabilities at the last position, before and after switching heads off."""

    ids: np.ndarray  # token ids: the top k before, then any new ones in the top k after
    before: np.ndarray  # p(id) with every head on
    after: np.ndarray  # p(id) with the chosen heads off
    moved: float  # total variation ½ Σ_v |p_v − p'_v| over the full vocabulary: the share of probability that moved


def next_token_change(before_logits: np.ndarray, after_logits: np.ndarray, k: int) -> NextTokenChange:
    """Compare softmax(logits) over the full vocabulary before and after; list the top k of each."""
    p = softmax(before_logits)  # (V,)
    q = softmax(after_logits)  # (V,)
    top_p, top_q = np.argsort(-p, kind="stable")[:k], np.argsort(-q, kind="stable")[:k]
    ids = np.concatenate([top_p, top_q[~np.isin(top_q, top_p)]])  # (≤ 2k,)
    return NextTokenChange(ids, p[ids], q[ids], float(0.5 * np.abs(p - q).sum()))


@dataclass(frozen=True)
class OutputChange:
    """An encoder has no next token: how each token's final vector moved when heads were switched off."""

    cosine: np.ndarray  # (T,) cos(before_t, after_t): 1 = same direction
    relative: np.ndarray  # (T,) ‖after_t − before_t‖ / ‖before_t‖

    @property
    def turned(self) -> float:
        """1 − cos, averaged over the tokens: 0 when no vector changed direction."""
        return float((1 - self.cosine.astype(np.float64)).mean())


def output_change(before: Trace, after: Trace) -> OutputChange:
    """Compare every token's vector after the last block, with every head on (before) and with heads off (after)."""
    L = before.cfg.n_layer
    a = np.asarray(block_output(before, L - 1), dtype=np.float64)  # (T, d)
    b = np.asarray(block_output(after, L - 1), dtype=np.float64)  # (T, d)
    na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)  # (T,) each
    cos = (a * b).sum(-1) / np.where(na * nb > 0, na * nb, 1.0)
    return OutputChange(
        cos.astype(np.float32), (np.linalg.norm(b - a, axis=-1) / np.where(na > 0, na, 1.0)).astype(np.float32)
    )


def hidden_weight(row: np.ndarray, columns: tuple[int, ...]) -> tuple[float, float]:
    """One row of weights (T,) split into (the weight still shown, the weight on the hidden columns)."""
    hidden = float(row[list(columns)].sum())
    return float(row.sum()) - hidden, hidden


def change_table(change: NextTokenChange, labels: list[str]) -> dict[str, list[str]]:
    """The compared next tokens as table columns: token, p before, p after, and the change, printed by
    lessons.words.percent (a change as its sign and size: "+12.3%", "−2.7e-7")."""
    delta = change.after.astype(np.float64) - change.before  # (n,)
    return {
        "next token": [labels[i] for i in change.ids],
        "p, all heads on": [percent(p) for p in change.before],
        "p, switched off": [percent(p) for p in change.after],
        "change": [("+" if d > 0 else "−" if d < 0 else "") + percent(abs(d)) for d in delta],
    }


@dataclass(frozen=True)
class Shares:
    """One token's attention output taken apart: each head's share z_h·W_O[h], the bias, and their sum (= attn_out)."""

    rows: np.ndarray  # (nh [+ 1 for b_O] + 1, d)
    names: list[str]  # one per row
    error: float  # max |concat·W_O + b_O − attn_out|, recomputed in float64


def output_shares(tr: Trace, model: Model, layer: int, t: int) -> Shares:
    W_O, b_O = out_projection(model, layer)  # (nh·hs, d), (d,) or None
    a = f"blocks.{layer}."
    # (nh, d), (d,), (nh·hs,)
    result, out, concat = tr[a + "attn.hook_result"][t], tr[a + "hook_attn_out"][t], tr[a + "attn.hook_concat"][t]
    bias = [] if b_O is None else [b_O[None]]
    names = [
        *(f"head {h}: z·W_O[{h}]" for h in range(len(result))),
        *(["b_O"] if bias else []),
        "sum = attention output",
    ]
    recomputed = concat.astype(np.float64) @ W_O + (0 if b_O is None else b_O)  # (d,)
    return Shares(np.vstack([result, *bias, out[None]]), names, float(np.abs(recomputed - out).max()))


# --- The Multi-head page's words for one model ---


@dataclass(frozen=True)
class Reading:
    """What the Multi-head page says about one model's heads: what they share, where their sink is, what W_O adds,
    and what switching heads off can change."""

    intro: str  # the page's opening paragraph
    formula: str  # MultiHead(X) in LaTeX
    b_O: str  # " + b_O", or "" when the attention has no biases (Llama)
    sink: str  # the sink's short name, in the hovers of the opened head
    sink_to: str  # the tokens the sink weight goes to
    columns: str  # the sink columns, as the hiding checkbox names them
    sink_label: str  # the checkbox's label
    sink_help: str
    sink_note: str  # what an attention sink is
    ablation: str  # what switching heads off may change
    ablation_latex: str
    encoder_note: str  # why an encoder compares final vectors ("" for a decoder)
    caveat: str


def out_bias(cfg: ModelConfig) -> str:
    """ " + b_O" in the formulas of a model whose attention output has a bias;
    "" for Llama, whose attention has no biases."""
    return " + b_O" if cfg.family != "llama" else ""


def reading(cfg: ModelConfig, layer: int, place: str) -> Reading:
    """The Multi-head page's texts for this model (decoder or encoder, own or shared
    key/value heads, with or without b_O); `place` says where the layer is chosen (ui.state.controls_place)."""
    nh, d, causal, b_O = cfg.n_head, cfg.d_model, cfg.causal, out_bias(cfg)
    shared = f"its own W_Q, W_K, W_V (d_head = d_model / h = {d} / {nh} = {cfg.d_head})"
    if cfg.n_kv_heads < nh:
        shared = (
            f"its own W_Q, while groups of {nh // cfg.n_kv_heads} share one W_K and W_V "
            f"({cfg.n_kv_heads} key/value heads: grouped-query attention, see *RoPE and shared heads*)"
        )
    intro = (
        f"One head can follow one kind of relation at a time. So every layer runs **{nh} heads** side by side, "
        f"each with {shared}. Each head looks at the sentence its own way; their outputs are put side by "
        f"side (concatenated) and one matrix **W_O** mixes them back into a {d}-dimensional vector per token. "
        f"The tabs below show the heads of **layer {layer}** ({place}), the whole model at a glance, "
        "the W_O step with its real numbers, and what happens when heads are switched off."
    ) + ("" if causal else " This model is an encoder: no causal mask (M = 0), every token sees the whole sentence.")
    head = r"\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}\,\tau} + M\right) V_h"
    formula = (
        r"\begin{gathered}\mathrm{MultiHead}(X) = "
        rf"\mathrm{{Concat}}(\mathrm{{head}}_0,\dots,\mathrm{{head}}_{{h-1}})\,W_O{b_O}, \\ " + head + r"\end{gathered}"
    )
    sink, sink_to, columns = (
        ("first-token", "the first token", "first-token column")
        if causal
        else ("[CLS]/[SEP]", "[CLS] and [SEP]", "[CLS] and [SEP] columns")
    )
    where = (
        "the very first token, whatever it is"
        if causal
        else "[CLS] and [SEP], the tokens the tokenizer adds at the start and the end"
    )
    sink_note = (
        "**Attention sink.** Every row of weights must add up to 1, even when a head finds nothing useful to "
        f"look at. Many trained heads then park most of their weight on {where}: it acts like a “nothing here” "
        "slot whose value adds little. That column can hide everything else, so you can hide it. Hiding is "
        "only a display choice: the other weights keep their real values (a row then adds up to less than 1; "
        "nothing is renormalised), and the colour scale is stretched to the largest weight still shown."
    )
    sink_help = (
        f"Leaves the {columns} blank in every map and line view on this page, "
        "and stretches the colour scale over the remaining weights. The weights are not renormalised."
    )
    what = (
        "the prediction of the next token (after the last token) may change"
        if cfg.has_lm_head
        else "the final vector of every token may change"
    )
    ablation = (
        "Ablation: set a head's output z to zero and run the whole model again. Later layers now get "
        f"a different input, and {what}. If it hardly moves, the model did not need those heads here."
    )
    ablation_latex = (
        r"z_{i,h} \leftarrow 0 \;\text{ for every switched-off head } h, "
        r"\qquad p = \mathrm{softmax}(\mathrm{logits}_{T-1})"
    )
    encoder_note = ""
    if not cfg.has_lm_head:
        encoder_note = (
            "An encoder has no next-token prediction to compare: it turns every token into a vector "
            "that depends on the whole sentence. So we compare those final vectors, token by token."
        )
        change = (
            r"\cos(x_t, x'_t), \quad \lVert x'_t - x_t \rVert / \lVert x_t \rVert \quad "
            r"(x = \text{last block's output})"
        )
        ablation_latex = r"z_{i,h} \leftarrow 0 \text{ for every switched-off head } h, \qquad " + change
    output = "prediction" if cfg.has_lm_head else "output"
    caveat = (
        "A caveat: attention weights show where information flows, not why the model does what it does. "
        f"Switching a head off tests whether the {output} needs it, for this one text."
    )
    sink_label = f"Hide the {columns} (attention sink{'' if causal else 's'})"
    return Reading(
        intro,
        formula,
        b_O,
        sink,
        sink_to,
        columns,
        sink_label,
        sink_help,
        sink_note,
        ablation,
        ablation_latex,
        encoder_note,
        caveat,
    )


def hidden_note(read: Reading, row: np.ndarray, columns: tuple[int, ...], layer: int, head: int) -> str:
    """What hiding the sink columns leaves of one row of weights (T,): the weight still shown, and the weight hidden."""
    kept, hidden = hidden_weight(row, columns)
    rows = (
        f"in layer {layer}, head {head}, the last row's weights still shown add up to {kept:.3f}, "
        f"not 1 (the hidden {hidden:.3f} went to {read.sink_to})"
    )
    # not str.capitalize: "[CLS]" stays upper case
    return f"{read.columns[0].upper()}{read.columns[1:]} hidden, weights not renormalised: {rows}."


def sink_share_note(read: Reading, weights: np.ndarray, columns: tuple[int, ...], causal: bool) -> str:
    """Each head's mean weight on the sink columns, in words; weights (nh, T, T)."""
    share = sink_share(weights, columns, causal)  # (nh,)
    return (
        f"Weight on {read.sink_to}, averaged over {'rows 1…T−1' if causal else 'every row'}: "
        + ", ".join(f"head {h} {s:.1%}" for h, s in enumerate(share))
        + "."
    )


def overview_note(block: int, n: int, T: int, causal: bool, layers_across: bool = False) -> str:
    """How to read the overview of every head, whose thumbnails average b × b blocks of
    weights (block = b) into n × n cells, a row per layer (or with layers_across a column)."""
    pooled = (
        (
            f"each cell is the mean of a {block} × {block} block of weights{', future cells left out' * causal}, "
            f"so {T} tokens fit in {n} cells"
        )
        if block > 1
        else "every weight is shown"
    )
    return (
        f"{'Columns are layers, rows heads' if layers_across else 'Rows are layers, columns heads'}: "
        f"one small map per head ({pooled}); "
        "a badge says what the head does. The head chosen above (red box) is opened large below."
    )


def concat_note(cfg: ModelConfig, layer: int, T: int) -> str:
    """The shapes from the heads' outputs Z to the attention output, in words, for a text of T tokens."""
    nh, hs, d = cfg.n_head, cfg.d_head, cfg.d_model
    bias = f" plus b_O (one vector of {d} numbers)" if out_bias(cfg) else " (this model has no bias b_O)"
    steps = f"concatenated **({T}, {nh * hs})** → times W_O **({nh * hs}, {d})**" + bias
    return (
        f"Layer {layer}: the heads' outputs Z **({T}, {nh}, {hs})**, "
        f"one {hs}-vector per token and head → side by side, {steps} → the attention output **({T}, {d})**, "
        "which is added to the residual stream. Row by row, W_O's first block of rows reads head 0, "
        "the next head 1, and so on: so the output is also the sum of each head's share z_h·W_O[h]."
    )


ABSENT_MOVED = 0.01  # a decoder: less than 1 % of the probability moved is "hardly anything"
ABSENT_TURNED = 0.001  # an encoder: final vectors turned by less than 0.001 (1 − cos) on average


@dataclass(frozen=True)
class Effect:
    """What switching heads off did to the output, as the page shows it."""

    moved: float  # a decoder: ½ Σ |p − p′| over the vocabulary; an encoder: mean 1 − cos of the final vectors
    top: str = ""  # a decoder: the most likely next token with every head on
    p_before: float = 0.0  # … its probability with every head on
    p_after: float = 0.0  # … and with the heads off


def change_effect(change: NextTokenChange, labels: list[str]) -> Effect:
    """A decoder's Effect: the share of probability moved and the top next token's probability before and after
    (next_token_change lists the top token before first)."""
    return Effect(change.moved, labels[int(change.ids[0])], float(change.before[0]), float(change.after[0]))


def absent(cfg: ModelConfig, e: Effect) -> bool:
    """Did switching the heads off change less than the stated threshold (ABSENT_MOVED, ABSENT_TURNED)?"""
    return e.moved < (ABSENT_MOVED if cfg.has_lm_head else ABSENT_TURNED)


def effect_words(cfg: ModelConfig, e: Effect) -> str:
    """The size of an effect as the page prints it: "**53.2%** of the probability moved; ␣the: 61.0% → 12.3%"."""
    if cfg.has_lm_head:
        return f"**{percent(e.moved)}** moved; {md(e.top)}: {percent(e.p_before)} → {percent(e.p_after)}"
    return f"turned by **{e.moved:.4f}**"


def head_list(names: list[str], most: int = 12) -> str:
    """Head names for a sentence: all of them, or the first `most` and how many in all (131 sink heads are a wall)."""
    return ", ".join(names) if len(names) <= most else f"{', '.join(names[:most])}, … ({len(names)} in all)"


def ablation_verdict(cfg: ModelConfig, chosen: list[str], e: Effect, T: int) -> tuple[str, str]:
    """What switching the chosen heads off did, in words that follow the numbers shown: (kind "info", "markdown" or
    "warning", message). Says so when the change is below the stated threshold, and when the top token became more
    likely rather than less."""
    if not chosen:
        return (
            "info",
            (
                f"No head is switched off: {'both bars are' if cfg.has_lm_head else 'every vector is'} "
                "the model as trained. Choose heads above."
            ),
        )
    if cfg.has_lm_head:
        text = (
            f"Switched off: {head_list(chosen)}. **{percent(e.moved)}** of the probability moved "
            f"(½ Σ |p − p′| over all {cfg.vocab_size:,} tokens). The most likely next token, {md(e.top)}, "
            f"went from {percent(e.p_before)} to {percent(e.p_after)}."
        )
        if shown(e.p_after) > shown(e.p_before):
            text += f" It became **more** likely without these heads: they were holding {md(e.top)} back."
        threshold = f"less than {percent(ABSENT_MOVED)} moved"
    else:
        text = (
            f"Switched off: {head_list(chosen)}. The final vectors turned by "
            f"**{e.moved:.4f}** on average (1 − cos over the {T} tokens; 0 = unchanged)."
        )
        threshold = f"they turned by less than {ABSENT_TURNED}"
    if absent(cfg, e):
        return "warning", f"{text} **Hardly any effect** ({threshold}): the model did not need these heads here."
    return "markdown", text


def random_heads(
    n_layer: int, n_head: int, n: int, text: str, avoid: Iterable[tuple[int, int]] = ()
) -> tuple[tuple[int, int], ...]:
    """n heads drawn at random among those not in `avoid`, seeded by the text (the same text draws the same heads in
    every session and process): the control for switching off n chosen heads. Sorted (layer, head) pairs."""
    pool = [h for h in np.ndindex(n_layer, n_head) if h not in set(avoid)]
    rng = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
    picked = rng.choice(len(pool), size=min(n, len(pool)), replace=False)
    return tuple(sorted((int(pool[i][0]), int(pool[i][1])) for i in picked))


def control_verdict(cfg: ModelConfig, chosen: Effect, control: Effect, n: int) -> str:
    """The chosen heads against as many random heads (the control), compared on the numbers shown: which moved the
    output more, or that they moved it about as much (less than the stated threshold apart)."""
    heads_ = f"{n} random {noun(n, 'head')}"
    gap = chosen.moved - control.moved
    if abs(gap) < (ABSENT_MOVED if cfg.has_lm_head else ABSENT_TURNED):
        return f"Control, {heads_} switched off: {effect_words(cfg, control)}: **about as much** as the chosen heads."
    more = "more" if gap > 0 else "less"
    return (
        f"Control, {heads_} switched off: {effect_words(cfg, control)}. The chosen heads moved the output "
        f"**{more}** than as many random heads."
    )
