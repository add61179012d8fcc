"""Small helpers every page uses."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import plotly.graph_objects as go
import streamlit as st

from figures.common import Spec
from lessons import head_roles
from transformer import Trace, TraceInputError
from transformer.trace import token_limit

from . import widths
from .cached_model import head_scores
from .models import get_model, get_trace
from .state import State

PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


def trace_or_stop(state: State, temperature: float | None = None, causal: bool = True, ablate: tuple[tuple[int, int], ...] = ()) -> Trace:
    """The trace of the current sentence; stops the page with a clear message when the text cannot be run."""
    tau = state.temperature if temperature is None else temperature
    try:
        tr = get_trace(state.model, state.sentence, tau, causal, ablate)
    except TraceInputError as err:
        st.info(f"{err} Pick a preset in the sidebar, or type your own.")
        st.stop()
    if tr.truncated:
        limit = token_limit(get_model(state.model).cfg)
        st.warning(f"The text is {tr.n_tokens_in:,} tokens long; this app reads at most {limit} tokens of it, so this page shows the first {len(tr.encoding)}.")
    return tr


def keep(key: str, default) -> None:
    """Call before drawing the widget `key` (with no default value of its own): it starts at `default` and keeps its
    value through runs that do not draw it, e.g. while its lazy tab is closed (Streamlit forgets such a widget)."""
    st.session_state[key] = st.session_state.get(key, default)


def keep_choice(key: str, options: Sequence, default) -> None:
    """Call before drawing the selectbox `key`: its value becomes `default` when it is not one of `options` (on the
    first run, for a position from a longer sentence, or for the old label, a str, that a browser sends back after the
    sentence changed). Writing the value back also keeps it through runs that do not draw the selectbox (a closed
    lazy tab): Streamlit forgets the value of a widget that a run leaves out."""
    value = st.session_state.get(key)
    st.session_state[key] = value if value in options else default


def lazy_tabs(parts: dict[str, Callable[[], None]], key: str) -> None:
    """One tab per part; only the open tab's part runs (and is drawn): st.tabs(key=…, on_change="rerun")."""
    for tab, show in zip(st.tabs(list(parts), key=key, on_change="rerun"), parts.values(), strict=True):
        if tab.open:
            with tab:
                show()


def show_figure(fig: go.Figure, key: str) -> None:
    """Draw `fig` at the width its chart had in the browser last time, when known (see ui/widths.py)."""
    width = widths.width_of(key)
    if width is not None:
        spec = fig.to_dict()
        fig = Spec({**spec, "layout": {**spec["layout"], "width": width}})
    st.plotly_chart(fig, config=PLOTLY_CONFIG, key=key)


def side_by_side(figures: dict[str, go.Figure]) -> None:
    """Draw the figures in equal columns, left to right, each under its chart key (key → figure)."""
    for col, (key, fig) in zip(st.columns(len(figures)), figures.items(), strict=True):
        with col:
            show_figure(fig, key=key)


def head_role(model_name: str, layer: int, head: int) -> None:
    """What the head does, measured: its labels and scores on the repeated-random-token probe, and how to read them."""
    st.markdown("**What this head does, measured.** " + head_roles.summary(head_scores(model_name), layer, head))
    st.caption(
        "Measured on random tokens repeated twice, not on your sentence, so they describe the head's habit: "
        + head_roles.legend()
        + ". A head can look idle on your sentence: an induction head has nothing to find in a text that repeats nothing. "
        "The scores' formulas are on the *Heads forming* page."
    )
