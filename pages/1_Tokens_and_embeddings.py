"""Tokens & embeddings: text → sub-word tokens → one learned vector per token."""

import streamlit as st

import ui
from figures.embeddings import neighbour_bars, shown_chars
from lessons.embedding_space import NotOneToken, analogy, merged_ids, nearest, single_token_id
from ui import cached

st.set_page_config(page_title="Tokens & embeddings · Attention Atlas", page_icon="🧭", layout="wide")
state = ui.sidebar()
lm = ui.get_model(state.model)


st.title("Tokens and embeddings")
st.markdown(
    "A transformer never sees letters. A **tokenizer** first cuts the text into pieces from a fixed "
    "vocabulary learned from the training text (byte-pair encoding, BPE): common words are one piece, "
    'rare words are split into several ("hiking" may become "␣h" + "i" + "king"). Each piece has a '
    "number, its **id**. Then an **embedding matrix** $W_E$ turns every id into a vector of numbers — "
    "one row of $W_E$ per vocabulary token, learned during training."
)

tr = ui.trace_or_stop(state)
enc = tr.encoding
labels = enc.labels
T = len(enc)
chips_fig, embed_fig, cosine_fig = cached.sentence_figures(state.model, state.sentence, tr)

st.header("1. Text → tokens")
st.markdown(
    "Each chip is one token: its text on top (␣ marks a space, ↵ a new line) and its id below. "
    "Hover a chip to see which characters of your text it covers. A token like `<F0>` holds one "
    "byte of a character that needs several (an emoji, an Arabic letter): byte-level BPE can write "
    "*any* text, even characters it never saw."
)
st.caption(f"{T} tokens from {len(enc.text):,} characters; the vocabulary has {lm.tokenizer.vocab_size:,} tokens.")
ui.show_figure(chips_fig, key="tokens_chips")
with st.expander("The same tokens as a table"):
    st.dataframe(
        {"position": range(T), "token": labels, "id": enc.ids, "characters": [shown_chars(enc.text[s:e]) for s, e in enc.offsets]},
        hide_index=True,
        height=min(38 + 35 * T, 400),
    )

st.header("2. Tokens → vectors")
st.markdown(
    f"The embedding is a lookup: token id *i* picks row *i* of $W_E$ (shape {lm.tokenizer.vocab_size:,} × "
    f"{lm.cfg.d_model}). Multiplying a one-hot vector by $W_E$ says the same thing. The vector is the same "
    "wherever the token appears: there is no context yet."
)
st.latex(r"x_t = W_E[\mathrm{id}_t] = \mathrm{onehot}(\mathrm{id}_t)\,W_E \in \mathbb{R}^{d_{model}}")
ui.show_figure(embed_fig, key="tokens_embed")
n_repeated = T - len(set(enc.ids))
if n_repeated:
    st.caption(f"Your sentence repeats a token {n_repeated} time(s): each copy keeps its own row, and the rows are identical, because the lookup ignores context.")

st.header("3. A map of the embedding space")
st.markdown(
    f"Each token is a point in {lm.cfg.d_model} dimensions. **PCA** finds the few directions along which "
    "the vectors spread the most, and we draw the points along those. The grey cloud is the vocabulary's "
    "frequent tokens; red are your sentence's. In a trained model, tokens used alike tend to land near each "
    'other (the word2vec idea). "Frequent" here means the first tokens BPE learned beyond the single bytes: '
    "BPE merges the most common pair first, so a low id is a good sign of a frequent token (a proxy; "
    "we do not recount the training text)."
)
c1, c2 = st.columns([3, 1])
n_max = len(merged_ids(lm.tokenizer))
n_vocab = n_max
if n_max > 50:  # a real BPE vocabulary; a toy one is drawn whole
    n_vocab = c1.slider(
        "Vocabulary tokens in the map (N)",
        50,
        min(3000, n_max),
        min(500, n_max),
        step=50,
        key="tokens_n_vocab",
        help="How many frequent vocabulary tokens to draw behind your sentence; the PCA is fitted on them.",
    )
three_d = c2.toggle("3-D", key="tokens_pca_3d", help="Show three principal components instead of two (drag to rotate).")
k_dims = 3 if three_d else 2
map_fig, shown_share = cached.map_figure(state.model, state.sentence, n_vocab, k_dims, tr)
ui.show_figure(map_fig, key="tokens_pca")
st.caption(f"These {k_dims} directions hold {100 * shown_share:.1f}% of the spread of the {n_vocab} vocabulary vectors; the rest is hidden, so points that look close may be far apart.")

