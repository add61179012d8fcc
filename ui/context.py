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


OWN = "Your own sentences"  # what the preset box shows when the sentence box holds no set


def loaded_set(sentences: str) -> str:
    """The name of the set whose sentences the box holds (blank lines and spaces around a line aside), else OWN: the
    preset box names what is loaded, however it got there (a link, a pair, typing)."""
    lines = [line.strip() for line in sentences.splitlines() if line.strip()]
    return next((name for name, (chosen, _) in SETS.items() if chosen == lines), OWN)


def name_loaded_set(first: str) -> None:
    """Set the preset box to the set the sentence box holds: its value in this session, else the link's, else `first`
    (what the box starts with). Run before the preset box is drawn."""
    held = st.session_state.get("context_sentences", st.query_params.get("context_sentences", first))
    st.session_state["context_set"] = loaded_set(held)


def apply_set() -> None:
    """The chosen set's sentences and word into their boxes (choosing OWN changes nothing)."""
    if (name := st.session_state["context_set"]) in SETS:
        sentences, word = SETS[name]
        st.session_state.update({"context_sentences": "\n".join(sentences), "context_word": word})


def use_sidebar_sentence(sentence: str) -> None:
    """Put the sidebar's sentence, on one line, in place of sentence 1."""
    if not (line := " ".join(sentence.split())):
        st.session_state["context_notice"] = "The sidebar sentence is empty: type one there first."
        return
    st.session_state["context_sentences"] = "\n".join([line, *st.session_state["context_sentences"].splitlines()[1:]])
