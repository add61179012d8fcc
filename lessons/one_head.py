"""One head's attention, step by step, from a trace: X → Q, K, V → QKᵀ → ÷√d_k → mask → softmax → weights·V.

The steps are the same in every family; what differs is named by `reading` (what X is, whether Q and K are turned by
RoPE, which key/value head a query head shares, whether there is a causal mask). The causal mask's own lessons
(what each position may see, what the predictions lose without it) are at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer import ModelConfig, Trace
from transformer.shortcuts import Tempered

from .gqa import group_heads
from .next_token import next_token_probs, top_tokens
from .probability import entropy_bits, masked_softmax
from .words import noun, percent, shown


def weighted_values(weights_row: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The terms α_ij · v_j of z_i = Σ_j α_ij v_j, one row per key j. weights_row (T,), v (T, hs) → (T, hs)."""
    return (np.asarray(weights_row, dtype=np.float32)[:, None] * np.asarray(v, dtype=np.float32)).astype(np.float32)


@dataclass(frozen=True)
class HeadSteps:
    """Every step of one head's attention, for one text (T tokens, hs = d_head)."""

    x: np.ndarray  # (T, d) the attention's input: LayerNorm 1 of the residual stream (BERT: the stream itself)
    q: np.ndarray  # (T, hs) the query that is dotted (after RoPE in a rotary model)
    k: np.ndarray  # (T, hs) the key of the head's key/value head (after RoPE in a rotary model)
    v: np.ndarray  # (T, hs) the value of the head's key/value head
    raw: np.ndarray  # (T, T) Q·Kᵀ
    scaled: np.ndarray  # (T, T) raw / divisor / τ
    masked: np.ndarray  # (T, T) scaled, −∞ where the mask hides a key
    weights: np.ndarray  # (T, T) softmax rows
    z: np.ndarray  # (T, hs) weights·V
    visible: np.ndarray  # (T, T) bool, True = may attend
    divisor: float  # √d_k, or 1 when the scaling is switched off
    tau: float  # the head's attention temperature


def head_steps(tr: Trace | Tempered, layer: int, head: int, scale: bool = True) -> HeadSteps:
    """One head's steps from a trace. scale=False recomputes them without ÷√d_k: softmax(mask(Q·Kᵀ / τ)) and its
    weights·V. A Tempered view's weights are not those the model ran with: its z is their weights·V too."""
    a = f"blocks.{layer}.attn."
    q, k, v = tr.head_qkv(layer, head)  # (T, hs) each: the scored query and key (after RoPE), the group's value
    raw, masked = tr[a + "hook_scores_raw"][head], tr[a + "hook_scores_masked"][head]  # (T, T)
    visible = ~np.isneginf(masked)
    tau = tr.head_temperature(layer, head)
    x = tr.attention_input(layer)  # (T, d)
    if scale:
        scaled, weights = tr[a + "hook_scores_scaled"][head], tr[a + "hook_pattern"][head]
    else:
        # without the scaling: e_ij = q_i·k_j / τ, then the mask and softmax as usual
        scaled = (raw / np.float32(tau)).astype(np.float32)  # (T, T)
        masked = np.where(visible, scaled, -np.inf).astype(np.float32)  # (T, T)
        weights = masked_softmax(raw, visible, temperature=tau)  # (T, T)
    if scale and not isinstance(tr, Tempered):
        z = tr[a + "hook_z"][:, head]  # (T, hs) the model's own output
    else:
        # z_i = Σ_j α_ij v_j, from the weights shown
        z = (weights @ v).astype(np.float32)  # (T, hs)
    divisor = float(np.sqrt(q.shape[1])) if scale else 1.0
    return HeadSteps(x, q, k, v, raw, scaled, masked, weights, z, visible, divisor, tau)


