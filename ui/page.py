"""Small helpers every page uses."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import plotly.graph_objects as go
import streamlit as st

from figures.common import Spec, rows_fitted
from figures.narrow import narrow, readable_from, without_cell_numbers
from lessons import head_roles
from transformer import Trace, TraceInputError
from transformer.shortcuts import Tempered
from transformer.trace import token_limit

from . import a11y, export, presenter, widths
from .caches.heads import head_scores
from .models import TraceKey, get_model, get_trace
from .state import State


def trace_or_stop(key: TraceKey) -> Trace | Tempered:
    """The trace of `key` (the sidebar's is state.key); stops the page with a message when the text cannot be run."""
    try:
        tr = get_trace(key)
    except TraceInputError as err:
        st.info(f"{err} Pick a preset sentence, or type your own in the sentence box.")
        st.stop()
    if tr.truncated:
        limit = token_limit(get_model(key.model).cfg)
        st.warning(
            f"The text is {tr.n_tokens_in:,} tokens long; this app reads at most {limit} tokens of it, "
            f"so this page shows the first {len(tr.encoding)}."
        )
    export.add_trace(functools.partial(get_trace, key.untempered), key.model)  # the forward pass: cached, or run again
    return tr


def as_trained(state: State, what: str) -> None:
    """Say that `what` (something τ on the weights shown does not change: the model's outputs, its vectors) is the
    model's as trained, while the sidebar's τ reshapes only the weights shown."""
    if state.tau_on_weights_only:
        st.caption(
            f"{what}: the model's as trained (τ = 1). The sidebar's τ = {state.temperature:g} reshapes only the "
            "attention weights shown; switch on *τ in every layer* to run the whole model at τ."
        )


def explain(text: str, where=st) -> None:
    """A paragraph of explanation (markdown, no user text unescaped), drawn in `where`. Presenter view leaves it out:
    the teacher says it, and the screen keeps the title, the formula and the figure."""
    if not presenter.on():
        where.markdown(text)


def folded(label: str):
    """Where a page's own inputs (or code) go: the page itself, or in presenter view a closed expander called `label`,
    so that the first screen shows the figure and the teacher opens the inputs when needed."""
    return st.expander(label, expanded=False) if presenter.on() else st.container()


def after_figures(key: str):
    """A container (keyed presenter.AFTER_PREFIX + key) for what a page draws above its figures but a projector's first
    screen can do without (a note, a closed expander): in presenter view it is drawn at the end of its block, below the
    figures; elsewhere where it stands."""
    return st.container(key=presenter.AFTER_PREFIX + key)


def note(kind: str, message: str) -> None:
    """A lesson's (kind, message) text: "markdown" is an explanation (see explain);
    "info", "success" or "warning" always shows."""
    if kind == "markdown":
        explain(message)
    else:
        getattr(st, kind)(message)


# kept in the address, and while not drawn (a closed lazy tab)
PAGE_CONTROL = {"bind": "query-params", "persist_state": "session"}


def kept(key: str, default) -> dict:
    """Arguments for a page's control `key` that starts at `default`: `st.slider(…, **ui.kept(key, 8))`. Its value is
    kept in the address (a shared link opens with it) and while the control is not drawn (its lazy tab is closed)."""
    return {"key": key, "value": default, **PAGE_CONTROL}


def kept_within(key: str, default: int, lo: int, hi: int) -> dict:
    """`kept` for an integer slider over lo…hi, a range that moves with the sentence or the model: the kept value is
    brought back inside it, and the control starts at `default` brought inside it. The browser leaves a control out of
    the address while it shows its start value, so that value must be the one the page would pick itself."""
    if not lo <= st.session_state.get(key, lo) <= hi:
        st.session_state[key] = min(max(st.session_state[key], lo), hi)
    return kept(key, min(max(default, lo), hi))


def kept_subset(key: str, default: Sequence[int], n: int) -> dict:
    """Arguments for a multiselect `key` over range(n) that starts at `default`, kept like `kept`; kept choices that
    are no longer below n (the model or the table changed) are dropped."""
    if any(i >= n for i in st.session_state.get(key, ())):
        st.session_state[key] = [i for i in st.session_state[key] if i < n]
    return {"key": key, "default": [i for i in default if i < n], **PAGE_CONTROL}


def choice(key: str, options: Sequence, default) -> dict:
    """Arguments for a selectbox or radio `key` over `options` that starts at `default`, kept like `kept`. A value no
    longer among the options (a position past the end of a shorter sentence) falls back to `default`."""
    return {"key": key, "index": list(options).index(default), **PAGE_CONTROL}


def lazy_tabs(parts: dict[str, Callable[[], None]], key: str) -> None:
    """One tab per part; only the open tab's part runs (and is drawn): st.tabs(key=…, on_change="rerun"). The open
    tab is kept in the address (?key=label) and the step keys of presenter view move through the tabs."""
    presenter.remember_tabs(key, list(parts))
    tabs = st.tabs(list(parts), key=key, on_change="rerun", bind="query-params")
    if presenter.stale_tab(key):
        st.rerun()
    for tab, show in zip(tabs, parts.values(), strict=True):
        if tab.open:
            with tab:
                show()


def show_figure(fig: go.Figure, key: str, on_click: Callable[[], None] | None = None) -> None:
    """Draw `fig` at the width its chart had in the browser last time, when known (see ui/widths.py), without the
    numbers in heatmap cells that would be too small to read there, with larger text in presenter view, and its text
    alternative (ui/a11y.py); its numbers go into the page's CSV. on_click: called when a click selects points."""
    spec = fig.to_dict()
    narrow_column = widths.drawn_narrow(key)
    # (presenter view writes the numbers in cells at a size of its own, and makes the rows tall enough for it)
    least = None if presenter.on() else readable_from(spec, narrow_column)
    if not widths.drawn_at_least(key, least, "cell numbers"):
        spec = without_cell_numbers(spec)
    if narrow_column:
        spec = narrow(spec)
    layout = dict(spec["layout"])
    width = widths.width_of(key)
    if width is not None:
        layout["width"] = width
    if presenter.on():
        layout.update(presenter.larger(layout))
        spec = {**spec, "data": presenter.cell_text(spec["data"])}
        layout["height"] = widths.fitted_height(key, layout, spec["data"])  # the chart whole on the screen
        layout.update(rows_fitted(layout))  # rows of maps kept apart at the new height
        layout.update(presenter.thinned_ticks(layout))
    spec = {**spec, "layout": layout}
    export.add_figure(key, spec)
    clicks = {"on_select": on_click, "selection_mode": "points"} if on_click else {}
    a11y.before_chart()  # the skip link's target, before the run's first chart
    alt = a11y.description(fig, spec)  # its accessible name: what a screen reader says of the chart
    st.plotly_chart(Spec(spec), config=export.plotly_config(key), key=key, alt=alt, **clicks)
    a11y.after_chart(key, fig, spec)  # the description and the numbers, shown on request


def token_clicks(chart_key: str, token_key: str) -> Callable[[], None]:
    """For a line view: a click on a token's dot at either end (x = 0 or 1) sets the control `token_key` to that
    token, so only its lines stay; a click on nothing (or on a line's middle dot) sets it back to every token (-1)."""

    def pick() -> None:
        points = st.session_state[chart_key].selection.points
        ends = [round(p["y"]) for p in points if p.get("x") in (0, 1)]
        st.session_state[token_key] = ends[0] if ends else -1

    return pick


def token_names(labels: Sequence[str], every: str = "", prefix: str = "", last: str = "") -> Callable[[int], str]:
    """A select box's format function for token positions: 3 → "3: ␣bear" (after `prefix`; the last position gets `last`
    after its label), −1 → `every`. Widgets' format functions and callbacks come from modules, never from a page file:
    Streamlit keeps them with the session's widgets until its next run, and a function written in a page holds the
    page's globals, its trace among them (50 students: 50 traces beyond the shared cache's budget)."""
    return functools.partial(_token_name, tuple(labels), every, prefix, last)


def _token_name(labels: tuple[str, ...], every: str, prefix: str, last: str, i: int) -> str:
    return every if i < 0 else f"{prefix}{i}: {labels[i]}" + (last if i == len(labels) - 1 else "")


SIDE_BY_SIDE_PX = 1300  # below this screen width two charts side by side leave each plot under ~240 px: one per row


def side_by_side(figures: dict[str, go.Figure], below_px: int = SIDE_BY_SIDE_PX) -> None:
    """Draw the figures in equal columns, left to right, each under its chart key (key → figure); one per row on
    screens narrower than below_px (see stacking)."""
    with stacking(next(iter(figures)) + "_row", below_px):
        for col, (key, fig) in zip(st.columns(len(figures)), figures.items(), strict=True):
            with col:
                show_figure(fig, key=key)


def stacking(key: str, below_px: int):
    """A container (keyed `key`) whose columns stack one per row on screens narrower than below_px, for charts that
    cannot be read side by side there (Streamlit itself stacks columns only below 640 px). Static CSS, no user text."""
    outer = f":not(.st-key-{key} [data-testid='stColumn'] *)"  # not the columns nested inside its columns
    box, column = (
        f".st-key-{key} [data-testid='stHorizontalBlock']{outer}",
        f".st-key-{key} [data-testid='stColumn']{outer}",
    )
    st.html(
        f"<style>@media (max-width: {below_px}px) "
        f"{{ {box} {{ flex-wrap: wrap; }} {column} {{ min-width: 100%; }} }}</style>"
    )
    return st.container(key=key)


def head_role(model_name: str, layer: int, head: int) -> None:
    """What the head does, measured: its labels and scores on the repeated-random-token probe, and how to read them."""
    st.markdown("**What this head does, measured.** " + head_roles.summary(head_scores(model_name), layer, head))
    st.caption(
        "Measured on random tokens repeated twice, not on your sentence, so they describe the head's habit: "
        + head_roles.legend()
        + (
            ". A head can look idle on your sentence: an induction head has nothing to find in "
            "a text that repeats nothing. The scores' formulas are on the *Heads forming* page."
        )
    )
