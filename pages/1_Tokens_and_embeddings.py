"""Tokens & embeddings: text → sub-word tokens → one learned vector per token."""

import streamlit as st

import ui
from figures.embeddings import shown_chars
from lessons import embedding_space as es
from lessons.words import noun
from ui.caches import embeddings as cached

state = ui.sidebar()
lm = ui.get_model(state.model)
tok, cfg = lm.tokenizer, lm.cfg
bpe = tok.byte_level  # byte-level BPE (GPT-2, SmolLM2); else WordPiece (BERT)
words = es.analogy_words(tok)  # the default a − b + c of this vocabulary
read = es.reading(tok, cfg.d_model, words)  # the page's words for this tokenizer

st.title("Tokens and embeddings")
ui.explain(read.intro)

key = state.key.untempered  # the trace's key (embeddings only: τ on the weights changes nothing here)
tr = ui.trace_or_stop(key)
enc, labels, T = tr.encoding, tr.encoding.labels, len(tr.encoding)


def sentence_figures():
    """The chips, the embedding rows and their cosines (one cached call)."""
    return cached.sentence_figures(key, ui.drawn_narrow("tokens_chips"))  # a phone: shorter rows of chips


def chips() -> None:
    ui.explain(read.chips)
    st.caption(f"{T} tokens from {len(enc.text):,} characters; the vocabulary has {tok.vocab_size:,} tokens.")
    ui.show_figure(sentence_figures()[0], key="tokens_chips")
    with st.expander("The same tokens as a table"):
        chars = [shown_chars(enc.text[s:e]) for s, e in enc.offsets]
        st.dataframe(
            {"position": range(T), "token": labels, "id": enc.ids, "characters": chars},
            hide_index=True,
            height=min(38 + 35 * T, 400),
        )


def vectors() -> None:
    ui.explain(
        f"The embedding is a lookup: token id *i* picks row *i* of $W_E$ (shape {tok.vocab_size:,} × {cfg.d_model}). "
        "Multiplying a one-hot vector by $W_E$ says the same thing. "
        "The vector is the same wherever the token appears: there is no context yet."
    )
    st.latex(r"x_t = W_E[\mathrm{id}_t] = \mathrm{onehot}(\mathrm{id}_t)\,W_E \in \mathbb{R}^{d_{model}}")
    ui.show_figure(sentence_figures()[1], key="tokens_embed")
    if n_repeated := T - len(set(enc.ids)):
        st.caption(
            f"Your sentence has {n_repeated} repeated {noun(n_repeated, 'token')}: "
            "each copy keeps its own row, and the rows are identical, because the lookup ignores context."
        )
    ui.explain(read.bank)


def space_map() -> None:
    ui.explain(read.map)
    c1, c2 = st.columns([3, 1])
    n_vocab = n_max = len(es.merged_ids(tok))
    if n_max > 50:  # a real vocabulary; a toy one is drawn whole
        help_n = "How many frequent vocabulary tokens to draw behind your sentence; the PCA is fitted on them."
        hi = min(3000, n_max)
        n_vocab = c1.slider(
            "Vocabulary tokens in the map (N)",
            50,
            hi,
            step=50,
            **ui.kept_within("tokens_n_vocab", 500, 50, hi),
            help=help_n,
        )
    help_3d = "Show three principal components instead of two (drag to rotate)."
    k_dims = 3 if c2.toggle("3-D", **ui.kept("tokens_pca_3d", False), help=help_3d) else 2
    map_fig, shown_share = cached.map_figure(key, n_vocab, k_dims)
    ui.show_figure(map_fig, key="tokens_pca")
    st.caption(
        f"These {k_dims} directions hold {100 * shown_share:.1f}% of the spread of the {n_vocab} vocabulary vectors; "
        "the rest is hidden, so points that look close may be far apart."
    )


def cosine() -> None:
    ui.explain(
        "How alike are two vectors? Cosine similarity compares their directions: "
        "1 = same direction, 0 = unrelated (at right angles), −1 = opposite. It ignores length."
    )
    st.latex(r"\cos(a, b) = \frac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}")
    ui.show_figure(sentence_figures()[2], key="tokens_cosine")