def scaling_note(with_scaling: HeadSteps, without: HeadSteps) -> str:
    """What dropping ÷√d_k did to the rows, in words: the mean largest weight and the mean entropy, with and without."""
    hs = with_scaling.q.shape[1]
    top0, top1 = with_scaling.weights.max(axis=1).mean(), without.weights.max(axis=1).mean()
    h0, h1 = entropy_bits(with_scaling.weights).mean(), entropy_bits(without.weights).mean()
    return (
        f"**Scaling off.** The scores are now {np.sqrt(hs):.2f}× larger (no ÷√{hs}). Softmax of larger numbers "
        f"is closer to one-hot: the average largest weight of a row went from {top0:.3f} to {top1:.3f}, "
        f"the average entropy from {h0:.3f} to {h1:.3f} bits (0 = all weight on one token). "
        "Only this head is recomputed; the rest of the model is unchanged."
    )


def mask_off_note(s: HeadSteps, layer: int) -> str:
    """What switching a decoder's causal mask off did to this head's rows, in words."""
    upstream = "In layer 0, X, Q, K and V are the same as with the mask: nothing has attended yet."
    if layer:
        upstream = (
            f"The mask is off in every layer, so the layers before {layer} saw the future too: "
            "X, Q, K and V below changed as well."
        )
    return (
        f"**Mask off.** Every row now sees all {len(s.weights)} tokens: "
        f"row 0 gave all its weight to itself, now it gives {1 - s.weights[0, 0]:.1%} to later tokens. "
        f"On average a row puts {future_weight(s.weights).mean():.1%} of its weight on the future. {upstream}"
    )


def future_weight(weights: np.ndarray) -> np.ndarray:
    """Σ_{j>i} α_ij: the weight each query row puts on later tokens, (T,)."""
    return np.triu(weights, k=1).sum(axis=1)


