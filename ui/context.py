"""The Context page's sentence sets and the callbacks of its controls (pages/10_Context.py). A widget's callback lives
in a module, not in the page file: Streamlit keeps it with the session's widgets, and a page's function would hold the
page's globals, its traces among them."""

from __future__ import annotations

import streamlit as st

from .state import PRESETS

SETS = {  # preset: (sentences, word)
    "The four “bear” sentences": (
        [PRESETS[k] for k in ("I love bears", "She bears the pain", "Bears won the game", "Bear country")],
        "bear",
    ),
    "River bank vs money bank": ([PRESETS["River bank"], PRESETS["Money bank"]], "bank"),
    "Time flies vs fruit flies": ([PRESETS["Time flies"], PRESETS["Fruit flies"]], "flies"),
}


def apply_set() -> None:
    """The chosen set's sentences and word into their boxes."""
    sentences, word = SETS[st.session_state["context_set"]]
    st.session_state.update({"context_sentences": "\n".join(sentences), "context_word": word})


def use_sidebar_sentence(sentence: str) -> None:
    """Put the sidebar's sentence, on one line, in place of sentence 1."""
    if not (line := " ".join(sentence.split())):
        st.session_state["context_notice"] = "The sidebar sentence is empty: type one there first."
        return
    st.session_state["context_sentences"] = "\n".join([line, *st.session_state["context_sentences"].splitlines()[1:]])
