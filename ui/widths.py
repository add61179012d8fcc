"""Each chart's width in the browser, sent back so that the next run can draw the chart at that width.

Streamlit's chart element keeps a new figure that has no layout.width hidden: it draws it, measures the chart's
frame, and shows it only once it has drawn it again at that width, ~100 ms later. A figure whose layout.width
already equals its frame's width is shown at its first draw. Every rerun mounts new charts (their id includes the
figure), so this comes after every slider move. The first run of a page, or of a tab opened for the first time,
has no widths yet: it draws as before.

In presenter view a second component reports, for every keyed chart, the room between its top and the bottom of
the first screen, and the screen's height: a chart that starts on the first screen is drawn short enough to end on
it, any other at most a screen tall (fitted_height), so that a projector shows each chart whole.

The report also holds the window's width: the controls bar above the page, which CSS shows only on a screen of at
most presenter.NARROW_PX, is not drawn at all on a wider one (bar_wanted), and on a narrower one the sidebar does
not draw its copy of the bar's controls (side_wanted). And the main column's width: on a phone
Streamlit stacks every row of columns, so each chart is as wide as the column, and a chart not measured yet at this
window's width (a tab opened for the first time) is drawn at that width, shown at its first draw. A window that
changes width forgets the widths of the charts it does not show (the hidden tabs'): they were measured for another
window.

A small component in the sidebar (Streamlit's components v2: plain JavaScript in the page, no iframe) measures
every keyed chart and reports the widths when they change, from a fragment, so that reporting reruns nothing but
itself. Without components v2 (a Streamlit that lacks it) the component is skipped after one warning
and every chart draws at Streamlit's default width; a page without the test ids the JavaScript looks for gets no
chart's width in its reports, and so the same default.
"""

from __future__ import annotations

import math

import streamlit as st

from figures.common import row_gap_px
from figures.multihead import PANEL_GAP, PANELS_PER_ROW
from figures.narrow import NARROW_PX

from . import presenter
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
# (chart key, what) → (the least width `what` needs, whether the chart was drawn with it): its cell numbers, …
LEAST_KEY = "atlas_least_widths"
REDRAW_KEY = "atlas_redraw"
SCREEN = ""  # the report's key for the window's width (no chart has an empty key)
MAIN = "#main"  # the report's key for the main column's width (no chart key holds "#")
STACKED_PX = 640  # below this window width Streamlit stacks columns (its theme's breakpoint): charts fill the column
BAR_DRAWN_KEY = "atlas_bar_drawn"  # whether the last run drew the controls bar (bar_wanted)
SIDE_DRAWN_KEY = "atlas_side_drawn"  # whether the last run drew the sidebar's copy of the bar's controls (side_wanted)
ROOM_KEY = "atlas_chart_rooms"  # presenter view: the browser's report {screen: px, rooms: {chart key: px}}
HEIGHTS_KEY = "atlas_heights"  # chart key → (the height it asked for, the least it takes, the height it was drawn at)
FRAMES_KEY = "atlas_frames"  # presenter view: chart key → its margins as last drawn: left + right, top, bottom (px)
SLACK_PX = 12  # left under a chart that ends on the first screen (rounding, the chart frame's border)
MIN_ROOM_PX = 200  # a chart that starts with less room than this under it is drawn for a screen of its own
MIN_PLOT_PX = 90  # the least plot height (inside the margins) a chart is given to end on the first screen
ROW_PX = 19  # a heatmap row that holds presenter.CELL_TEXT_PX text (plotly's line spacing, 1.3)