def spoken_list(items: list) -> str:
    """[6] → "6"; [6, 8] → "6 and 8"; [1, 2, 3] → "1, 2 and 3"."""
    words = [str(i) for i in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def sharing(cfg: ModelConfig, head: int) -> str:
    """ "query head 7 reads key/value head 2, shared with heads 6 and 8"
    (grouped-query attention); "" when every head has its own."""
    g = cfg.kv_head(head)
    others = [h for h in group_heads(cfg, g) if h != head]
    if not others:
        return ""
    return (
        f"query head {head} reads key/value head {g}, "
        f"shared with head{'s' if len(others) > 1 else ''} {spoken_list(others)}"
    )


@dataclass(frozen=True)
class Reading:
    """How a family's head reads its input: the names, formulas and notes the One head page shows for it."""

    x_title: str  # the title of X's heatmap
    x_latex: str
    x_text: str
    qkv_latex: str
    qkv_titles: tuple[str, str, str]  # the titles of Q's, K's and V's heatmaps
    qkv_note: str  # RoPE and shared key/value heads ("" for GPT)
    mask_latex: str
    mask_text: str


def reading(cfg: ModelConfig, layer: int, head: int, mask_on: bool = True) -> Reading:
    """What X, Q, K, V and the mask are in this model (GPT: pre-LayerNorm; Llama: pre-RMSNorm, RoPE, shared K/V;
    BERT: post-norm, no causal mask)."""
    g, d = cfg.kv_head(head), f"d_k = {cfg.d_head}"
    if cfg.post_norm:
        before = "the embeddings' LayerNorm" if layer == 0 else f"block {layer - 1}'s last LayerNorm"
        x = (
            f"X = the stream entering layer {layer}",
            (
                r"X = x \in \mathbb{R}^{T \times d_{\mathrm{model}}} \quad "
                r"(\text{post-norm: } x \text{ is already normalized})"
            ),
            (
                "This encoder normalizes *after* each sublayer (post-norm): the stream entering "
                f"layer {layer} is already the output of {before}, so attention reads it as it is."
            ),
        )
    else:
        # (short name, formula, name in a sentence, what it does to each token's vector)
        norm = (
            "RMSNorm 1",
            r"\mathrm{RMSNorm}_1(x) = \frac{x}{\sqrt{\mathrm{mean}(x^2) + \epsilon}} \odot g",
            "RMSNorm 1",
            "divided by its root mean square (no mean taken off), then a learned gain",
        )
        if cfg.norm == "layernorm":
            norm = (
                "LN1",
                r"\mathrm{LN}_1(x)",
                "LayerNorm 1",
                "set to mean 0 and spread 1, then a learned gain and bias",
            )
        x = (
            f"X = {norm[0]} output, layer {layer}",
            rf"X = {norm[1]} \in \mathbb{{R}}^{{T \times d_{{\mathrm{{model}}}}}}",
            (
                f"Attention does not read the raw embeddings: the input of layer {layer}'s "
                f"attention is the residual stream after {norm[2]}: each token's vector {norm[3]}."
            ),
        )
    if cfg.pos_encoding == "rotary":
        qkv_latex = (
            r"Q = R_{\mathrm{pos}}(X W_Q),\quad "
            rf"K = R_{{\mathrm{{pos}}}}(X W_K),\quad V = X W_V \quad (T \times d_k,\ {d})"
        )
        titles = (f"Q after RoPE, head {head}", f"K after RoPE, K/V head {g}", f"V, K/V head {g}")
        note = (
            "This model adds no position vectors: "
            "**RoPE** turns every query and key by an angle that grows with its position (Q = X·W_Q, then rotated). "
            "The Q and K shown are after the rotation: the ones really dotted (see *RoPE and shared heads*)."
        )
    else:
        qkv_latex = rf"Q = X W_Q + b_Q,\quad K = X W_K + b_K,\quad V = X W_V + b_V \quad (T \times d_k,\ {d})"
        titles, note = (f"Q, head {head}", f"K, head {head}", f"V, head {head}"), ""
    shared = sharing(cfg, head)
    if shared:
        note += f" K and V below are those of a shared key/value head: {shared}; all of them meet the same K and V."
    if not cfg.causal:
        no_mask = (
            "An encoder reads the whole sentence at once: no causal mask, "
            "so every token may look at every token, before and after it, and no score becomes −∞."
        )
        mask = (r"\tilde S = S \quad (\text{encoder: no causal mask})", no_mask)
    elif mask_on:
        mask = (
            r"\tilde S_{ij} = \begin{cases} S_{ij} & j \le i \\ -\infty & j > i \end{cases}",
            "A token may not look at later tokens: their scores become −∞ (grey cells; hover says −∞).",
        )
    else:
        mask = (
            r"\tilde S = S \quad (\text{no mask})",
            "Mask off: no score is replaced, every token sees the whole sentence.",
        )
    return Reading(*x, qkv_latex, titles, note.strip(), *mask)


# --- The causal mask: what a decoder loses when it is switched off (the Masking page) ---


def future_table(with_mask: Trace, without: Trace, vocab: list[str], n_rows: int, k: int = 3) -> list[dict]:
    """The first n_rows positions: each token, the actual next token, the top-k next tokens and p(actual next) with and
    without the causal mask, printed by `percent` (tiny ones as 2.7e-7), and how p(actual next) moved as printed."""
    labels, ids, T = with_mask.encoding.labels, with_mask.encoding.ids, len(with_mask.encoding)
    traces = {"with": with_mask, "without": without}
    # (≤ n_rows,)
    p_next = {m: next_token_probs(t["logits"][: n_rows + 1], ids[: n_rows + 1]) for m, t in traces.items()}
    rows = []
    for i in range(n_rows):
        row = {"position": i, "token": labels[i], "actual next token": labels[i + 1] if i + 1 < T else "(end)"}
        for m, t in traces.items():
            row[f"top-{k} {m} mask"] = " · ".join(f"{vocab[j]} {percent(p)}" for j, p in top_tokens(t["logits"][i], k))
        for m in traces:
            row[f"p(actual) {m} mask"] = percent(p_next[m][i]) if i + 1 < T else "—"
        row["as printed"] = MOVES[moved(p_next["with"][i], p_next["without"][i])] if i + 1 < T else "—"
        rows.append(row)
    return rows


MOVES = {1: "higher", -1: "lower", 0: "same"}  # how p(actual next) moved without the mask, as printed


def moved(before: float, after: float) -> int:
    """+1 if `after` prints higher than `before` (lessons.words.percent), −1 if lower, 0 if both print the same."""
    return int(np.sign(shown(after) - shown(before)))


def top_rows(rows: list[dict], k: int = 3) -> list[dict]:
    """future_table's top-k lists, one row per (position, mask): two narrow rows instead of one wide one."""
    return [
        {"position": r["position"], "token": r["token"], "mask": m, f"top-{k}": r[f"top-{k} {m} mask"]}
        for r in rows
        for m in ("with", "without")
    ]


# How the Masking page's grids show future_table (Streamlit column settings as plain dicts: lessons import no
# streamlit). Eight columns do not fit a page column of ~700 px, and a grid cannot wrap text, so the rows are shown
# twice: the probability of the actual next token (short numbers, short headers), then the top-3 lists, the widest, one
# row per position and mask (top_rows). The token stays pinned on the left of both. Probabilities are text, as
# `percent` prints them: a grid's number format cannot switch to 2.7e-7 below 0.1 %.
FUTURE_ORDER = ("position", "token", "actual next token", "p(actual) with mask", "p(actual) without mask", "as printed")
FUTURE_COLUMNS = {
    "position": {"label": "pos", "width": "small"},
    "token": {"pinned": True},
    "actual next token": {"label": "next token"},
    "p(actual) with mask": {"label": "p(next), mask"},
    "p(actual) without mask": {"label": "p(next), no mask"},
    "as printed": {"label": "no mask vs mask", "width": "small"},
    "mask": {"width": "small"},
    "top-3": {"label": "3 most likely next tokens"},
}


@dataclass(frozen=True)
class Changes:
    """What switching the causal mask off changed over a whole text (every position, not only the table's rows)."""

    top1: int  # positions whose most likely next token differs
    rose: int  # positions where p(actual next) prints higher without the mask
    fell: int  # … prints lower
    n: int  # positions that have a next token (T − 1)
    T: int  # tokens


def changes(with_mask: Trace, without: Trace) -> Changes:
    """Without the causal mask: where the most likely next token differs, and where the actual next token's
    probability prints higher or lower (compared as `percent` prints them, so each count can be checked on the
    numbers shown)."""
    top1 = int((np.argmax(with_mask["logits"], axis=-1) != np.argmax(without["logits"], axis=-1)).sum())
    ids = with_mask.encoding.ids
    before, after = next_token_probs(with_mask["logits"], ids), next_token_probs(without["logits"], ids)  # (T−1,)
    signs = [moved(b, a) for b, a in zip(before, after, strict=True)]
    return Changes(top1, signs.count(1), signs.count(-1), len(ids) - 1, len(ids))


# --- The Masking page's words: a decoder (causal and padding masks) or an encoder (padding mask only) ---

WHY_CAUSAL = (
    "In training a decoder predicts the next token at **every** position of a text at once: "
    "if position i could see token i+1, it would copy the answer and learn nothing."
)


@dataclass(frozen=True)
class MaskReading:
    """What the Masking page says about one model. A (kind, message) pair names the Streamlit call that shows the
    message ("markdown" for a decoder's explanation, "info" for an encoder's note
    that the part does not apply to it)."""

    intro: str  # the page's opening paragraph: which masks this model uses
    causal: tuple[str, str]  # part 1, under the causal mask's formula
    before_after: tuple[str, str]  # part 2, over the scores and weights
    unmasked: str  # part 3 for a decoder: what running it without the mask shows
    encoder_style_help: str  # part 4: the help of the "Encoder-style: no causal mask" toggle


def mask_reading(model_name: str, decoder: bool, vocab_size: int) -> MaskReading:
    """The Masking page's texts for a decoder or an encoder (vocab_size: the decoder's vocabulary,
    over which part 3's softmax runs)."""
    kinds = (
        "A decoder like this model uses two masks: the **causal** mask (no peeking at the future) "
        "and, when sentences are batched, the **padding** mask."
    )
    if not decoder:
        kinds = (
            f"**{model_name} is an encoder**: it reads the whole sentence in both directions, "
            "so it uses no causal mask, only the **padding** mask when sentences are batched."
        )
    intro = (
        "Attention lets each token look at other tokens. A **mask** says where it may *not* look: "
        "it adds −∞ to those scores before softmax; e^−∞ = 0, "
        f"so a hidden token gets weight exactly 0 and nothing of it can leak through. {kinds}"
    )
    why = f"{WHY_CAUSAL[0].lower()}{WHY_CAUSAL[1:]}"
    causal = (
        "markdown",
        (
            "Token i may look at itself and every earlier token, never at a later one. "
            f"Why? {WHY_CAUSAL} Move the slider to see what each position may see."
        ),
    )
    before_after = (
        "markdown",
        (
            "Left: the scaled scores, the future included (computed, then thrown away). Middle: "
            "after the mask the future is −∞ (grey). Right: softmax; the grey triangle is exactly 0."
        ),
    )
    encoder_style_help = (
        "Let every token see the whole sentence, as in an encoder (BERT): only the padding mask then guards."
    )
    if not decoder:
        causal = (
            "info",
            (
                "**An encoder uses no causal mask**: every token sees every token. Left, "
                f"for comparison only, the mask a decoder uses; {why} Right: where position i looks."
            ),
        )
        before_after = (
            "info",
            (
                "**Nothing to mask here**: an encoder's scores go into softmax as they are (no −∞, "
                "no grey cells). Left the scaled scores, right the weights: the future is used too."
            ),
        )
        encoder_style_help = f"{model_name} is an encoder: it has no causal mask at all."
    unmasked = (
        "Here the whole model runs again with the causal mask switched off in every layer, and we compare its "
        "next-token predictions. It was trained *with* the mask, so it never learned to use the future: without it, "
        "it reads a context it has never seen, and its predictions change, even at the last position (the earlier "
        f"tokens it reads have changed). Probabilities are the model's softmax over all {vocab_size:,} tokens."
    )
    return MaskReading(intro, causal, before_after, unmasked, encoder_style_help)


def position_words(weights: np.ndarray, pos: int, decoder: bool) -> tuple[str, str]:
    """What position `pos` may see, and where its weight goes (weights (T, T)):
    (the words over its text, the caption under its bars)."""
    T = len(weights)
    later, rest = weights[pos, pos + 1 :].sum(), weights[pos, : pos + 1].sum()
    hidden = T - pos - 1
    seen = (
        f"may see **{pos + 1}** {noun(pos + 1, 'token')}, positions 0–{pos}; "
        f"**{hidden}** later {noun(hidden, 'token is', 'tokens are')} hidden"
    )
    if decoder:
        return (
            f"**Position {pos}** {seen}. The text it may see:",
            f"Weight on the hidden (later) tokens: {later:g}, exactly. The visible ones share {rest:.4f}.",
        )
    return (
        f"**Position {pos}** sees all **{T}** tokens. In a decoder it {seen}; it would see only:",
        f"Weight on later tokens: {later:.4f} (a decoder's: exactly 0).",
    )


def encoder_future_note(model_name: str, weights: np.ndarray, layer: int, head: int) -> str:
    """Part 3 for an encoder: there is no mask to switch off; how much of a row's weight this head puts on later
    tokens, on average (weights (T, T))."""
    future = future_weight(weights)[:-1].mean() if len(weights) > 1 else 0  # the last row has no later token
    return (
        f"**An encoder always sees the future**: {model_name} reads the whole sentence at once, so there is no "
        "causal mask to switch off (and no next-token prediction to compare: it has no language-model head). "
        f"Layer {layer}, head {head} puts on average **{future:.1%}** of a row's weight on later tokens. "
        "The page *Encoder vs decoder* runs one sentence through an encoder and a decoder side by side."
    )


def changes_note(c: Changes, n_rows: int) -> str:
    """What switching the causal mask off changed (see `changes`), in words that follow the counts: a count of 0 is
    said as such, and the table's rows are said to be the first n_rows of the whole text's positions."""
    winner = (
        f"The most likely next token changed at **{c.top1} of {c.T}** positions"
        if c.top1
        else f"The most likely next token changed at **none of the {c.T}** positions"
    )
    same = c.n - c.rose - c.fell
    moves = (
        f"With the future in view, the actual next token became more likely at **{c.rose} of {c.n}** positions, "
        f"less likely at **{c.fell}**, and printed the same at {same} (compared as printed: 2.7e-7 → 3.0e-5 counts "
        f"as more likely, 0.0% → 0.0% would not; the table shows the first {min(n_rows, c.n)})."
    )
    if c.n and c.rose <= c.fell:
        moves += (
            " Seeing the answer did **not** help it: a model trained with the mask never learned to read the future."
        )
    return f"{winner}. {moves} Below, the same head without the mask: now row 0 sees all the tokens too."
