"""Streamlit glue of the Encoder–decoder page's phrase box: examples, a held-out phrase, the link's phrase, and the
messages about words the translator does not know."""

from __future__ import annotations

import streamlit as st

from lessons import cross_attention as xa
from lessons.words import noun
from transformer.errors import SourceInputError
from transformer.loading import LoadedModel
from transformer.vocabulary import MAX_SOURCE_CHARS, SourceText

from .caches import translator as cached

N_EXAMPLES = 100  # held-out phrases the "new phrase" button cycles through


def phrase_from_link() -> None:
    """On a session's first run, the phrase box starts with the link's phrase (or the default one)."""
    if "xattn_phrase" not in st.session_state:
        st.session_state["xattn_phrase"] = str(st.query_params.get("phrase", xa.DEFAULT))[: MAX_SOURCE_CHARS]


def set_phrase(text: str) -> None:
    st.session_state["xattn_phrase"] = text


def apply_preset() -> None:
    if st.session_state["xattn_preset"] in xa.PRESETS:
        set_phrase(xa.PRESETS[st.session_state["xattn_preset"]])


def draw_example(data_seed: int) -> None:
    n = st.session_state.get("xattn_draws", 0)
    st.session_state["xattn_draws"] = n + 1
    set_phrase(" ".join(cached.held_out_phrases(N_EXAMPLES, data_seed)[n % N_EXAMPLES].source))


def phrase_input(lt: LoadedModel) -> SourceText:
    """The phrase box with its example picker and held-out button; the phrase as the translator reads it. Stops the
    page, with a message, when no word of it can be read."""
    c1, c2, c3 = st.columns([1.8, 2.6, 1.6], vertical_alignment="bottom")
    c1.selectbox(
        "Example phrases",
        ["(choose)", *xa.PRESETS],
        bind="query-params",
        key="xattn_preset",
        on_change=apply_preset,
        help="Phrases that show reordering, agreement and elision.",
    )
    help_phrase = "Lower or upper case; punctuation is skipped. Words outside the lexicon are flagged and left out."
    phrase = c2.text_input("English phrase", key="xattn_phrase", max_chars=MAX_SOURCE_CHARS, help=help_phrase)
    help_new = "A phrase made by the same rules as the training phrases, but never used in training."
    c3.button(
        "A phrase it never saw",
        key="xattn_random",
        on_click=draw_example,
        args=(lt.meta.get("data_seed", 0),),
        help=help_new,
    )
    st.query_params["phrase"] = phrase  # the link's phrase (read by phrase_from_link), written on every run
    try:
        src = cached.read_phrase(phrase)
    except SourceInputError as err:
        st.info(f"{err} Pick an example above.")
        st.stop()
    if src.unknown:
        st.warning(xa.unknown_words(src))
        if src.suggested and src.suggested != src.words:
            fix = " ".join(src.suggested)
            st.button(
                f"Use “{fix}”",
                key="xattn_fix",
                on_click=set_phrase,
                args=(fix,),
                help="Replace each unknown word by its closest lexicon word.",
            )
    if not src.words:
        st.info(
            "None of these words is in the translator's English lexicon. "
            "Pick an example above, or try “the big red car”."
        )
        st.stop()
    if src.cut:
        st.warning(
            f"The phrase has {src.n_known} known words; "
            f"the translator reads at most {lt.cfg.n_ctx}, so it reads the first {len(src.words)}."
        )
    if src.n_ignored:
        st.caption(
            f"{src.n_ignored} "
            f"{noun(src.n_ignored, 'punctuation mark or symbol', 'punctuation marks or symbols')} skipped."
        )
    return src
