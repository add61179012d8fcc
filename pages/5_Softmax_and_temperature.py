"""Softmax & temperature: how scores become weights, why attention divides by √d_k, and τ on one of the model's rows."""

import numpy as np
import pandas as pd
import streamlit as st

import ui
from figures.common import grouped_bars
from figures.softmax import dk_lines, temperature_curves
from lessons import softmax_lab as lab
from ui import cached

st.set_page_config(page_title="Softmax & temperature", page_icon="🌡️", layout="wide")
state = ui.sidebar()
TAUS = np.geomspace(0.05, 5.0, 120)  # the temperature grid of the entropy curve
SCALES = [1, 2, 5, 10, 20, 50, 100]


def latex_number(v: float) -> str:
    """7.389 → '7.389'; 1.4e+217 → '1.4 \\times 10^{217}'."""
    mantissa, _, exponent = f"{v:.4g}".partition("e")
    return mantissa + (rf" \times 10^{{{int(exponent)}}}" if exponent else "")


st.title("🌡️ Softmax & temperature")
st.markdown(
    "Attention turns each row of scores into **weights**: positive numbers that add up to 1. "
    "The tool for that is **softmax**: raise *e* to each score, then divide by the total. "
    "Bigger scores get a bigger share, and a score that is bigger by 1 gets *e* ≈ 2.7 times the weight. "
    "A **temperature** τ divides the scores first: τ < 1 makes the gaps bigger (sharper, closer to one winner), "
    "τ > 1 makes them smaller (flatter, closer to equal weights)."
)
st.latex(r"\alpha_i = \operatorname{softmax}(s/\tau)_i = \frac{e^{s_i/\tau}}{\sum_j e^{s_j/\tau}}, \qquad \alpha_i > 0, \quad \sum_i \alpha_i = 1")

st.subheader("1. From scores to weights")
c1, c2, c3 = st.columns([2, 1, 1])
text = c1.text_input("Scores s", "2, 4, 5", key="softmax_scores", help="Any numbers, separated by commas (at most 64). The lecture's example is 2, 4, 5.")
tau = c2.slider("Temperature τ", 0.05, 5.0, 1.0, 0.05, key="softmax_temperature", help="Scores are divided by τ before softmax. Also used for the model's row in section 3.")
scale = c3.select_slider(
    "Scale the scores", SCALES, value=1, key="softmax_scale", format_func=lambda v: f"×{v}", help="Multiply every score: what softmax does with large scores (raw q·k are large when d_k is)."
)


def scores_section(s: np.ndarray) -> None:
    """Bars, the worked numbers, and entropy / top probability versus τ for the score vector s."""
    labels = [f"s{i + 1} = {v:g}" for i, v in enumerate(s)]
    p = lab.softmax_t(s, tau, scale)
    now = f"×{scale}, τ = {tau:g}"
    left, right = st.columns([3, 2])
    with left:
        ui.show_figure(
            grouped_bars({"softmax(s)  (×1, τ = 1)": lab.softmax(s), f"softmax({scale}·s / {tau:g})  ({now})": p}, labels, title="Softmax weights", y_title="weight", y_range=(0, 1)),
            key="softmax_bars",
        )
    with right:
        m1, m2 = st.columns(2)
        m1.metric("Top probability", f"{p.max():.3f}", help=f"The largest weight at {now}.")
        m2.metric("Entropy", f"{lab.entropy_bits(p):.3f} bits", help=f"0 bits = all weight on one score; {np.log2(len(s)):.3f} bits = equal weights.")
        w = lab.worked_softmax(scale * s / tau)
        shift = w["shift"]
        exp_name = "e^z" if shift == 0 else "e^(z − max z)"
        st.dataframe(pd.DataFrame({"score s": s, f"z = {scale}·s / {tau:g}": w["z"], exp_name: w["exp"], "weight": w["weights"]}), hide_index=True, key="softmax_worked")
        if shift:
            st.caption(f"e^z would overflow, so every z is first lowered by the largest one, {shift:.4g}: the weights stay exactly the same.")
    if len(s) <= 6:
        terms = [rf"e^{{{latex_number(z - shift)}}}" for z in w["z"]]
        values = " + ".join(latex_number(e) for e in w["exp"])
        st.latex(rf"\textstyle\sum_j e^{{z_j}} = {' + '.join(terms)} = {values} = {latex_number(w['sum'])}")
        st.latex(r"\alpha = \left(" + ", ".join(rf"\tfrac{{{latex_number(e)}}}{{{latex_number(w['sum'])}}}" for e in w["exp"]) + r"\right) = (" + ", ".join(f"{a:.3f}" for a in w["weights"]) + ")")

    st.markdown("**Entropy and top probability as τ changes.** Low τ: one score takes everything (entropy → 0, top probability → 1). High τ: the weights approach equal (entropy → log₂ n).")
    entropy, top = lab.temperature_sweep(s, TAUS, scale)
    ui.show_figure(temperature_curves(TAUS, entropy, top, tau, float(lab.entropy_bits(p)), float(p.max()), float(np.log2(len(s)))), key="softmax_curves")


