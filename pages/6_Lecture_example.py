"""Lecture example: the four-word worked example of self-attention, every matrix shown with its numbers."""

import numpy as np
import pandas as pd
import streamlit as st

import ui
from lessons.lecture import LECTURE_SEED, LECTURE_WORDS, LECTURE_X
from ui import cached

st.set_page_config(page_title="Lecture example", page_icon="🎓", layout="wide")
ui.sidebar()  # shared state; this page does not use the sentence
MAX_ABS = 1000.0  # largest embedding value the table accepts
DIMS = [f"dim {i + 1}" for i in range(LECTURE_X.shape[1])]
CODE = """\
import numpy as np
from scipy.special import softmax

word_1, word_2 = np.array([1, 0, 0]), np.array([0, 1, 0])
word_3, word_4 = np.array([1, 1, 0]), np.array([0, 0, 1])
X = np.array([word_1, word_2, word_3, word_4])   # (4, 3)

np.random.seed(42)
W_Q = np.random.randint(3, size=(3, 3))
W_K = np.random.randint(3, size=(3, 3))
W_V = np.random.randint(3, size=(3, 3))

Q, K, V = X @ W_Q, X @ W_K, X @ W_V               # (4, 3) each
scores = Q @ K.T                                  # (4, 4)
weights = softmax(scores / K.shape[1] ** 0.5, axis=1)
attention = weights @ V                           # (4, 3)"""

st.title("🎓 The lecture's worked example")
st.markdown(
    "The whole of self-attention on a toy you can check by hand: four words, each a vector of 3 numbers, "
    "and three small weight matrices filled with random whole numbers 0, 1 or 2 (NumPy, seed 42). "
    "Every matrix below shows its numbers. Edit the words' vectors or the seed and watch every later step change; "
    "the button brings back the lecture's numbers."
)
st.code(CODE, language="python")
st.latex(r"Q = XW_Q,\quad K = XW_K,\quad V = XW_V,\qquad \text{attention} = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V,\quad d_k = 3")


def reset() -> None:
    """Back to the lecture's X, words and seed: a new table key drops the edits kept by the old one."""
    st.session_state["lecture_table_version"] = st.session_state.get("lecture_table_version", 0) + 1
    st.session_state["lecture_seed"] = LECTURE_SEED


def read_table(table: pd.DataFrame) -> tuple[np.ndarray, list[str]] | None:
    """(X, words) from the edited table, or None after showing what is wrong with it."""
    values = table[DIMS].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)  # (4, 3)
    bad = [f"row {i + 1}, {DIMS[j]}" for i, j in zip(*np.nonzero(~np.isfinite(values) | (np.abs(values) > MAX_ABS)), strict=True)]
    if bad:
        st.error(f"Every cell of X needs a number between −{MAX_ABS:g} and {MAX_ABS:g}. Check: {'; '.join(bad)}. Or press “Use the lecture's numbers”.")
        return None
    words = [w.strip() if isinstance(w, str) and w.strip() else default for w, default in zip(table["word"], LECTURE_WORDS, strict=True)]
    return values, words


st.subheader("1. The inputs")
left, right = st.columns([3, 1])
with right:
    seed = int(st.number_input("Seed", 0, 2**32 - 1, LECTURE_SEED, 1, key="lecture_seed", help="np.random.seed(seed) before drawing W_Q, W_K and W_V (in that order). The lecture uses 42."))
    st.button("Use the lecture's numbers", key="lecture_reset", on_click=reset, help="Restore the lecture's X, word names and seed 42.")
with left:
    start = pd.DataFrame(LECTURE_X, columns=DIMS).assign(word=list(LECTURE_WORDS))[["word", *DIMS]]
    number = st.column_config.NumberColumn(min_value=-MAX_ABS, max_value=MAX_ABS, required=True)
    table = st.data_editor(
        start,
        key=f"lecture_table_{st.session_state.get('lecture_table_version', 0)}",
        num_rows="fixed",
        hide_index=True,
        column_config={"word": st.column_config.TextColumn("word", help="A name for the row (only a label).", max_chars=40), **dict.fromkeys(DIMS, number)},
    )
    st.caption("X: one row per word, its 3-number embedding. Click a cell to edit it.")

read = read_table(table)
if read is None:
    st.stop()
X, words = read
m, figs = cached.lecture_figures(X, tuple(words), tuple(DIMS), seed)


def vec(v: np.ndarray) -> str:
    """A vector as LaTeX: [1, 0.5, 2]."""
    return r"\left[" + r",\ ".join(f"{x:.3g}" for x in v) + r"\right]"


def show(name: str) -> None:
    ui.show_figure(figs[name], key=f"lecture_fig_{name}")


show("X")

st.subheader("2. The weight matrices")
st.markdown(f"`np.random.seed({seed})`, then three calls of `np.random.randint(3, size=(3, 3))`: W_Q first, then W_K, then W_V. In a real model these are learned; here they are random whole numbers.")
for col, name in zip(st.columns(3), ("W_Q", "W_K", "W_V"), strict=True):
    with col:
        show(name)

st.subheader("3. Queries, keys and values")
st.markdown("Each word's vector times each weight matrix: row *i* of Q is word *i*'s query (what it looks for), of K its key (what it offers), of V its value (what it passes on).")
st.latex(r"Q = XW_Q,\qquad K = XW_K,\qquad V = XW_V")
for col, name in zip(st.columns(3), ("Q", "K", "V"), strict=True):
    with col:
        show(name)

st.subheader("4. Scores, scaling, softmax")
st.markdown("Every query is compared with every key by a dot product, divided by √3, and each row is turned into weights by softmax: positive, and adding up to 1.")
st.latex(r"e_{ij} = q_i \cdot k_j \qquad \frac{e_{ij}}{\sqrt{3}} \qquad \alpha_{ij} = \frac{\exp(e_{ij}/\sqrt{3})}{\sum_{j'} \exp(e_{ij'}/\sqrt{3})}")
for col, name in zip(st.columns(3), ("scores", "scaled", "weights"), strict=True):
    with col:
        show(name)

st.subheader("5. The output")
st.markdown("Each word's new vector is the weighted average of the value vectors, with its row of weights.")
st.latex(r"\text{attention}_i = \sum_j \alpha_{ij}\, v_j")
left, right = st.columns([1, 1])
with left:
    show("attention")
with right:
    st.markdown(
        "**One row, by hand.** Pick a word and follow its numbers through the last steps, below: its scores against every key, "
        "the same ÷ √3, the softmax weights, and the weighted sum of the value vectors (the rows of V) that becomes its output row."
    )
    ui.keep_choice("lecture_row", range(len(words)), 0)
    i = st.selectbox("Work out one row", range(len(words)), format_func=lambda r: f"row {r + 1}: {words[r]}", key="lecture_row", help="Spell out the numbers of one word's row.")
e, s, a = m["scores"][i], m["scaled"][i], m["weights"][i]
st.latex(rf"e_{{{i + 1}}} = q_{{{i + 1}}}K^\top = {vec(e)}, \qquad \frac{{e_{{{i + 1}}}}}{{\sqrt{{3}}}} = {vec(s)}")
st.latex(rf"\alpha_{{{i + 1}}} = \operatorname{{softmax}}{vec(s)} = {vec(a)}")
terms = " + ".join(rf"{w:.3g}\,{vec(v)}" for w, v in zip(a, m["V"], strict=True))
st.latex(rf"\text{{attention}}_{{{i + 1}}} = {terms} = {vec(m['attention'][i])}")
