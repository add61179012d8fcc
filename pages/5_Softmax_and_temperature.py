"""Softmax & temperature: how scores become weights, why attention divides by √d_k, and τ on one of the model's rows."""

import numpy as np
import pandas as pd
import streamlit as st

import ui
from figures.common import grouped_bars
from figures.softmax import dk_lines, temperature_curves
from lessons import softmax_lab as lab
from ui.caches import softmax as cached

state = ui.sidebar()
TAUS = np.geomspace(0.05, 5.0, 120)  # the temperature grid of the entropy curve
SCALES = [1, 2, 5, 10, 20, 50, 100]

st.title("🌡️ Softmax & temperature")
ui.explain(
    "Attention turns each row of scores into **weights**: positive numbers that add up to 1. The tool for that is "
    "**softmax**: raise *e* to each score, then divide by the total. Bigger scores get a bigger share, and a score "
    "that is bigger by 1 gets *e* ≈ 2.7 times the weight. A **temperature** τ divides the scores first: τ < 1 makes "
    "the gaps bigger (sharper, closer to one winner), τ > 1 makes them smaller (flatter, closer to equal weights)."
)
st.latex(
    r"\alpha_i = \operatorname{softmax}(s/\tau)_i = \frac{e^{s_i/\tau}}{\sum_j e^{s_j/\tau}}, "
    r"\qquad \alpha_i > 0, \quad \sum_i \alpha_i = 1"
)


def page_tau(where) -> float:
    """The page's own τ slider in `where` (parts 1 and 3 share it; kept while neither is open)."""
    return where.slider(
        "τ on this page",
        0.05,
        5.0,
        step=0.05,
        **ui.kept("softmax_temperature", 1.0),
        help=(
            "Scores are divided by τ before softmax, in parts 1 and 3 of this page; "
            f"the attention temperature every page shares ({ui.controls_place()}) stays as it is."
        ),
    )


def scores_part() -> None:
    """The page's scores, τ and scale; then softmax of those scores, worked."""
    c1, c2, c3 = st.columns([2, 1, 1])
    text = c1.text_input(
        "Scores s",
        **ui.kept("softmax_scores", "2, 4, 5"),
        help="Any numbers, separated by commas (at most 64). The lecture's example is 2, 4, 5.",
    )
    tau = page_tau(c2)
    help_scale = "Multiply every score: what softmax does with large scores (raw q·k are large when d_k is)."
    scale = c3.select_slider(
        "Scale the scores", SCALES, **ui.kept("softmax_scale", 1), format_func="×{}".format, help=help_scale
    )
    try:
        scores = lab.parse_scores(text)
    except lab.ScoreInputError as err:
        st.error(f"{err} The page's other parts still work.")
    else:
        scores_section(scores, tau, scale)


def scores_section(s: np.ndarray, tau: float, scale: int) -> None:
    """Bars, the worked numbers, and entropy / top probability versus τ for the score vector s."""
    labels = [f"s{i + 1} = {v:g}" for i, v in enumerate(s)]
    p = lab.softmax_t(s, tau, scale)
    now = f"×{scale}, τ = {tau:g}"
    bars = {"softmax(s)  (×1, τ = 1)": lab.softmax(s), f"softmax({scale}·s / {tau:g})  ({now})": p}
    with ui.stacking("softmax_worked_row", below_px=1100):  # the table beside the bars only where it fits
        left, right = st.columns([3, 2])
        with left:
            ui.show_figure(
                grouped_bars(bars, labels, title="Softmax weights", y_title="weight", y_range=(0, 1)),
                key="softmax_bars",
            )
        with right:
            m1, m2 = st.columns(2)
            m1.metric("Top probability", f"{p.max():.3f}", help=f"The largest weight at {now}.")
            m2.metric(
                "Entropy",
                f"{lab.entropy_bits(p):.3f} bits",
                help=f"0 bits = all weight on one score; {np.log2(len(s)):.3f} bits = equal weights.",
            )
            w = lab.worked_softmax(scale * s / tau)
            exp_name = "e^z" if w["shift"] == 0 else "e^(z − max z)"
            st.dataframe(
                pd.DataFrame(
                    cols := {
                        "score s": s,
                        f"z = {scale}·s / {tau:g}": w["z"],
                        exp_name: w["exp"],
                        "weight": w["weights"],
                    }
                ),
                hide_index=True,
                key="softmax_worked",
                column_config=dict.fromkeys(cols, st.column_config.NumberColumn(format=lab.TABLE_FORMAT)),
            )
            if w["shift"]:
                st.caption(
                    "e^z would overflow, so every z is first lowered by the largest one, "
                    f"{w['shift']:.4g}: the weights stay exactly the same."
                )
    for line in lab.worked_latex(w) if len(s) <= 6 else ():
        st.latex(line)

    ui.explain(
        "**Entropy and top probability as τ changes.** Low τ: one score takes everything (entropy → 0, "
        "top probability → 1). High τ: the weights approach equal (entropy → log₂ n)."
    )
    entropy, top = lab.temperature_sweep(s, TAUS, scale)
    ui.show_figure(
        temperature_curves(TAUS, entropy, top, tau, float(lab.entropy_bits(p)), float(p.max()), float(np.log2(len(s)))),
        key="softmax_curves",
    )


