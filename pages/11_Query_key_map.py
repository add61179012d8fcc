"""Query–key map: one head's queries and keys in one 2-D picture, with lines from each
query to the keys it attends to most."""

import streamlit as st

import ui
from figures import qk_map as fq
from lessons import heads, qk_map
from lessons.words import noun

state = ui.sidebar()
L, H = state.layer, state.head
MIN_KEYS = 3  # a rank correlation needs a query that sees at least this many keys

st.title("🗺️ Query–key map")
ui.explain(
    "Every token has a **query** (what it looks for) and a **key** (what it offers), "
    f"{ui.get_model(state.model).cfg.d_head} numbers each in layer {L}, head {H} ({ui.controls_place()}). "
    "Here both kinds of point are drawn in one picture: circles are queries, diamonds are keys, and "
    "a line joins each query to the keys it gives the most weight. Attention is decided by the **dot product** q·k: "
    "large when a query and a key point the same way. Being close in the picture is related, but not the same thing."
)
st.latex(
    r"\alpha_{ij} = \mathrm{softmax}_j\!\left(\frac{q_i \cdot k_j}{\sqrt{d_k}\,\tau}\right),"
    r"\qquad \lVert q_i - k_j \rVert^2 = \lVert q_i \rVert^2 + \lVert k_j \rVert^2 - 2\, q_i \cdot k_j"
)
ui.explain(
    "The second formula is why distance and dot product disagree: "
    "a key far away can still win if it is long and points the query's way. And the picture is flat, "
    "while the vectors are not: it keeps only the two directions along which the points spread "
    "the most (principal component analysis of the queries and keys together); the rest is lost."
)

tr = ui.trace_or_stop(state.key)
if notes := qk_map.family_notes(tr.cfg, H):
    st.info("\n\n".join(notes))
labels = tr.encoding.labels
T = len(labels)
a = f"blocks.{L}.attn."
q, k, _ = tr.head_qkv(L, H)  # (T, hs) each: the query and key whose dot product is the score
w = tr[a + "hook_pattern"][H]  # (T, T)
vis = heads.visible_keys(tr, L)[H]  # (T, T)
m = qk_map.qk_map(q, k)

c1, c2, c3 = st.columns(3)
help_top_k = "Draw a line from each query to this many of its highest-weight keys."
top_k = c1.slider("Strongest keys per query", 1, 5, 1, bind="query-params", key="qkmap_topk", help=help_top_k)
help_min_w = "Drop the lines whose weight is below this."
min_w = c2.slider(
    "Only weights of at least", 0.0, 1.0, 0.0, 0.01, bind="query-params", key="qkmap_min_weight", help=help_min_w
)
help_query = "Show the lines of every query, or of one."
query = c3.selectbox(
    "Lines from",
    [-1, *range(T)],
    format_func=ui.token_names(labels, every="every query", prefix="query "),
    **ui.choice("qkmap_query", range(-1, T), -1),
    help=help_query,
)
i, j, pw = heads.strongest_keys(w, vis, top_k, min_w)
if query >= 0:
    i, j, pw = i[i == query], j[i == query], pw[i == query]
ui.show_figure(
    fq.qk_scatter(m.q2, m.k2, labels, i, j, pw, m.explained, f"Queries and keys, layer {L}, head {H}"), key="qkmap_map"
)
st.caption(
    f"{len(pw)} {noun(len(pw), 'line')}. Hover a line's middle dot for its weight. Both axes use the same scale, "
    "so distances in the picture are true 2-D distances. Queries and keys often form two separate clouds: "
    "that is fine, because only the dot product counts, and shifting every key by the same amount changes "
    "each query's scores by the same number, which softmax ignores."
)

st.header("What the flat picture keeps")
kept = m.explained.sum()
c1, c2, c3 = st.columns(3)
c1.metric(
    "Axis 1 keeps",
    f"{m.explained[0]:.1%}",
    help="Share of the spread (variance) of the 2T points along the first axis.",
)
c2.metric("Axis 2 keeps", f"{m.explained[1]:.1%}")
c3.metric(
    "Lost in 2-D",
    f"{1 - kept:.1%}",
    help=f"Spread in the other {q.shape[1] - 2} directions, which the picture cannot show.",
)
st.markdown(
    f"The {2 * T} points (queries and keys of {T} tokens) live in {q.shape[1]} dimensions; the picture keeps "
    f"{kept:.0%} of their spread. Two points that look close may be far apart in a direction the picture drops."
)

st.header("Does the picture predict the weights?")
meas = qk_map.map_measures(m)
rows = {
    "q·k / (√d_k τ): the real score": tr[a + "hook_scores_scaled"][H],
    f"distance ‖q − k‖ in all {q.shape[1]} dimensions": qk_map.distances(q, k),
    "distance in the 2-D picture": meas["distance"],
    "dot product in the 2-D picture (from the centre of the points)": meas["dot"],
}
rho = qk_map.row_rank_correlations(rows, w, vis, MIN_KEYS)
n_rows = int((vis.sum(axis=1) >= MIN_KEYS).sum())
ui.explain(
    "For each query, rank its keys by a measure and by their weight, and compare the two orders (Spearman's ρ); "
    f"the table gives the average over the {n_rows} queries that see at least {MIN_KEYS} keys. "
    "ρ = +1: the measure orders the keys exactly as the weights do; −1: exactly the reverse (for a distance, "
    "ρ should be negative: closer means more weight); 0: no relation. The real score always gets +1, because "
    "softmax keeps the order of the scores; the 2-D picture shows how much of that order survives flattening."
)
st.latex(
    r"\rho = \frac{1}{|I|}\sum_{i \in I} "
    r"\mathrm{corr}\big(\mathrm{rank}_j(\mathrm{measure}_{ij}),\ \mathrm{rank}_j(\alpha_{ij})\big)"
)
if n_rows:
    st.dataframe({"measure": list(rho), "ρ with the weight": [round(r, 3) for r in rho.values()]}, hide_index=True)
else:
    st.info(
        "The sentence is too short: a rank correlation needs a query that "
        f"sees at least {MIN_KEYS} keys, i.e. {MIN_KEYS} tokens or more."
    )
