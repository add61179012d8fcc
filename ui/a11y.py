"""Accessibility glue (docs/accessibility.md): the page's skip link and focus outlines, text that meets WCAG AA
contrast, and each chart's text alternative and data table.

Every chart (ui.show_figure) gets its description (figures/describe.py) as text a screen reader reads just before
the chart and that the screen does not show, and under the chart a "Read as text, data as table" expander that shows
the description and the chart's numbers; the expander runs only when opened (on_change="rerun"), so a closed one costs
nothing. A figure is described once (`description`): a figure from a shared cache is drawn again on every rerun
without being read again.
"""

from __future__ import annotations

import html
import weakref

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from figures.describe import describe, grids
from figures.export import COLUMNS, rows
from lessons.words import md

from . import menu

MENU_KEY = "atlas_menu"  # the sidebar menu's key (ui/navigation.py, ui/menu.py)
ANCHOR_KEY = "atlas_anchor"  # the visually hidden container of the skip link's target
ANCHOR_ID = "atlas-chart"  # where the skip link moves the focus: just before the page's first chart
TABLE_SUFFIX = "_as_text"  # a chart's key + this: its "Read as text, data as table" expander, open or not
FIRST_KEY = "atlas_first_chart"  # set as the page starts (chart_target_ahead); the page's first chart takes it
# Text colours with a WCAG AA contrast (≥ 4.5) on white, the sidebar's grey (#f0f2f6) and code blocks' (#f7f7f6), where
# Streamlit's light theme falls short: captions (2.9), and the code colours of keywords (3.6), numbers and strings (2.5)
# and comments (3.5).
CAPTION = "#5c5e69"  # 6.4 on white, 5.8 on the sidebar
# Chart text the theme greys (3.7 on white): tick labels (ticks of the axes and colour bars), axis and colour bar
# titles, a title's note. Written darker, as captions; words plotly colours itself (a token's highlight) keep theirs.
CHART_TEXT = ", ".join(
    f".js-plotly-plot {s}" for s in (
        '[class$="tick"] > text', ".infolayer text.gtitle-subtitle",
        '.infolayer text[class$="title"]:not(.gtitle)', ".infolayer .cbtitle text",
    )
)
CODE = {"#0d5fa8": "keyword builtin function class-name boolean", "#127a6a": "number string char constant symbol",
        "#5d6170": "comment prolog doctype cdata"}  # 6.1, 4.9, 5.8 on a code block
FOCUS = "2px solid #1c4e80"  # the focus outline: contrast 8.9 on white
SKIP_LINK = f'<a class="atlas-skip" href="#{ANCHOR_ID}">Skip to the chart</a>'
ANCHOR = f'<div id="{ANCHOR_ID}" tabindex="-1"></div>'
SKIP_KEY = "atlas_skip"
# Static CSS, no user text. Visually hidden = the usual screen-reader-only pattern: in the page, not on the screen.
# The focus outline goes on the focused element, or where a control draws its focused input: a switch's label, a
# select box's or a text box's frame, a slider's thumb (its range input is visually hidden inside it). A heading's
# link icon, shown by Streamlit on hover only, shows when it has the focus; a tab's outline is drawn inside it (its
# row scrolls sideways and would cut an outline outside).
SR_ONLY = "position: absolute !important; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); " \
    "white-space: nowrap; margin: -1px;"
# Buttons that play a replay (Heads forming's ▶ Play): with reduced motion asked for (the system's setting) they give
# way to the step control beside them, which shows the chosen frame and moves one frame per key press.
PLAY_KEYS = ("heads_play",)
CODE_CSS = " ".join(
    f"{', '.join(f'code .token.{t}' for t in tokens.split())} {{ color: {colour} !important; }}"
    for colour, tokens in CODE.items()
)
CSS = f"""<style>
[data-testid="stCaptionContainer"] {{ opacity: 1 !important; }}
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] * {{ color: {CAPTION} !important; }}
{CHART_TEXT} {{ fill: {CAPTION} !important; }}
{CODE_CSS}
.st-key-{ANCHOR_KEY} {{ {SR_ONLY} }}
.st-key-{SKIP_KEY} {{ position: absolute; z-index: 1000; width: auto; pointer-events: none; }}
.atlas-skip {{ pointer-events: auto; }}
.atlas-skip:not(:focus) {{ {SR_ONLY} }}
.st-key-{MENU_KEY} h3 {{ font-size: 1rem; padding: 0.75rem 0 0.25rem; }}
{menu.CSS}
.atlas-skip:focus {{ display: inline-block; padding: 0.3rem 0.6rem; background: #fff; outline: {FOCUS}; }}
:focus-visible, [role="slider"]:focus, [data-baseweb="select"]:focus-within,
[data-testid="stTextArea"] [data-baseweb="textarea"]:focus-within, [data-baseweb="input"]:focus-within,
label:has(input:focus-visible), summary:focus-visible, div:has(> div > input[type="range"]:focus-visible)
{{ outline: {FOCUS} !important; outline-offset: 2px; }}
[role="tab"]:focus-visible {{ outline-offset: -2px !important; }}
[data-testid="stHeaderActionElements"] a:focus-visible {{ opacity: 1 !important; }}
#{ANCHOR_ID}:focus {{ outline: none; }}
@media (prefers-reduced-motion: reduce) {{
  *, *::before, *::after {{ animation-duration: 0.01ms !important; animation-iteration-count: 1 !important;
    transition-duration: 0.01ms !important; scroll-behavior: auto !important; }}
  {", ".join(f".st-key-{k}" for k in PLAY_KEYS)} {{ display: none; }}
}}
</style>"""


