"""What the cross-attention page computes from a translation's trace: one part's attention weights (per head or
averaged), how closely they follow the gold alignment, the decoding steps as table rows, one cross-attention head's
Q, K, V and scores; and the page's texts that depend on the model and on what is shown."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer.cards import parameter_count
from transformer.data import phrases as td
from transformer.decoding import TranslationTrace
from transformer.families.seq2seq import PARTS, Seq2Seq
from transformer.train_translator import alignment_agreement
from transformer.vocabulary import SourceText

from .words import percent

PRESETS = {  # phrases that show reordering, agreement and elision
    "European Economic Area (the order flips)": "the european economic area",
    "The big red car": "the big red car",
    "An old man and a beautiful tree": "an old man sees a beautiful tree",
    "Plural agreement": "my two black cats eat the white cheeses",
    "Elision: l', cet, mon": "this old hotel behind the tree",
    "A central bank": "the national central bank",
}
DEFAULT = PRESETS["European Economic Area (the order flips)"]
MEAN_LAYERS, MEAN_HEADS = "mean of all layers", "mean of the heads"  # the options that average instead of picking one


def weights(tr: TranslationTrace, part: str, layer: int | None, head: int | None) -> np.ndarray:
    """Attention weights of a part ("encoder", "decoder" or "cross"), (rows, cols): one head of a layer,
    the mean of the layer's heads (head None), or the mean over every layer too (layer None)."""
    name = {
        "encoder": "encoder.blocks.{}.attn",
        "decoder": "decoder.blocks.{}.attn",
        "cross": "decoder.blocks.{}.cross_attn",
    }[part]
    layers = range(tr.n_layer) if layer is None else [layer]
    stack = np.stack([tr[name.format(lay) + ".hook_pattern"] for lay in layers])  # (layers, nh, rows, cols)
    return (stack.mean(axis=(0, 1)) if head is None else stack[:, head].mean(axis=0)).astype(np.float32)


def choice(option: int | str) -> int | None:
    """A layer or a head picked from a list of numbers and MEAN_LAYERS or MEAN_HEADS (None: the mean)."""
    return None if option in (MEAN_LAYERS, MEAN_HEADS) else int(option)


def head_names(n_layer: int, n_head: int) -> list[str]:
    """Every head of the translator as "part L{layer} H{head}" ("cross L2 H0"; 'cross' = cross-attention)."""
    return [f"{part} L{layer} H{h}" for part in PARTS for layer in range(n_layer) for h in range(n_head)]


def parse_heads(names: list[str]) -> tuple[tuple[str, int, int], ...]:
    """Names from head_names back to (part, layer, head)."""
    return tuple((part, int(layer[1:]), int(h[1:])) for part, layer, h in (name.split() for name in names))


def reference(tr: TranslationTrace) -> tuple[td.Pair | None, tuple[tuple[int, int], ...]]:
    """The rule-based translation of the source (None outside the task's grammar), and its gold alignment, (source,
    target) index pairs, when the model wrote exactly that translation (else ())."""
    ref = td.reference(list(tr.source))
    return ref, (ref.alignment if ref is not None and ref.target == tr.output else ())


def agreement(tr: TranslationTrace, gold: tuple[tuple[int, int], ...], shown: np.ndarray) -> tuple[float, np.ndarray]:
    """The fraction of French words whose most-weighted English word is a gold-aligned one ([EOS] not counted): of the
    weights shown (T, S), and of every cross-attention head, (n_layer, nh)."""
    n = len(tr.output)  # the rows that write a French word
    patterns = [tr[f"decoder.blocks.{layer}.cross_attn.hook_pattern"] for layer in range(tr.n_layer)]  # (nh, T, S) each
    per_head = np.stack([alignment_agreement(pattern, gold, n) for pattern in patterns])  # (n_layer, nh)
    return float(alignment_agreement(shown[None], gold, n)[0]), per_head


def step_rows(tr: TranslationTrace) -> list[dict]:
    """One row per decoding step: the word it read, the word it wrote and its probability, the next best words."""
    rows = []
    for i, s in enumerate(tr.steps):
        next_best = " · ".join(f"{w} {percent(p)}" for w, p in s.top[1:])
        rows.append(
            {
                "step": i + 1,
                "reads (last word)": s.read,
                "writes": s.word,
                "probability": s.top[0][1],
                "next best": next_best,
            }
        )
    return rows


@dataclass(frozen=True)
class CrossHead:
    """One cross-attention head: queries from the decoder, keys and values from the encoder, and their scores."""

    q: np.ndarray  # (T, d_head) one row per French position
    k: np.ndarray  # (S, d_head) one row per English word
    v: np.ndarray  # (S, d_head)
    scores: np.ndarray  # (T, S) Q·Kᵀ / √d_k / τ: nothing masked


def cross_head(tr: TranslationTrace, layer: int, head: int) -> CrossHead:
    """Q, K, V and the scaled scores of one cross-attention head, read from the trace."""
    c = f"decoder.blocks.{layer}.cross_attn."
    return CrossHead(
        tr[c + "hook_q"][:, head],
        tr[c + "hook_k"][:, head],
        tr[c + "hook_v"][:, head],
        tr[c + "hook_scores_scaled"][head],
    )


def future(tr: TranslationTrace, layer: int) -> np.ndarray:
    """(T, T) True where a decoder position may not look (score −∞ before softmax): the same mask in every head."""
    return np.isneginf(tr[f"decoder.blocks.{layer}.attn.hook_scores_masked"][0])  # (T, T)


# --- the page's texts ---


