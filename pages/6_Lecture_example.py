"""Lecture example: the four-word worked example of self-attention, every matrix shown with its numbers."""

import functools

import pandas as pd
import streamlit as st

import ui
from lessons import lecture
from ui.caches import lecture as cached

ui.sidebar()  # shared state; this page does not use the sentence
DIMS = [f"dim {i + 1}" for i in range(lecture.LECTURE_X.shape[1])]

st.title("🎓 The lecture's worked example")
ui.explain(
    "The whole of self-attention on a toy you can check by hand: four words, each a vector of 3 numbers, "
    "and three small weight matrices filled with random whole numbers 0, 1 or 2 (NumPy, seed 42). "
    "Every matrix below shows its numbers. Edit the words' vectors or the seed and watch every later step change; "
    "the button brings back the lecture's numbers."
)
ui.folded("The lecture's code").code(lecture.LECTURE_CODE, language="python")
st.latex(
    r"\begin{gathered}Q = XW_Q,\quad K = XW_K,\quad V = XW_V, \\ "
    r"\text{attention} = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V,\quad d_k = 3\end{gathered}"
)


st.subheader("1. The inputs")
left, right = st.columns([3, 1])
with right:
    help_seed = "np.random.seed(seed) before drawing W_Q, W_K and W_V (in that order). The lecture uses 42."
    seed = int(
        st.number_input(
            "Seed", 0, 2**32 - 1, lecture.LECTURE_SEED, 1, bind="query-params", key="lecture_seed", help=help_seed
        )
    )
    # back to the lecture's numbers: a new table key drops the edits the old one kept
    version = st.session_state.get("lecture_table_version", 0)
    reset = {"lecture_table_version": version + 1, "lecture_seed": lecture.LECTURE_SEED}
    st.button(
        "Use the lecture's numbers",
        key="lecture_reset",
        on_click=st.session_state.update,
        args=(reset,),
        help="Restore the lecture's X, word names and seed 42.",
    )
with left:
    start = pd.DataFrame(lecture.LECTURE_X, columns=DIMS).assign(word=list(lecture.LECTURE_WORDS))[["word", *DIMS]]
    number = st.column_config.NumberColumn(min_value=-lecture.MAX_ABS, max_value=lecture.MAX_ABS, required=True)
    table = st.data_editor(
        start,
        key=f"lecture_table_{version}",
        num_rows="fixed",
        hide_index=True,
        column_config={
            "word": st.column_config.TextColumn("word", help="A name for the row (only a label).", max_chars=40),
            **dict.fromkeys(DIMS, number),
        },
    )
    st.caption("X: one row per word, its 3-number embedding. Click a cell to edit it.")

try:
    X, words = lecture.read_table(
        table[DIMS].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float), list(table["word"]), DIMS
    )
except lecture.TableError as err:
    st.error(f"{err} Or press “Use the lecture's numbers”.")
    st.stop()
m, figs = cached.lecture_figures(X, tuple(words), tuple(DIMS), seed)
vec = lecture.latex_vector


def show(name: str) -> None:
    ui.show_figure(figs[name], key=f"lecture_fig_{name}")


show("X")

st.subheader("2. The weight matrices")
st.markdown(
    f"`np.random.seed({seed})`, then three calls of `np.random.randint(3, size=(3, 3))`: W_Q first, "
    "then W_K, then W_V. In a real model these are learned; here they are random whole numbers."
)


def row(*names: str) -> None:
    """The matrices `names` in one row where the screen is wide, one per row under 1,300 px (in a third of the page's
    column a 3 × 3 map's plot was 49 px wide at 1,024 px)."""
    ui.side_by_side({f"lecture_fig_{name}": figs[name] for name in names})


row("W_Q", "W_K", "W_V")

st.subheader("3. Queries, keys and values")
ui.explain(
    "Each word's vector times each weight matrix: row *i* of Q is word *i*'s query (what it looks for), "
    "of K its key (what it offers), of V its value (what it passes on)."
)
st.latex(r"Q = XW_Q,\qquad K = XW_K,\qquad V = XW_V")
row("Q", "K", "V")

st.subheader("4. Scores, scaling, softmax")
ui.explain(
    "Every query is compared with every key by a dot product, divided by √3, "
    "and each row is turned into weights by softmax: positive, and adding up to 1."
)
st.latex(
    r"e_{ij} = q_i \cdot k_j \qquad \frac{e_{ij}}{\sqrt{3}} \qquad "
    r"\alpha_{ij} = \frac{\exp(e_{ij}/\sqrt{3})}{\sum_{j'} \exp(e_{ij'}/\sqrt{3})}"
)
row("scores", "scaled")

show("weights")  # the example's point, full width: at least as large as every other matrix

st.subheader("5. The output")
ui.explain("Each word's new vector is the weighted average of the value vectors, with its row of weights.")
st.latex(r"\text{attention}_i = \sum_j \alpha_{ij}\, v_j")
with ui.stacking("lecture_output_row", ui.SIDE_BY_SIDE_PX):
    left, right = st.columns([1, 1])
with left:
    show("attention")
with right:
    st.markdown(
        "**One row, by hand.** Pick a word and follow its numbers through the last steps, "
        "below: its scores against every key, the same ÷ √3, the softmax weights, "
        "and the weighted sum of the value vectors (the rows of V) that becomes its output row."
    )
    i = st.selectbox(
        "Work out one row",
        range(len(words)),
        format_func=functools.partial(lecture.row_name, tuple(words)),
        **ui.choice("lecture_row", range(len(words)), 0),
        help="Spell out the numbers of one word's row.",
    )
e, s, a = m["scores"][i], m["scaled"][i], m["weights"][i]
st.latex(rf"e_{{{i + 1}}} = q_{{{i + 1}}}K^\top = {vec(e)}, \qquad \frac{{e_{{{i + 1}}}}}{{\sqrt{{3}}}} = {vec(s)}")
st.latex(rf"\alpha_{{{i + 1}}} = \operatorname{{softmax}}{vec(s)} = {vec(a)}")
terms = " + ".join(rf"{w:.3g}\,{vec(v)}" for w, v in zip(a, m["V"], strict=True))
st.latex(rf"\begin{{gathered}}\text{{attention}}_{{{i + 1}}} = {terms} \\ = {vec(m['attention'][i])}\end{{gathered}}")
