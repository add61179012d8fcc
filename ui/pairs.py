"""The minimal-pair section: a page that shows one sentence's attention adds a second sentence that differs in a word,
and sees how much every head's row for one token changes (lessons/pairs.py). One folded section, called by One head,
Multi-head, Context and Encoder vs decoder with the trace key of their sentence and their chosen token, layer and head.

When the word that differs comes after the token in a decoder, no head can change (the causal mask hides it): the
section says so, and shows the encoder (MiniLM) on the same pair instead, when the app has one.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import streamlit as st

from lessons import encoder_decoder as ed
from lessons import pairs
from lessons.heads import head_name
from lessons.words import quote
from transformer import Interventions, TraceInputError
from transformer.trace import MAX_CHARS, token_limit

from .caches import pairs as cached
from .models import TraceKey, get_model, get_trace, models_of
from .page import PAGE_CONTROL, choice, explain, show_figure, token_names
from .state import PRESETS as SENTENCES

TROPHY = "The trophy doesn't fit in the suitcase because it is too big."
ANIMAL = SENTENCES["The animal and the street"]
# name: (first sentence, second sentence, the token followed and the target (words of the first sentence), and the
# weight the target should get in sentence 2 from a head that follows the meaning: "it" is the suitcase, the street)
PRESETS = {
    "Trophy: too big / too small": (TROPHY, TROPHY.replace("big", "small"), "it", "trophy", "less"),
    "Animal: too tired / too wide": (ANIMAL, ANIMAL.replace("tired", "wide"), "it", "animal", "less"),
    "Bank: river / money": (SENTENCES["River bank"], SENTENCES["Money bank"], "bank", None, None),
    **{
        f"Bears: {a} / {b}": (SENTENCES[a], SENTENCES[b], "bears", None, None)
        for a, b in (
            ("I love bears", "She bears the pain"),
            ("I love bears", "Bears won the game"),
            ("She bears the pain", "Bears won the game"),
        )
    },
}
INTO = {"atlas_sentence": "{first}"}  # where a preset's sentences go on most pages: the sidebar's sentence
ROWS = {"page": "the page's head", "changed": "the most changed head", "best": "the best head"}


def apply_preset(into: dict[str, str]) -> None:
    """The chosen pair: its first sentence where the page reads its sentence (`into`: session key → template over
    first, second and word), its second in the box; its token and target are picked once the first is traced."""
    name = st.session_state["pairs_preset"]
    if name in PRESETS:
        first, second, word, target, _ = PRESETS[name]
        st.session_state.update({k: v.format(first=first, second=second, word=word) for k, v in into.items()})
        st.session_state.update(pairs_second=second, pairs_pending=(first, word, target))


def compare(
    key: TraceKey, token: int, layer: int, head: int, target: int | None = None, into: dict[str, str] = INTO
) -> None:
    """The folded section "Compare with a second sentence", under a page's view of key's trace (its token, layer,
    head and target, positions in that trace). Nothing runs while it is folded."""
    box = st.expander("Compare with a second sentence", key="pairs_open", on_change="rerun", bind="query-params")
    if box.open:
        with box:
            _section(key, token, layer, head, target, into)


def _section(key: TraceKey, token: int, layer: int, head: int, target: int | None, into: dict[str, str]) -> None:
    c1, c2 = st.columns([3, 2])
    c2.selectbox(
        "Pairs",
        ["(choose)", *PRESETS],
        key="pairs_preset",
        on_change=apply_preset,
        args=(into,),
        help="Sentence pairs from the lecture: each sets the page's sentence and the second one.",
    )
    second = c1.text_area(
        "Second sentence",
        key="pairs_second",
        value="",
        max_chars=MAX_CHARS,
        height=68,
        **PAGE_CONTROL,
        help="The page's sentence with a word changed: every head's row for the chosen token is compared.",
    )[:MAX_CHARS]
    if not second:
        st.info("Type a second sentence that differs from the page's in a word, or pick a pair.")
        return
    if second == key.text:
        st.info("The second sentence is the page's sentence: change a word in it.")
        return
    key_b = replace(key, text=second)
    try:
        tr_a, tr_b = get_trace(key), get_trace(key_b)
    except TraceInputError as err:
        st.info(f"Second sentence: {err}")
        return
    if tr_b.truncated:
        limit = token_limit(get_model(key.model).cfg)
        st.warning(f"The second sentence is {tr_b.n_tokens_in:,} tokens long; the model reads its first {limit}.")
    labels, T = tr_a.encoding.labels, len(tr_a.encoding)
    _follow(key.text, tr_a.encoding, min(token, T - 1), target)
    c1, c2 = st.columns(2)
    token = c1.selectbox(
        "Token",
        range(T),
        format_func=token_names(labels),
        key="pairs_token",
        help="Whose attention row is compared, in the page's sentence (and the same place in the second).",
    )
    target = c2.selectbox(
        "Target token",
        [-1, *range(T)],
        format_func=token_names(labels, every="(none)"),
        key="pairs_target",
        help="A token whose weight is compared too; the best head is the one that gives it the most weight.",
    )
    target = None if target < 0 else target
    c = cached.comparison(key, key_b, token, target)
    if c is None:
        st.info(f"{quote(labels[token])} has no counterpart in the second sentence: choose a token both share.")
        return
    if c.blind:
        word_a, word_b = pairs.changed_words(key.text, second)
        said = pairs.blind_text(labels[token], word_a, word_b) + f" (the largest change is {c.tv.max():g})"
        encoder = _encoder_key(key)
        if encoder is None:
            st.info(said + ". No encoder is installed here to show instead.")
            return
        st.info(said + f". Here is the encoder, {ed.short_name(encoder.model)}, where every token sees both sides:")
        enc = get_trace(encoder)
        token, target = (
            None if p is None else pairs.same_place(tr_a.encoding, p, enc.encoding) for p in (token, target)
        )
        key, key_b = encoder, replace(encoder, text=second)
        c = None if token is None else cached.comparison(key, key_b, token, target)
        if c is None:
            st.info("The encoder's tokens hold no counterpart of this token in the second sentence.")
            return
        _show(key, key_b, c, enc.encoding.labels, None)  # the page's layer and head are the decoder's
    else:
        _show(key, key_b, c, labels, (layer, head))


def _show(key: TraceKey, key_b: TraceKey, c: pairs.Comparison, labels, page: tuple[int, int] | None) -> None:
    """The ranking, the best head with its control, and the two rows of one head (the page's, when it is of this
    model; the most changed; the best)."""
    explain(
        "For every head, the chosen token's row in each sentence, compared: the **total variation** "
        "½ Σ |α₁ − α₂| is the share of weight that moved (0: the same row, 1: nothing in common)."
    )
    st.markdown(pairs.ranking_text(c))
    show_figure(cached.ranking_figure(key, key_b, c.a, c.target_a), key="pairs_ranking")
    choices = {"page": page, "changed": c.ranking()[0]} if page else {"changed": c.ranking()[0]}
    if c.target_a is not None:
        expected = _expected(key.text, key_b.text, labels[c.target_a])
        st.markdown(pairs.best_head_text(c, labels[c.a], labels[c.target_a], expected))
        choices["best"] = c.best_head()
    shown = next(iter(choices))
    if len(choices) > 1:
        shown = st.radio(
            "Rows of", list(choices), format_func=functools.partial(_head_choice, choices), horizontal=True,
            **choice("pairs_rows", list(choices), "best" if "best" in choices else "changed"),
        )
    show_figure(cached.rows_figure(key, key_b, c.a, c.target_a, *choices[shown]), key="pairs_rows_chart")


def _expected(first: str, second: str, target: str) -> str | None:
    """The way a preset pair says its target's weight should go in sentence 2, when these are its sentences and its
    target (None otherwise)."""
    for a, b, _, aim, expected in PRESETS.values():
        if (a, b) == (first, second) and aim and target.lstrip("␣").lower() == aim:
            return expected
    return None


def _head_choice(choices: dict, kind: str) -> str:
    return f"{ROWS[kind]} ({head_name(*choices[kind])})"


def _follow(text: str, enc, token: int, target: int | None) -> None:
    """Set the section's token and target (pairs_token, pairs_target: -1 for none) to the page's, or after a preset to
    its words in the first sentence. The section's own choice is kept until the page's token, target or sentence
    changes."""
    page = (text, token, target)
    if st.session_state.get("pairs_page") != page:  # the page moved: follow it
        st.session_state.update(pairs_page=page, pairs_token=token, pairs_target=-1 if target is None else target)
    pending = st.session_state.get("pairs_pending")
    if pending and pending[0] == text:
        del st.session_state["pairs_pending"]
        found = pairs.word_token(enc, pending[1])
        aimed = pairs.word_token(enc, pending[2]) if pending[2] else None
        if found is not None:
            st.session_state.update(pairs_token=found, pairs_target=-1 if aimed is None else aimed)


def _encoder_key(key: TraceKey) -> TraceKey | None:
    """The same text through the app's encoder (MiniLM when installed), at the page's τ; None when there is none."""
    encoders = models_of("bert")
    if not encoders:
        return None
    name = ed.ENCODER if ed.ENCODER in encoders else encoders[0]
    return TraceKey(name, key.text, Interventions(temperature=key.iv.temperature), key.tau)