def intro(model: Seq2Seq) -> str:
    """What an encoder–decoder does, with the size of this translator."""
    cfg = model.cfg
    return (
        "The original transformer was built to **translate**. Its **encoder** reads the whole English phrase "
        "(every word may look at every other word); its **decoder** writes the French one word at a time, "
        "looking back at the French written so far (masked self-attention) "
        "and at the English words through **cross-attention**. This is a small translator trained for this app: "
        f"{parameter_count(model):,} parameters, {cfg.n_layer} encoder + {cfg.n_layer} "
        f"decoder blocks of {cfg.n_head} heads; it knows only its lexicon of {cfg.n_source} English words."
    )


def unknown_words(src: SourceText) -> str:
    """The typed words outside the lexicon, each with its close matches."""
    listed = ", ".join(
        f"`{w}`" + (f" (did you mean {' / '.join(f'`{m}`' for m in matches)}?)" if matches else "")
        for w, matches in src.unknown
    )
    return f"Not in the translator's lexicon, so left out: {listed}."


@dataclass(frozen=True)
class Reading:
    """The page's explanations of what it shows."""

    where: str  # the weights shown, for titles: "layer 2, mean of the heads"
    reference: str  # the reference translation, or why there is none
    alignment: str  # how to read the T × S map
    agreement: str
    decoding: str
    others: str  # the encoder's and the decoder's self-attention
    weights_note: str  # whether the weights recorded are those the steps used
    caveat: str


def reading(
    ref: td.Pair | None, gold: tuple[tuple[int, int], ...], layer: int | None, head: int | None, causal: bool
) -> Reading:
    """The explanations for a translation with reference translation `ref` and gold alignment `gold` (see `reference`),
    the weights of `layer` and `head` (None: their mean) and the decoder's causal mask on or off."""
    where = ("all layers" if layer is None else f"layer {layer}") + (
        ", mean of the heads" if head is None else f", head {head}"
    )
    if ref is None:
        reference = (
            "This phrase does not fit the grammar of the phrases the translator learned "
            "from ([determiner] [number] [adjectives] noun, then optionally a verb and a second noun phrase, "
            "then optionally a preposition and a third), so there is no reference translation and no gold alignment."
        )
    elif gold:
        reference = f"Same as the reference translation: {ref.french_text}"
    else:
        reference = (
            f"The reference translation is “{ref.french_text}”: the model's differs, "
            "so the gold alignment cannot be laid over its words."
        )
    alignment = (
        "**Y**: the decoder's vectors, one per French position (T rows); **M**: the encoder's output, "
        "one per English word (S rows). The weights form a T × S table: row = a French word being written, "
        "column = an English word, a bright cell = *to write this word, the decoder read mostly that one*. "
        "A trained translator's cross-attention often traces the word alignment, "
        "even where French changes the order: *European economic area* → *zone économique européenne*. "
        "Red squares mark the **gold alignment**: which English word each French word translates."
    )
    agreement = (
        "For each French word i, take the English word j it gives the most weight α_ij; the agreement is "
        "the fraction of French words where that is a gold-aligned word, gold(i) ([EOS] is not counted)."
    )
    decoding = (
        "The decoder starts from a start token [BOS]. At each step it reads everything written so far, "
        "computes a probability for every word of its vocabulary, and writes the most likely one (greedy decoding). "
        "It stops when it writes the end token [EOS]. Each row of the map above is one of these steps."
    )
    others = (
        f"**Encoder self-attention** ({where}): English words look at English words, "
        "with no mask — every cell may be filled. **Decoder masked self-attention**: each French position "
        "looks only at itself and the positions before it; the grey triangle is −∞ before softmax, "
        "so weight exactly 0. Rows of the decoder are labelled by the word each position *reads*."
    )
    if causal:
        weights_note = (
            "The weights are those of one pass over the whole translation; with the causal mask on, "
            "position i sees exactly what step i saw, so they are the weights of that step."
        )
    else:
        weights_note = (
            "Mask off: the choices were made step by step, but in the pass shown here earlier "
            "positions could see later French words, so the weights differ from those the steps used."
        )
    caveat = (
        "Attention weights show where information flows, not a full explanation of a choice. "
        "Compare the layers in section 1: to write “la” or “les” the decoder also needs the noun's gender "
        "and number, and in this model the first layer's cross-attention often reads the noun for that, "
        "while the last layer reads the English word being translated."
    )
    return Reading(where, reference, alignment, agreement, decoding, others, weights_note, caveat)


def qkv_text(tr: TranslationTrace, layer: int, head: int) -> str:
    """Where a cross-attention head's Q, K and V come from, with their sizes."""
    return (
        "In self-attention, Q, K and V are three projections of the **same** sequence. "
        "In cross-attention the **query** comes from the decoder — *which English word do I "
        "need to write my next French word?* — while the **keys** (what each English word offers to be found by) "
        "and the **values** (what it passes on) come from the encoder's output. "
        f"For layer {layer}, head {head}: Q has one row per French position ({len(tr.written)}), "
        f"K and V one row per English word ({len(tr.source)}); the scores Q·Kᵀ form the rectangle of section 1, "
        "and none of them is masked: from its first step the decoder may look at any English word, even the last."
    )


def step_text(tr: TranslationTrace, step: int) -> str:
    """What the decoder had written before `step` (1-based) and what it wrote then."""
    s = tr.steps[step - 1]
    return (
        f"Step {step}: having written **{td.french_text(tr.output[: step - 1]) or '(nothing yet)'}**, "
        f"the decoder writes **{s.word}** ({percent(s.top[0][1])})."
    )
