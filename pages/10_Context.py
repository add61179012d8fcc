"""Context changes meaning: the same word in several sentences, its vector compared layer by layer."""

import streamlit as st

import ui
from lessons import context as cx
from lessons.words import quote
from transformer.trace import token_limit
from ui import context, pairs
from ui.caches import context as cached

state = ui.sidebar()
lm = ui.get_model(state.model)
cfg = lm.cfg
read = cx.reading(cfg, lm.tokenizer.byte_level)  # the page's words for this model and its tokenizer
L, H = state.layer, state.head
MAX_SENTENCES = 4
# what the boxes hold until a preset or the reader changes them
FIRST_SENTENCES, FIRST_WORD = next(iter(context.SETS.values()))

st.title("🐻 Context changes meaning")
ui.explain(
    "The embedding gives a token **one** vector, whatever the sentence: "
    "*bears* the animals and *bears* the verb start out identical. Attention then mixes in the surrounding tokens, "
    "block after block, so the same token ends up with a different vector in each sentence. "
    "Here you follow one word through the model in 2 to 4 sentences and measure how far apart its vectors drift."
)
st.latex(read.latex)

with ui.folded("Sentences and word"):
    c1, c2 = st.columns([3, 2])
    context.name_loaded_set("\n".join(FIRST_SENTENCES))  # the preset box names the set the boxes hold, or none
    c1.selectbox(
        "Preset",
        [*context.SETS, context.OWN],
        bind="query-params",
        key="context_set",
        on_change=context.apply_set,
        help="Sentences from the lecture, with a word they share. Editing the box below overrides it.",
    )
    help_box = (
        "These sentences are this page's own; the sidebar's sentence is not used unless you press the button below."
    )
    text = c1.text_area(
        "Sentences, one per line (2 to 4)",
        "\n".join(FIRST_SENTENCES),
        bind="query-params",
        key="context_sentences",
        height=130,
        help=help_box,
    )
    c1.button(
        "Use the sidebar sentence as sentence 1",
        key="context_use_sidebar",
        on_click=context.use_sidebar_sentence,
        args=(state.sentence,),
        help="Replaces the first line with the sentence from the sidebar.",
    )
    help_word = "Matched in each sentence as a whole word, ignoring upper/lower case. The first occurrence is followed."
    word = c2.text_input("Word", FIRST_WORD, bind="query-params", key="context_word", max_chars=40, help=help_word)
    forms = c2.toggle(
        "Longer forms too",
        **ui.kept("context_forms", True),
        help="On: also longer words that start with it (bear → bears, Bears). Off: only the exact word matches.",
    )
    c2.caption(read.followed)
if notice := st.session_state.pop("context_notice", None):
    st.info(notice)

sentences = [s.strip() for s in text.splitlines() if s.strip()]
if len(sentences) < 2:
    st.info("Type at least two sentences, one per line, that share a word; or pick a preset.")
    st.stop()
if len(sentences) > MAX_SENTENCES:
    st.warning(f"You typed {len(sentences)} sentences; the first {MAX_SENTENCES} are compared.")
    sentences = sentences[:MAX_SENTENCES]
if not word.strip():
    st.info("Type the word to follow, e.g. bear.")
    st.stop()

key = ui.BatchKey(state.model, tuple(sentences), state.key.iv, state.key.tau)  # the sentences in one batched pass
vectors = key.untempered  # the word's vectors: τ on the weights shown changes none of them
word, traces = word.strip(), ui.get_traces(vectors)
matches = cached.matches(vectors, word, forms)  # sentence number → where the word is, or None
rows = []  # one table row per sentence
for n, (s, tr) in enumerate(zip(sentences, traces, strict=True), start=1):
    if tr.truncated:
        st.caption(
            f"Sentence {n} is {tr.n_tokens_in:,} tokens long; the model reads only its first {len(tr.encoding)}."
        )
    if matches[n] is None:
        cut = f" (in its first {token_limit(cfg)} tokens, all this app reads)" if tr.truncated else ""
        st.warning(f"Sentence {n} {quote(s)} does not contain the word {quote(word)}{cut}: it is left out.")
    rows.append(cx.match_row(n, s, tr.encoding, matches[n]))
    if matches[n] is not None and matches[n].n_found > 1:
        st.caption(f"Sentence {n} contains the word {matches[n].n_found} times; the first is followed.")
ui.folded("Where the word is found").dataframe(rows, hide_index=True)
found = {n: m for n, m in matches.items() if m is not None}
if len(found) < 2:
    st.info("The word must be in at least two sentences to compare its vectors. Change the word or the sentences.")
    st.stop()

ids = {traces[n - 1].encoding.ids[m.position] for n, m in found.items()}

st.header("1 · How alike are the vectors, layer by layer?")
ui.explain(read.similarity)
st.markdown(cx.tokens_note(ids))
cos_fig, cos, pair_names = cached.cosine_figure(vectors, word, forms)
ui.show_figure(cos_fig, key="context_cosine")
st.markdown(cx.cosine_note(cos, pair_names))  # a result: shown in presenter view too

st.header("2 · Trajectories through the layers")
ui.explain(
    "All these vectors, drawn in the two directions along which they spread the most (PCA). "
    "Each line is one sentence, from its embedding (emb) through the blocks (L0 = after block 0, …). "
    "Lines that start together and then part are the same token taking on different meanings."
)
help_unit = (
    "On: only directions count, as in the cosine above. Off: the vectors as they are; "
    "their lengths differ from layer to layer, which stretches the map."
)
unit = st.toggle("Scale every vector to length 1 first", **ui.kept("context_unit", True), help=help_unit)
pca_fig, explained = cached.pca_figure(vectors, word, forms, unit)
ui.show_figure(pca_fig, key="context_pca")
st.caption(cx.spread_note(explained, len(found) * (cfg.n_layer + 1)))  # (layers + embedding) vectors per sentence
ui.as_trained(state, "The word's vectors, sections 1 and 2")

st.header(f"3 · Where the word looks (layer {L}, head {H})")
ui.explain(read.looks)
st.latex(
    r"\alpha_{ij} = \mathrm{softmax}_j\!\left(\frac{q_i \cdot k_j}{\sqrt{d_k}\,\tau}\right), "
    r"\quad i = \text{the word's token}"
)
bars = {f"context_attn_{n}": cached.attention_figure(key, n, m.position, L, H) for n, m in found.items()}
for row in range(0, len(bars), 2):  # one chart per sentence that holds the word, two to a row (four would be crushed)
    ui.side_by_side(dict(list(bars.items())[row : row + 2]))
if 1 in found:  # sentence 1 against a second sentence, the word's token
    into = {"context_sentences": "{first}\n{second}", "context_word": "{word}"}
    pairs.compare(ui.TraceKey(state.model, sentences[0], key.iv, key.tau), found[1].position, L, H, into=into)
