"""Each chart's width in the browser, sent back so that the next run can draw the chart at that width.

Streamlit's chart element keeps a new figure that has no layout.width hidden: it draws it, measures the chart's
frame, and shows it only once it has drawn it again at that width, ~100 ms later. A figure whose layout.width
already equals its frame's width is shown at its first draw. Every rerun mounts new charts (their id includes the
figure), so this comes after every slider move. The first run of a page, or of a tab opened for the first time,
has no widths yet: it draws as before.

A small component in the sidebar (Streamlit's components v2: plain JavaScript in the page, no iframe) measures
every keyed chart and reports the widths when they change, from a fragment, so that reporting reruns nothing but
itself. Without components v2 (a Streamlit that lacks it) the component is skipped after one warning
and every chart draws at Streamlit's default width; a page without the test ids the JavaScript looks for gets no
reports, and so the same default.
"""

from __future__ import annotations

import math

import streamlit as st

from figures.multihead import PANELS_PER_ROW
from figures.narrow import NARROW_PX

from .watcher import watcher

KEY = "atlas_chart_widths"
MIN_W, MAX_W = 150.0, 8000.0  # Streamlit never draws a chart narrower than 150 px
MAX_CHARTS = 200
# A figure of several maps side by side (figures.multihead.weight_panels) puts in a row as many as its width holds:
PANEL_PX = 150  # one map, readable from ~140 px, and the gap to the next
# beside the maps: the y tick labels and title on the left (~115 px), the colour bar on the right (~140)
PANEL_FRAME_PX = 260
PANELS_KEY = "atlas_panels_per_row"  # chart key → (its number of maps, the maps per row it was drawn with)
NARROW_KEY = "atlas_narrow"  # chart key → whether it was drawn for a narrow column (figures.narrow)
REDRAW_KEY = "atlas_redraw"

# Measures the frame Streamlit itself measures (stFullScreenFrame, getBoundingClientRect().width) for every chart in
# an element container with a user key, skipping hidden tabs (width 0) and full-screen charts. Reports only changes,
# so a chart whose frame, container or key class is not found (test ids renamed) is skipped and nothing is reported.
SCAN = """
  const known = {};
  const scan = () => {
    let changed = false;
    for (const chart of document.querySelectorAll('[data-testid="stMain"] [data-testid="stPlotlyChart"]')) {
      const frame = chart.closest('[data-testid="stFullScreenFrame"]');
      const box = chart.closest('[data-testid="stElementContainer"]');
      const cls = box && [...box.classList].find((c) => c.startsWith('st-key-'));
      if (!frame || !cls || getComputedStyle(frame).position === 'fixed') continue;
      const width = frame.getBoundingClientRect().width;
      const key = cls.slice(7);
      if (width > 0 && known[key] !== width) { known[key] = width; changed = true; }
    }
    if (changed) setStateValue('widths', { ...known });
  };"""


def measurer():
    """The measuring component, or None (after one warning) when Streamlit has no st.components.v2.component."""
    return watcher("atlas_chart_widths", SCAN, "chart widths are not measured (Streamlit's default widths)")


_measure = measurer()


@st.fragment
def measure() -> None:
    """Mount the measuring component (once per page run; its reports rerun only this fragment); nothing without it.
    A report that changes how a chart is drawn (the maps per row of a panel figure; a narrow column's colour bar
    and legend under the plot) reruns the page, to draw it again."""
    if _measure is not None:
        _measure(key=KEY, on_widths_change=_check_drawn, height=0)
    if st.session_state.pop(REDRAW_KEY, False):
        st.rerun(scope="app")


def _check_drawn() -> None:
    panels, narrowed = st.session_state.get(PANELS_KEY, {}), st.session_state.get(NARROW_KEY, {})
    if (
        any(min(n, per_row_at(width_of(key))) != per_row for key, (n, per_row) in panels.items())
        or any(is_narrow(key) != was for key, was in narrowed.items())
    ):
        st.session_state[REDRAW_KEY] = True


def per_row_at(width: float | None) -> int:
    """How many maps of a panel figure fit in a row of a chart `width` px wide (PANELS_PER_ROW when not measured)."""
    if width is None:
        return PANELS_PER_ROW
    return int(max(1, min(PANELS_PER_ROW, (width - PANEL_FRAME_PX) // PANEL_PX)))


def panels_per_row(key: str, n: int) -> int:
    """How many of its n maps the chart `key` puts in a row at its last measured width; remembered, so that a new
    width that changes it redraws the page."""
    per_row = min(n, per_row_at(width_of(key)))
    st.session_state.setdefault(PANELS_KEY, {})[key] = (n, per_row)
    return per_row


def is_narrow(key: str) -> bool:
    """Whether the chart `key` was last measured narrower than figures.narrow.NARROW_PX (False when not measured)."""
    width = width_of(key)
    return width is not None and width < NARROW_PX


def drawn_narrow(key: str) -> bool:
    """is_narrow(key), remembered, so that a new width on the other side of NARROW_PX redraws the page."""
    st.session_state.setdefault(NARROW_KEY, {})[key] = narrow = is_narrow(key)
    return narrow


def width_of(key: str) -> float | None:
    """The width the browser last measured for the chart `key`, or None
    (not measured yet, a bad report, no component)."""
    state = st.session_state.get(KEY) if _measure is not None else None
    widths = state.get("widths") if state is not None else None
    if not isinstance(widths, dict) or len(widths) > MAX_CHARTS:
        return None
    w = widths.get(key)
    if isinstance(w, int | float) and not isinstance(w, bool) and math.isfinite(w) and MIN_W <= w <= MAX_W:
        return float(w)
    return None
