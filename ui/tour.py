"""The guided tour's stops (pages/0_Guided_tour.py): ten stops from text to the next token, on one sentence, each
opening a page at the right tab."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from . import presenter

SENTENCE = "The animal didn't cross the street because it was too tired."


@dataclass(frozen=True)
class Stop:
    title: str
    page: str  # the page file
    narration: str
    tab: tuple[str, str] | None = None  # (the page's tabs key, the tab to open)


STOPS = [
    Stop(
        "Text becomes tokens",
        "pages/1_Tokens_and_embeddings.py",
        (
            "The model never sees letters: the sentence is cut into tokens, each a number from its vocabulary. "
            "Each token then becomes a vector, its embedding."
        ),
        ("tokens_part", "1 · Text → tokens"),
    ),
    Stop(
        "Where each token stands",
        "pages/2_Positional_encoding.py",
        (
            "Attention by itself ignores order, so position must be put in. Most models add a pattern "
            "for each position; Llama-style models (SmolLM2) turn queries and keys instead (RoPE)."
        ),
    ),
    Stop(
        "The input of one head",
        "pages/3_One_head.py",
        "Each row is one token's vector as the head receives it. This is all a head knows about the sentence.",
        ("onehead_step", "1 · The input X"),
    ),
    Stop(
        "Queries, keys and values",
        "pages/3_One_head.py",
        (
            "Three learned matrices turn each token into a query (what am I looking for?), "
            "a key (what do I offer?) and a value (what do I pass on?)."
        ),
        ("onehead_step", "2 · Queries, keys, values"),
    ),
    Stop(
        "Scores",
        "pages/3_One_head.py",
        (
            "Every query is compared with every key by a dot product, then divided by √d_k. "
            "A high score means: this key answers this query."
        ),
        ("onehead_step", "3 · Scores and scaling"),
    ),
    Stop(
        "No peeking at the future",
        "pages/4_Masking.py",
        (
            "A decoder writes left to right, so a token may only look at itself and earlier tokens. "
            "The mask sets the later scores to −∞."
        ),
        ("masking_part", "1 · The causal mask"),
    ),
    Stop(
        "Softmax turns scores into weights",
        "pages/5_Softmax_and_temperature.py",
        "Softmax makes each row of scores positive and sum to 1. The temperature decides how sharp the choice is.",
        ("softmax_part", "1 · From scores to weights"),
    ),
    Stop(
        "A weighted sum of values",
        "pages/3_One_head.py",
        (
            "Each token's output is the sum of the values, weighted by its attention. "
            "Follow 'it': which words does it gather from?"
        ),
        ("onehead_step", "5 · One query's weighted sum"),
    ),
    Stop(
        "Many heads at once",
        "pages/7_Multi_head.py",
        "A layer runs several heads side by side, each with its own habit. Their outputs are joined and mixed by W_O.",
        ("multihead_part", "1 · The heads of a layer"),
    ),
    Stop(
        "The next token",
        "pages/9_Next_token.py",
        (
            "After the last block, the model scores every token of its vocabulary. "
            "Softmax gives the probability of each next token."
        ),
    ),
]
INDEX_KEY = "tour_stop"


def open_stop(stop: Stop) -> None:
    """Set the tour's sentence and the stop's tab, then open its page (at the start of the next run)."""
    st.session_state["atlas_sentence"] = SENTENCE
    if stop.tab is not None:
        st.session_state[stop.tab[0]] = stop.tab[1]
    st.session_state[presenter.GOTO_KEY] = stop.page


def move(delta: int) -> None:
    """The next (delta = 1) or previous (-1) stop."""
    st.session_state[INDEX_KEY] = min(max(st.session_state.get(INDEX_KEY, 1) + delta, 1), len(STOPS))