# Formulas and code wider than their column scroll sideways: each such box takes the keyboard focus (tabindex 0), so
# that the arrow keys can scroll it (WCAG 2.1.1; axe's scrollable-region-focusable), and gives it back once it fits.
SCROLLABLE_JS = """
  const focusScrollable = () => {
    for (const box of document.querySelectorAll('[data-testid="stMain"] :is(.katex-display, pre)')) {
      const scrolls = box.scrollWidth > box.clientWidth + 1;
      if (scrolls && box.tabIndex < 0) box.tabIndex = 0;
      else if (!scrolls && box.hasAttribute('tabindex')) box.removeAttribute('tabindex');
    }
  };"""
# While a rerun redraws a tab's part, Streamlit disables that tab (it is then no longer focusable: no tabindex), and the
# browser drops a focus it held to the page's body: a keyboard user who moved along the tab row with the arrow keys
# would start again from the top of the page. A tab that lost the focus that way takes it back once it is focusable
# again, unless the focus went elsewhere meanwhile.
TAB_FOCUS_JS = """
  let lost = null;
  const back = new MutationObserver(() => {  // the lost tab's attributes changed: focusable again?
    if (!lost.isConnected || document.activeElement !== document.body) forget();
    else if (lost.hasAttribute('tabindex')) { lost.focus({ preventScroll: true }); forget(); }
  });
  const forget = () => { back.disconnect(); lost = null; };
  const left = (e) => {
    if (e.relatedTarget !== null || !e.target.matches?.('[role="tab"]:not([tabindex])')) return;
    forget();
    lost = e.target;
    back.observe(lost, { attributes: true });
  };
  document.addEventListener('focusout', left, true);
  onStop(() => { document.removeEventListener('focusout', left, true); forget(); });"""
KEYBOARD_JS = SCROLLABLE_JS + TAB_FOCUS_JS  # run by the page's script (ui/page_script.py)


def skip_link() -> None:
    """At the top of the page: a link that moves the focus to the page's first chart (the keyboard skips the
    sidebar and the controls), and the page's accessibility CSS. (The script that lets wide formulas take the focus
    and gives a tab back the focus a redraw took from it, KEYBOARD_JS, is part of the page's script.)"""
    st.html(CSS)
    with st.container(key=SKIP_KEY):  # out of the page's flow: it takes no room until focused
        st.markdown(SKIP_LINK, unsafe_allow_html=True)  # a fixed string


_DESCRIBED: dict[int, str] = {}  # id(figure) → its description, for as long as the figure lives


def description(fig: go.Figure, spec: dict | None = None) -> str:
    """The figure's description (figures/describe.py, plain text), computed on the figure's first drawing only, from
    `spec` (the figure as drawn: plotly JSON) when given.

    Figures are never changed once built (figures/common.Spec; shared cached objects are read-only), and what the
    view adds when drawing (width, presenter fonts, a colour bar moved under a narrow chart) changes no word of it.
    The entry goes with the figure (weakref.finalize), so a figure built afresh on each run is no entry for long and an
    id is never met again while its entry lives."""
    key = id(fig)
    text = _DESCRIBED.get(key)
    if text is None:
        text = _DESCRIBED[key] = describe(fig if spec is None else spec)
        weakref.finalize(fig, _DESCRIBED.pop, key, None)
    return text


def chart_target_ahead() -> None:
    """At the start of the page's run (navigation.page_alone): its first chart takes the skip link's target."""
    st.session_state[FIRST_KEY] = True


def before_chart() -> None:
    """Before the run's first chart, visually hidden: the skip link's target. (Each chart's description is its
    accessible name: ui.page.show_figure gives it to the chart as `alt`, which Streamlit sets as the aria-label of the
    chart's figure, role="figure", read by a screen reader as the chart is reached.)"""
    if st.session_state.pop(FIRST_KEY, False):
        with st.container(key=ANCHOR_KEY):
            st.markdown(ANCHOR, unsafe_allow_html=True)  # a fixed string


def after_chart(key: str, fig: go.Figure, spec: dict) -> None:
    """Under a chart: the description and the numbers (of the chart as drawn, `spec`), shown on request."""
    box = st.expander("Read as text, data as table", key=key + TABLE_SUFFIX, on_change="rerun")
    if box.open:
        with box:
            st.markdown(md(description(fig, spec)))
            for name, table in tables(spec):
                if name:
                    st.caption(md(name))
                st.dataframe(table)


def tables(spec: dict) -> list[tuple[str, pd.DataFrame]]:
    """The chart's numbers: each heatmap as its grid (rows and columns named as on the axes), the other traces as one
    table of points (the CSV's columns: trace, x, y, z, text; those empty everywhere left out)."""
    out = [(name, pd.DataFrame(z, index=unique(y), columns=unique(x))) for name, y, x, z in grids(spec)]
    others = [t for t in spec.get("data", []) if t.get("type") != "heatmap"]
    points = [r[1:] for r in rows("", {**spec, "data": others})]
    if points:
        columns = {name: column(list(vs)) for name, vs in zip(COLUMNS[1:], zip(*points, strict=True), strict=True)}
        out.append(("", pd.DataFrame({k: v for k, v in columns.items() if v is not None})))
    return out


def column(cells: list) -> list | None:
    """A table column: numbers as numbers when all are (a blank one empty), else every cell as text (a column of one
    type, as a table needs); None when every cell is blank (z of a 2-D chart, text of most)."""
    if all(v == "" for v in cells):
        return None
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in cells):
        return [float(v) for v in cells]
    return [html.unescape(str(v)) for v in cells]  # as the chart writes it (a CSV cell also guards formulas)


def unique(labels: list[str]) -> list[str]:
    """Row or column names a table can hold: a repeated label (the same token twice) gets its position."""
    return [f"{i}: {s}" for i, s in enumerate(labels)] if len(set(labels)) < len(labels) else list(labels)
