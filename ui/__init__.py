"""Streamlit glue shared by the pages: sidebar state, cached models and traces, messages."""

from . import event_batches, lost_fragments, serving, user_keys
from .models import BatchKey, TraceKey, get_model, get_trace, get_traces, models_of
from .page import (
    SIDE_BY_SIDE_PX,
    after_figures,
    as_trained,
    choice,
    explain,
    folded,
    head_role,
    kept,
    kept_subset,
    kept_within,
    lazy_tabs,
    note,
    show_figure,
    side_by_side,
    stacking,
    token_clicks,
    token_names,
    trace_or_stop,
)
from .state import PRESETS, State, controls_place, sidebar
from .widths import drawn_at_least, drawn_narrow, panels_per_row

serving.install()  # one script run at a time per process (ui/serving.py)
lost_fragments.install()  # fragment requests a session cannot run as sent (ui/lost_fragments.py)
event_batches.install()  # a run's messages reach the event loop in batches (ui/event_batches.py)
user_keys.install()  # widgets look up their own key, not the whole session state (ui/user_keys.py)

__all__ = [
    "BatchKey",
    "PRESETS",
    "State",
    "TraceKey",
    "get_model",
    "get_trace",
    "get_traces",
    "after_figures",
    "as_trained",
    "choice",
    "controls_place",
    "drawn_at_least",
    "drawn_narrow",
    "explain",
    "folded",
    "head_role",
    "kept",
    "kept_subset",
    "kept_within",
    "lazy_tabs",
    "models_of",
    "note",
    "panels_per_row",
    "show_figure",
    "SIDE_BY_SIDE_PX",
    "side_by_side",
    "sidebar",
    "stacking",
    "token_clicks",
    "token_names",
    "trace_or_stop",
]