st.header("4. Cosine similarity")
st.markdown("How alike are two vectors? Cosine similarity compares their directions: 1 = same direction, 0 = unrelated (at right angles), −1 = opposite. It ignores length.")
st.latex(r"\cos(a, b) = \frac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}")
ui.show_figure(cosine_fig, key="tokens_cosine")

st.header("5. Nearest neighbours in the vocabulary")
st.markdown("Pick a token of your sentence: these are the vocabulary tokens whose vectors point most nearly the same way (highest cosine over all of $W_E$).")
unit = cached.unit_embedding(state.model)
c1, c2 = st.columns([2, 1])
ui.keep_choice("tokens_query", range(T), max(range(T), key=lambda p: len(labels[p])))  # a word rather than punctuation, by default
query = c1.selectbox("Token", range(T), format_func=lambda p: f"{p}: {labels[p]}", key="tokens_query", help="A position in your sentence; its token's neighbours are listed.")
k = c2.slider("Neighbours (k)", 3, 30, 10, key="tokens_k", help="How many nearest tokens to list.")
qid = enc.ids[query]
nb_ids, nb_cos = nearest(unit, unit[qid], k, exclude={qid})
vocab_labels = lm.tokenizer.vocab_labels()
ui.show_figure(neighbour_bars(nb_cos, [vocab_labels[i] for i in nb_ids], f"The {k} tokens nearest to {labels[query]} (id {qid})"), key="tokens_neighbours")

st.header("6. Directions: a − b + c")
st.markdown(
    "In word2vec, differences between vectors can carry meaning: *king − man + woman* lands near *queen*. "
    "Here the defaults are *king − he + she*, because *woman* is two tokens in this small vocabulary. "
    "Type three words, each one token of this vocabulary; we add and subtract their (unit-length) vectors "
    "and list the nearest tokens, leaving out a, b and c themselves."
)
st.latex(r"v = \hat w_a - \hat w_b + \hat w_c, \qquad \text{answer} = \arg\max_{t \notin \{a,b,c\}} \cos(v, w_t)")
cols = st.columns(3)
boxes = {
    name: col.text_input(name, default, max_chars=40, key=f"tokens_analogy_{name}", help=f"One token of the vocabulary (box {name}).")
    for col, name, default in zip(cols, ("a", "b", "c"), ("king", "he", "she"), strict=True)
}
c1, c2 = st.columns([2, 1])
leading_space = c1.checkbox(
    "Words inside a sentence (add a leading space)",
    value=True,
    key="tokens_analogy_space",
    help="BPE treats ' king' (after a space) and 'king' (at the start of a line) as different tokens. Ticked: a space is put before each word.",
)
k_analogy = c2.slider("Tokens to list", 3, 30, 10, key="tokens_analogy_k", help="How many nearest tokens to list.")
ids = {}
for name, text in boxes.items():
    text = text.strip()
    if not text:
        st.warning(f"Box {name} is empty: type one word.")
        continue
    try:
        ids[name] = single_token_id(lm.tokenizer, " " + text if leading_space else text)
    except NotOneToken as err:
        st.warning(f"Box {name} must be ONE token of the vocabulary, but it splits into {len(err.labels)}:")
        st.code(" + ".join(err.labels), language=None)
if len(ids) == 3:
    a, b, c = ids["a"], ids["b"], ids["c"]
    an_ids, an_cos = analogy(unit, a, b, c, k_analogy)
    title = f"Nearest to {vocab_labels[a]} − {vocab_labels[b]} + {vocab_labels[c]}"
    ui.show_figure(neighbour_bars(an_cos, [vocab_labels[i] for i in an_ids], title), key="tokens_analogy")
else:
    st.info("Fix the boxes above to see the nearest tokens.")
st.caption(
    "An honest note: this is a small model trained on about a million characters of Shakespeare. Its embedding space holds only "
    "rough relations (spelling, word class, a few frequent pairs); the famous analogies need large models "
    "trained on billions of words, and even there they work less often than the examples suggest."
)

st.header('7. One vector per word: the "bank" problem')
bank = lm.tokenizer.encode(" bank").labels
if len(bank) == 1:
    in_vocab = 'In this vocabulary ␣bank is a single token, so every sense shares one row of $W_E$: its row is identical in the presets "River bank" and "Money bank".'
else:
    in_vocab = f'This small vocabulary splits ␣bank into {" + ".join(bank)}, but the point stands: each piece has one row, identical in the presets "River bank" and "Money bank".'
st.markdown(
    "The lookup gives every token **one** vector, whatever the sentence. But words have many senses: "
    f"the *bank* of a river, a *bank* that lends money, *banking* a shot in basketball. {in_vocab} "
    "A static embedding has to average the senses. Telling them apart is the job of **attention**, "
    "which mixes in the surrounding tokens; see the page *Context changes meaning*."
)
