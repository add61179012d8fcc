"""Saving what a page shows: each chart's camera button (PNG at slide resolution, or SVG), the numbers behind the
page's charts (CSV) and the model's trace of the sentence (NPZ), from the sidebar."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field

import streamlit as st

from figures.export import to_csv
from transformer import Trace
from transformer.trace_file import save_trace

FORMAT_KEY = "chart_format"
FORMATS = {"PNG": "png", "SVG": "svg"}
PNG_SCALE = 3  # a 600 px wide chart saves 1800 px wide: sharp on a projector or a slide
RECORD_KEY = "atlas_export"


@dataclass
class Record:
    """What the current run drew: its charts (key → figure dict), whether it offered its trace, and the places of
    their buttons."""

    numbers: object  # the sidebar slots of the two buttons
    trace_slot: object
    figures: dict[str, dict] = field(default_factory=dict)
    has_trace: bool = False


def sidebar() -> None:
    """The chart format choice and a place for this run's download buttons (filled as the page draws)."""
    st.markdown("**Save**")
    help_format = f"PNG: {PNG_SCALE}× the size on screen, for slides. SVG: drawn as lines and text, sharp at any size."
    st.radio(
        "Charts save as (📷 at a chart's top right)",
        list(FORMATS),
        key=FORMAT_KEY,
        horizontal=True,
        bind="query-params",
        persist_state="session",
        help=help_format,
    )
    st.session_state[RECORD_KEY] = Record(st.empty(), st.empty())


def plotly_config(key: str) -> dict:
    """The chart's toolbar: its camera button saves `key`.png (or .svg) in the chosen format."""
    fmt = FORMATS.get(st.session_state.get(FORMAT_KEY), "png")
    return {
        "displaylogo": False,
        "modeBarButtonsToRemove": ["lasso2d", "select2d"],
        "toImageButtonOptions": {"format": fmt, "filename": key, "scale": PNG_SCALE if fmt == "png" else 1},
    }


def _record() -> Record | None:
    return st.session_state.get(RECORD_KEY)


def add_figure(key: str, spec: dict) -> None:
    """Keep a drawn chart's numbers for the CSV (its button appears with the page's first chart)."""
    rec = _record()
    if rec is None:
        return
    if not rec.figures:
        figures = rec.figures
        help_csv = (
            "Every value the page's charts draw: one row per cell, bar or point (chart, trace, x, y, z), "
            "and the text a cell shows (the logit lens's tokens)."
        )
        rec.numbers.download_button(
            "Numbers on this page (CSV)",
            data=lambda: to_csv(figures),
            file_name="atlas-numbers.csv",
            mime="text/csv",
            on_click="ignore",
            key="save_csv",
            help=help_csv,
        )
    rec.figures[key] = spec


def add_trace(get_trace: Callable[[], Trace], model: str) -> None:
    """Offer the page's trace of `model`: every recorded array of the sentence's forward pass, by its engine name, in
    the trace file format (transformer/trace_file.py). get_trace fetches it when the button is pressed: Streamlit
    keeps each session's button data until the next run, and a trace held there would outlive the shared trace
    cache's byte budget (50 students: 50 traces more)."""
    rec = _record()
    if rec is None or rec.has_trace:
        return
    rec.has_trace = True
    help_npz = (
        "numpy.load(file) or `python -m transformer read-trace file`: the model, the tokens and their ids, and every "
        "recorded array (embeddings, Q, K, V, scores, weights, …) by its engine name. It holds the forward pass: at "
        "the sidebar's τ with *τ in every layer* on, else the model as trained (τ = 1)."
    )
    npz = {
        "file_name": "atlas-trace.npz",
        "mime": "application/zip",
        "on_click": "ignore",
        "key": "save_npz",
        "help": help_npz,
    }
    rec.trace_slot.download_button("The model's trace (NPZ)", data=lambda: trace_npz(get_trace(), model), **npz)


def trace_npz(tr: Trace, model: str) -> bytes:
    """The trace file's bytes (transformer/trace_file.py), as `python -m transformer trace` writes them."""
    buf = io.BytesIO()
    save_trace(buf, tr, model)
    return buf.getvalue()