def dk_section() -> None:
    """The √d_k experiment: spread of q·k for random vectors, with and without the division, and softmax saturation."""
    st.subheader("2. Why divide by √d_k?")
    st.markdown(
        "A query and a key are vectors with d_k numbers. If each number is random with spread 1, their dot product is a sum of d_k random terms, "
        "so its spread grows like √d_k. Big scores push softmax to one-hot (**saturation**): one key takes all the weight and the others get almost nothing, "
        "so during training their gradients vanish. Dividing by √d_k brings the spread back to about 1, whatever d_k is."
    )
    st.latex(r"\operatorname{Var}(q\cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k \quad\Rightarrow\quad \operatorname{std}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) = 1")
    c1, c2 = st.columns([3, 1])
    d_k = c1.select_slider("d_k", list(lab.D_KS), value=64, key="softmax_dk", help="Size of the query and key vectors in the example below (marked on the curves).")
    seed = int(c2.number_input("Seed", 0, 1_000_000, 0, 1, key="softmax_seed", help="Draw other random vectors."))
    ex = cached.sqrt_dk_experiment(seed=seed)
    i = list(lab.D_KS).index(d_k)
    n_q, n_k = ex.scores.shape[1:]
    st.caption(f"{n_q} random queries, each against {n_k} random keys, every entry drawn from a normal distribution with mean 0 and spread 1 (seed {seed}).")
    left, right = st.columns(2)
    with left:
        spread = {"q·k": ex.std_raw, "q·k / √d_k": ex.std_scaled, "√d_k": np.sqrt(ex.d_ks)}
        ui.show_figure(dk_lines(ex.d_ks, spread, title="Spread (std) of the scores", y_title="standard deviation", chosen=i, log_y=True), key="softmax_dk_spread")
    with right:
        top = {"softmax(q·k)": ex.top_raw, "softmax(q·k / √d_k)": ex.top_scaled, f"equal weights (1/{n_k})": np.full(len(ex.d_ks), 1 / n_k)}
        ui.show_figure(dk_lines(ex.d_ks, top, title="Saturation: average largest weight of a row", y_title="largest softmax weight", chosen=i), key="softmax_dk_top")
    raw, scaled = ex.example(i)
    st.markdown(f"At d_k = {d_k} the scores spread by **{ex.std_raw[i]:.2f}** (√d_k = {np.sqrt(d_k):.2f}); divided by √d_k, by **{ex.std_scaled[i]:.2f}**. One query's {n_k} weights:")
    ui.show_figure(
        grouped_bars({"softmax(q·k)": raw, "softmax(q·k / √d_k)": scaled}, [f"k{j + 1}" for j in range(n_k)], title=f"One query against {n_k} keys, d_k = {d_k}", y_title="weight", y_range=(0, 1)),
        key="softmax_dk_example",
    )


def real_row_section() -> None:
    """The page's τ applied to one query row of the sidebar's layer and head."""
    st.subheader("3. The same temperature on one of the model's rows")
    st.markdown(
        f"Now real scores: the sidebar sentence, layer {state.layer}, head {state.head}. Pick a query token; its scores are the model's "
        "q·k / √d_k for every key it may see (the earlier tokens and itself). The page's τ divides them before softmax. "
        "The orange bars come from running the whole model again with τ applied to this one head only (an engine intervention): "
        "they equal the blue ones. The sidebar's τ is different: it divides the scores of every head in every layer, so later layers "
        "also receive different inputs."
    )
    tr1 = ui.trace_or_stop(state, temperature=1.0)
    tr = ui.get_trace(state.model, state.sentence, 1.0, head_temperature=((state.layer, state.head, tau),))
    labels = tr1.encoding.labels
    ui.keep_choice("softmax_query", range(len(labels)), len(labels) - 1)
    q = st.selectbox("Query token", range(len(labels)), format_func=lambda j: f"{j}: {labels[j]}", key="softmax_query", help="Whose row of scores to use.")
    name = f"blocks.{state.layer}.attn"
    row = tr1[f"{name}.hook_scores_masked"][state.head, q]  # (T,) scaled scores at τ = 1, −∞ for the future
    keys = np.flatnonzero(~np.isneginf(row))  # the keys this query may see
    key_labels = [labels[j] for j in keys]
    p = lab.softmax_t(row[keys], tau)
    model = tr[f"{name}.hook_pattern"][state.head, q, keys]
    st.latex(rf"\alpha_{{{q},j}} = \operatorname{{softmax}}_j\!\left(\frac{{q_{{{q}}}\cdot k_j}}{{\sqrt{{d_k}}\;\tau}}\right), \quad \tau = {tau:g}")
    weights = {f"softmax at this page's τ = {tau:g}": p, f"the model with τ = {tau:g} on this head only": model}
    left, right = st.columns(2)
    with left:
        ui.show_figure(grouped_bars({"q·k / √d_k (τ = 1)": row[keys]}, key_labels, title=f"Scores of query {q}", x_title="key", y_title="score"), key="softmax_real_scores")
    with right:
        ui.show_figure(grouped_bars(weights, key_labels, title=f"Weights of query {q} over the keys", y_title="weight", y_range=(0, 1)), key="softmax_real_weights")
    p1 = lab.softmax(row[keys])
    st.caption(f"Top weight {p.max():.3f} and entropy {lab.entropy_bits(p):.3f} bits at τ = {tau:g}; at τ = 1 (as trained): {p1.max():.3f} and {lab.entropy_bits(p1):.3f} bits.")


try:
    scores = lab.parse_scores(text)
except lab.ScoreInputError as err:
    st.error(f"{err} The other sections still work.")
else:
    scores_section(scores)
dk_section()
real_row_section()