# Measures the frame Streamlit itself measures (stFullScreenFrame, getBoundingClientRect().width) for every chart in
# an element container with a user key, skipping hidden tabs (width 0) and full-screen charts, the window's width
# (innerWidth, what CSS media queries test) under the key SCREEN and the main column's inside width under MAIN. A new
# window width starts the widths afresh. Reports only changes, so a chart whose frame, container or key class is not
# found (test ids renamed) is skipped.
SCAN = """
  let known = {};
  const scan = () => {
    let changed = false;
    if (known[''] !== innerWidth) { known = {'': innerWidth}; changed = true; }  // the window (SCREEN)
    const main = document.querySelector('[data-testid="stMainBlockContainer"]');
    if (main) {
      const pad = getComputedStyle(main);
      const inside = main.getBoundingClientRect().width - parseFloat(pad.paddingLeft) - parseFloat(pad.paddingRight);
      if (Number.isFinite(inside) && known['#main'] !== inside) { known['#main'] = inside; changed = true; }  // MAIN
    }
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


# The room under each keyed chart's top (its frame's top in the page, not in the scrolled view) down to the bottom of
# the first screen, whole px, reported with the screen's height when any of them changes.
ROOM_SCAN = """
  let known = {}, screen = 0;
  const scan = () => {
    const now = {};
    for (const chart of document.querySelectorAll('[data-testid="stMain"] [data-testid="stPlotlyChart"]')) {
      const frame = chart.closest('[data-testid="stFullScreenFrame"]');
      const box = chart.closest('[data-testid="stElementContainer"]');
      const cls = box && [...box.classList].find((c) => c.startsWith('st-key-'));
      if (!frame || !cls || getComputedStyle(frame).position === 'fixed') continue;
      const r = frame.getBoundingClientRect();
      if (r.width > 0) now[cls.slice(7)] = Math.round(innerHeight - r.top - scrollY);
    }
    const keys = Object.keys(now);
    if (innerHeight !== screen || keys.some((k) => known[k] !== now[k])) {
      known = { ...known, ...now };
      screen = innerHeight;
      setStateValue('rooms', { screen, rooms: known });
    }
  };"""


def measurer():
    """The measuring component, or None (after one warning) when Streamlit has no st.components.v2.component."""
    return watcher("atlas_chart_widths", SCAN, "chart widths are not measured (Streamlit's default widths)")


_measure = measurer()
_rooms = watcher("atlas_chart_rooms", ROOM_SCAN, "charts keep their heights in presenter view")


@st.fragment
def measure() -> None:
    """Mount the measuring component (once per whole run, navigation.run: it watches the charts of every run of the
    page, and its reports rerun only this fragment); nothing without it.
    A report that changes how a chart is drawn (the maps per row of a panel figure; a narrow column's colour bar
    and legend under the plot) reruns the page, to draw it again."""
    if _measure is not None:
        _measure(key=KEY, on_widths_change=_check_drawn, height=0)
    if _rooms is not None and presenter.on():
        _rooms(key=ROOM_KEY, on_rooms_change=_check_drawn, height=0)
    if st.session_state.pop(REDRAW_KEY, False):
        st.rerun(scope="app")


def _check_drawn() -> None:
    """After a report: ask for a redraw if a chart the browser measured was drawn for another width. (Only measured
    ones: a report that comes before the page's first charts are drawn holds the main column's width, and a page
    rerun asked then would run without the widgets' values the browser has not sent yet.)"""
    panels, narrowed = st.session_state.get(PANELS_KEY, {}), st.session_state.get(NARROW_KEY, {})
    least_widths = st.session_state.get(LEAST_KEY, {})
    heights = st.session_state.get(HEIGHTS_KEY, {}) if presenter.on() else {}
    report = _report()
    if (
        any(_per_row(key, n, w) != per_row for key, (n, per_row) in panels.items() if (w := _width(report, key)))
        or any(narrow_at(w) != was for key, was in narrowed.items() if (w := _width(report, key)))
        or any((w >= least) != kept for (key, _), (least, kept) in least_widths.items() if (w := _width(report, key)))
        or any(_fit(key, asked, least) != drawn for key, (asked, least, drawn) in heights.items())
        or not st.session_state.get(BAR_DRAWN_KEY, True) and _bar_needed(presenter.on())
        or not st.session_state.get(SIDE_DRAWN_KEY, True) and side_needed()
    ):
        st.session_state[REDRAW_KEY] = True


def bar_wanted(presenting: bool) -> bool:
    """Whether a run draws the controls bar above the page (ui/state.py): in presenter view, and on a screen of at most
    presenter.NARROW_PX or one not measured yet, as its CSS shows it only there. Remembered, so that a screen that
    narrows past it redraws the page with the bar."""
    st.session_state[BAR_DRAWN_KEY] = wanted = _bar_needed(presenting)
    return wanted


def _bar_needed(presenting: bool) -> bool:
    width = width_of(SCREEN)
    return presenting or width is None or width <= presenter.NARROW_PX


def side_wanted() -> bool:
    """Whether a run draws the sentence, layer, head and τ controls in the sidebar too: not on a screen the browser
    said is at most presenter.NARROW_PX wide, where the sidebar starts closed and the bar above the page shows them
    (one set of controls: a phone's rerun draws five widgets fewer). Remembered, so that a screen that widens past it
    redraws the page with them."""
    st.session_state[SIDE_DRAWN_KEY] = wanted = side_needed()
    return wanted


def side_needed() -> bool:
    """Whether the sidebar holds the sentence, layer, head and τ controls on this screen: not on one the browser said
    is at most presenter.NARROW_PX wide (see side_wanted)."""
    width = width_of(SCREEN)
    return width is None or width > presenter.NARROW_PX


def per_row_at(width: float | None) -> int:
    """How many maps of a panel figure fit in a row of a chart `width` px wide (PANELS_PER_ROW when not measured)."""
    if width is None:
        return PANELS_PER_ROW
    return int(max(1, min(PANELS_PER_ROW, (width - PANEL_FRAME_PX) // PANEL_PX)))


def per_row_on_screen(width: float, n: int, height: float, frame: tuple[float, float, float]) -> int:
    """Presenter view: how many of n maps go in a row of a panel figure `width` px wide that ends on the first screen,
    `height` px tall with margins `frame` (left + right, top, bottom; px): the count that gives each map the largest
    square, in rows of equal length placed as figures.multihead.panel_grid and figures.common.rows_fitted place them.
    (Held to PANEL_PX each, SmolLM2's nine heads went three a row on a 1024 × 768 projector, each map 3.5 times wider
    than tall.)"""
    sides, top, bottom = frame

    def side(rows: int) -> float:  # px: the side of the largest square a map holds in `rows` rows
        per_row = -(-n // rows)
        gap = row_gap_px(bottom, named=per_row == 1)  # a column names its tokens under each map
        across = (width - sides) * (1 - PANEL_GAP * (per_row - 1)) / per_row
        return min(across, (height - top - bottom - gap * (rows - 1)) / rows)

    return -(-n // max(range(1, n + 1), key=side))  # (of equal sides, the fewest rows)


def panels_per_row(key: str, n: int) -> int:
    """How many of its n maps the chart `key` puts in a row at its last measured width (in presenter view, and its
    room on the first screen); remembered, so that a new width or room that changes it redraws the page."""
    per_row = _per_row(key, n, width_of(key))
    st.session_state.setdefault(PANELS_KEY, {})[key] = (n, per_row)
    return per_row


def _per_row(key: str, n: int, width: float | None) -> int:
    """panels_per_row for the chart `key` at `width`: per_row_on_screen in presenter view once the chart's room and
    margins are known, else as many maps as hold PANEL_PX each."""
    room = _room(key) if presenter.on() else None
    frame = st.session_state.get(FRAMES_KEY, {}).get(key)
    if width is None or room is None or frame is None:
        return min(n, per_row_at(width))
    return per_row_on_screen(width, n, room, frame)


def narrow_at(width: float | None) -> bool:
    """Whether a chart `width` px wide is narrower than figures.narrow.NARROW_PX (False when not known)."""
    return width is not None and width < NARROW_PX


def drawn_narrow(key: str) -> bool:
    """Whether the chart `key` is drawn narrow (narrow_at its width_of), remembered, so that a new width on the other
    side of NARROW_PX redraws the page."""
    st.session_state.setdefault(NARROW_KEY, {})[key] = narrow = narrow_at(width_of(key))
    return narrow


def drawn_at_least(key: str, least: float | None, what: str) -> bool:
    """Whether the chart `key` is drawn with `what` (e.g. the numbers in its cells), which needs it to be `least` px
    wide (None: it has no such thing, or it is not judged): its width is not known yet, or at least `least`;
    remembered, so that a width reported on the other side of `least` redraws the page."""
    if least is None:
        st.session_state.get(LEAST_KEY, {}).pop((key, what), None)
        return True
    width = width_of(key)
    st.session_state.setdefault(LEAST_KEY, {})[key, what] = (least, kept := width is None or width >= least)
    return kept


def width_of(key: str) -> float | None:
    """The width the browser last measured for the chart `key` at this window's width; for a chart not measured yet
    on a window narrower than STACKED_PX, the main column's; else None (not measured yet, a bad report, no
    component)."""
    report = _report()
    w = _width(report, key)
    if w is None and key not in (SCREEN, MAIN) and (_width(report, SCREEN) or STACKED_PX) < STACKED_PX:
        return _width(report, MAIN)
    return w


def _report() -> dict | None:
    """The last report's widths, if it is one. (One read of the component's state: Streamlit builds the value anew
    on each read, ~0.1 ms.)"""
    state = st.session_state.get(KEY) if _measure is not None else None
    widths = state.get("widths") if state is not None else None
    return widths if isinstance(widths, dict) and len(widths) <= MAX_CHARTS else None


def _width(report: dict | None, key: str) -> float | None:
    """The width `report` holds under `key`, if it is one a chart can have."""
    w = report.get(key) if report is not None else None
    if isinstance(w, int | float) and not isinstance(w, bool) and math.isfinite(w) and MIN_W <= w <= MAX_W:
        return float(w)
    return None


def fitted_height(key: str, layout: dict, data: list[dict]) -> int:
    """Presenter view: the height to draw the chart `key` at, from its layout's height: at most the room under its top
    on the first screen (less SLACK_PX), or a screen's height when it starts lower; at least its margins and
    MIN_PLOT_PX of plot, or ROW_PX a row for a heatmap with numbers in its cells (as asked before any report);
    remembered, so that a new room redraws the page."""
    margin = layout.get("margin") or {}
    asked = int(layout.get("height") or 450)
    rows = max((_rows(t["z"]) for t in data if t.get("type") == "heatmap" and t.get("texttemplate")), default=0)
    plot = max(MIN_PLOT_PX, ROW_PX * rows)
    least = min(asked, int(margin.get("t", 0) + margin.get("b", 0) + plot))
    drawn = _fit(key, asked, least)
    st.session_state.setdefault(HEIGHTS_KEY, {})[key] = (asked, least, drawn)
    frame = (margin.get("l", 0) + margin.get("r", 0), margin.get("t", 0), margin.get("b", 0))
    st.session_state.setdefault(FRAMES_KEY, {})[key] = frame
    return drawn


def _rows(z) -> int:
    """The rows of a heatmap's z: a list of rows, or plotly's typed array {dtype, bdata, shape: "rows, cols"}."""
    return int(str(z.get("shape", "1")).split(",")[0]) if isinstance(z, dict) else len(z)


def _fit(key: str, asked: int, least: int) -> int:
    """fitted_height from the last report; `asked` without one."""
    room = _room(key)
    return asked if room is None else int(max(least, min(asked, room)))


def _room(key: str) -> float | None:
    """The most the chart `key` may be drawn tall, from the last report ({screen, rooms} in the component's state):
    the room under its top on the first screen, or a screen's height when it starts lower (less than MIN_ROOM_PX),
    less SLACK_PX; None without a report."""
    state = st.session_state.get(ROOM_KEY) if _rooms is not None else None
    report = state.get("rooms") if state is not None else None
    if not isinstance(report, dict) or not isinstance(report.get("rooms"), dict):
        return None
    screen, room = report.get("screen"), report["rooms"].get(key)
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in (screen, room)):
        return None
    return (room if room >= MIN_ROOM_PX else screen) - SLACK_PX