def neighbours() -> None:
    ui.explain(
        "Pick a token of your sentence: these are the vocabulary tokens whose "
        "vectors point most nearly the same way (highest cosine over all of $W_E$)."
    )
    c1, c2 = st.columns([2, 1])
    query = c1.selectbox(
        "Token",
        range(T),
        format_func=ui.token_names(labels),
        **ui.choice("tokens_query", range(T), max(range(T), key=lambda p: len(labels[p]))),
        help="A position in your sentence; its token's neighbours are listed.",
    )  # a word rather than punctuation, by default
    k = c2.slider("Neighbours (k)", 3, 30, **ui.kept("tokens_k", 10), help="How many nearest tokens to list.")
    ui.show_figure(cached.neighbours_figure(state.model, enc.ids[query], k, labels[query]), key="tokens_neighbours")


def analogy() -> None:
    # another model: its own default words
    if st.session_state.setdefault("tokens_analogy_model", state.model) != state.model:
        st.session_state.update({"tokens_analogy_model": state.model, **es.analogy_state(words)})
    ui.explain(read.analogy)
    st.latex(r"v = \hat w_a - \hat w_b + \hat w_c, \qquad \text{answer} = \arg\max_{t \notin \{a,b,c\}} \cos(v, w_t)")
    with ui.after_figures("tokens_analogy_inputs"):  # presenter view: under the chart, which then fits
        for col, preset in zip(st.columns(2) * 2, es.ANALOGIES, strict=True):  # two a row: each label whole on a laptop
            col.button(
                "{} − {} + {} → {}".format(*preset),
                key=f"tokens_analogy_preset_{preset[0]}_{preset[1]}",
                on_click=st.session_state.update,
                args=(es.analogy_state(preset),),
                help="Fill the boxes with this analogy and its expected answer.",
            )
        columns = st.columns(4)
        boxes = {
            name: col.text_input(
                name,
                **ui.kept(f"tokens_analogy_{name}", word),
                max_chars=40,
                help=f"A token of the vocabulary (box {name}).",
            )
            for col, name, word in zip(columns, "abc", words, strict=False)
        }
        expected = columns[3].text_input(
            "expected (optional)",
            **ui.kept("tokens_analogy_expected", words[3]),
            max_chars=40,
            help="The answer the analogy should give: its rank among the nearest tokens is reported.",
        )
        c1, c2 = st.columns([2, 1])
        space_help = (
            "BPE treats ' king' (after a space) and 'king' (at the start of a line) "
            "as different tokens. Ticked: a space is put before each word."
        )
        space = bpe and c1.checkbox(
            "Words inside a sentence (add a leading space)", **ui.kept("tokens_analogy_space", True), help=space_help
        )
        if not bpe:
            c1.caption("WordPiece has no leading-space tokens: a word is the same token wherever it stands.")
        k_analogy = c2.slider(
            "Tokens to list", 3, 30, **ui.kept("tokens_analogy_k", 10), help="How many nearest tokens to list."
        )
    ids, bad = es.read_words(tok, boxes, space)
    for name, pieces in bad.items():
        st.warning(
            f"Box {name} must be ONE token of the vocabulary, but it splits into {len(pieces)}:"
            if pieces
            else f"Box {name} is empty: type one word."
        )
        if pieces:
            st.code(" + ".join(pieces), language=None)
    if bad:
        st.info("Fix the boxes above to see the nearest tokens.")
    else:
        typed = tuple(boxes[n].strip() for n in "abc")
        fig, top, rank = cached.analogy_figure(state.model, tuple(ids[n] for n in "abc"), typed, expected, k_analogy)
        ui.show_figure(fig, key="tokens_analogy")
        kind, verdict = es.analogy_verdict(typed, top, expected, rank, k_analogy)  # a result: in presenter view too
        getattr(st, kind)(verdict)
        st.caption("Left out of the answers: a, b and c in every spelling (case, leading space, plural -s/-es).")
    small = lm.name == "shakespeare-gpt"  # the small model: no answer worth quoting
    answer = None if small else cached.analogy_answer(state.model, words[:3])
    st.caption(es.analogy_note(lm.name, words, answer))


PARTS = {
    "1 · Text → tokens": chips,
    "2 · Tokens → vectors": vectors,
    "3 · A map of the space": space_map,
    "4 · Cosine similarity": cosine,
    "5 · Nearest neighbours": neighbours,
    "6 · a − b + c": analogy,
}
ui.lazy_tabs(PARTS, "tokens_part")  # only the open part runs and is sent