def dk_section() -> None:
    """The √d_k experiment: spread of q·k for random vectors, with and without the division, and softmax saturation."""
    ui.explain(
        "A query and a key are vectors with d_k numbers. If each number is random with spread 1, "
        "their dot product is a sum of d_k random terms, so its spread grows like √d_k. Big scores push softmax "
        "to one-hot (**saturation**): one key takes all the weight and the others get almost nothing, so during "
        "training their gradients vanish. Dividing by √d_k brings the spread back to about 1, whatever d_k is."
    )
    st.latex(
        r"\operatorname{Var}(q\cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) "
        r"= d_k \quad\Rightarrow\quad \operatorname{std}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) = 1"
    )
    with ui.after_figures("softmax_dk_controls"):  # presenter view: under the charts, which then fit on the screen
        c1, c2 = st.columns([3, 1])
        d_k = c1.select_slider(
            "d_k",
            list(lab.D_KS),
            **ui.kept("softmax_dk", 64),
            help="Size of the query and key vectors in the example below (marked on the curves).",
        )
        seed = int(
            c2.number_input(
                "Seed", 0, 1_000_000, step=1, **ui.kept("softmax_seed", 0), help="Draw other random vectors."
            )
        )
        ex = cached.sqrt_dk_experiment(seed=seed)
        n_q, n_k = ex.scores.shape[1:]
        st.caption(
            f"{n_q} random queries, each against {n_k} random keys, "
            f"every entry drawn from a normal distribution with mean 0 and spread 1 (seed {seed})."
        )
    i = list(lab.D_KS).index(d_k)
    spread = {"q·k": ex.std_raw, "q·k / √d_k": ex.std_scaled, "√d_k": np.sqrt(ex.d_ks)}
    top = {
        "softmax(q·k)": ex.top_raw,
        "softmax(q·k / √d_k)": ex.top_scaled,
        f"equal weights (1/{n_k})": np.full(len(ex.d_ks), 1 / n_k),
    }
    spread_fig = dk_lines(
        ex.d_ks, spread, title="Spread (std) of the scores", y_title="standard deviation", chosen=i, log_y=True
    )
    top_fig = dk_lines(
        ex.d_ks, top, title="Saturation: average largest weight of a row", y_title="largest softmax weight", chosen=i
    )
    ui.side_by_side({"softmax_dk_spread": spread_fig, "softmax_dk_top": top_fig})
    raw, scaled = ex.example(i)
    st.markdown(lab.dk_note(ex, i))
    example = grouped_bars(
        {"softmax(q·k)": raw, "softmax(q·k / √d_k)": scaled},
        [f"k{j + 1}" for j in range(n_k)],
        title=f"One query, {n_k} keys, d_k = {d_k}",
        y_title="weight",
        y_range=(0, 1),
    )
    ui.show_figure(example, key="softmax_dk_example")


def real_row_section() -> None:
    """The page's τ applied to one query row of the sidebar's layer and head."""
    ui.explain(lab.real_row_text(ui.get_model(state.model).cfg, state.layer, state.head))
    key1 = state.key.untempered.but(temperature=1.0)  # the model as trained, its own weights
    tr1 = ui.trace_or_stop(key1)
    labels = tr1.encoding.labels
    with ui.after_figures("softmax_row_controls"):  # presenter view: under the charts, which then fit on the screen
        c1, c2 = st.columns([2, 1])
        q = c1.selectbox(
            "Query token",
            range(len(labels)),
            format_func=ui.token_names(labels),
            **ui.choice("softmax_query", range(len(labels)), len(labels) - 1),
            help="Whose row of scores to use.",
        )
        tau = page_tau(c2)
        st.latex(
            rf"\alpha_{{{q},j}} = "
            rf"\operatorname{{softmax}}_j\!\left(\frac{{q_{{{q}}}\cdot k_j}}{{\sqrt{{d_k}}\;\tau}}\right), "
            rf"\quad \tau = {tau:g}"
        )
    r = lab.real_row(tr1, cached.tempered_pattern(key1, state.layer, state.head, tau), state.layer, state.head, q, tau)
    key_labels = [labels[j] for j in r.keys]
    weights = {
        f"softmax at this page's τ = {tau:g}": r.weights,
        f"the model with τ = {tau:g} on this head only": r.model,
    }
    scores_fig = grouped_bars(
        {"q·k / √d_k (τ = 1)": r.scores}, key_labels, title=f"Scores of query {q}", x_title="key", y_title="score"
    )
    weights_fig = grouped_bars(
        weights, key_labels, title=f"Weights of query {q} over the keys", y_title="weight", y_range=(0, 1)
    )
    ui.side_by_side({"softmax_real_scores": scores_fig, "softmax_real_weights": weights_fig})
    st.caption(lab.real_row_note(r, tau))


PARTS = {
    "1 · From scores to weights": scores_part,
    "2 · Why divide by √d_k?": dk_section,
    "3 · τ on one of the model's rows": real_row_section,
}
ui.lazy_tabs(PARTS, "softmax_part")  # only the open part runs and is sent
