"""Presenter view and the step keys.

Presenter view (a toggle, kept in the address as ?present=true) is for a projector: the sidebar starts collapsed,
the shared controls sit in a compact bar above the figures, text and chart labels are larger, and the page's
explanations (`ui.explain` paragraphs and captions, which the teacher says aloud) are left out.

The step keys: ← and → (and PageUp/PageDown, what presentation clickers send) open the previous or next tab of a
page; past the first or last tab, or on a page without tabs, they open the previous or next page.
"""

from __future__ import annotations

import math
import re
import time

import streamlit as st

from . import navigation

AXIS = re.compile(r"[xy]axis\d*$")
KEY = "present"
SHOWN_KEY = "atlas_presented"  # whether the last whole run was in presenter view (sidebar_state)
TABS_KEY = "atlas_tabs"  # (page, tabs key, labels) of the lazy tabs the current page drew last
GOTO_KEY = "atlas_goto"  # the page a step key asked for, opened at the start of the next run
# A step key opens a tab from the script; a request the browser sent before that run reached it carries the tab it
# still showed, which Streamlit takes for a click and which would close the tab just opened (a chart's width report
# right after the page loaded did). STEPPED: {"key": tabs key, "label": the tab the keys opened, "old": the labels
# the browser may still send back, "at": time of the last step, "set": whether this run set the label, "reopen":
# whether the next run opens it again}.
STEPPED = "atlas_stepped"
STALE_S = 3.0  # how long a value the script set may still come back from the browser (here and in ui/state.py)
TICK_PX, TITLE_PX = 16, 22  # chart text in presenter view (Streamlit's theme: 12 and 14)
CELL_TEXT_PX = 14  # numbers in heatmap cells in presenter view, readable from the back of a room
TICK_GAP_PX = 12  # the least gap between two y tick labels (the height of TICK_PX letters): closer, every k-th is kept
BAR_KEY = "atlas_bar"  # the container of the controls bar above the page
BAR_PREFIX = "bar_"  # the keys of the bar's controls (the sidebar's: "w_")
NARROW_PX = 900  # below this width Streamlit starts with the sidebar closed: the bar shows instead
# On a narrow screen the bar leaves out the presets (they stay in the sidebar) to keep the first screen for the page,
# with their column, and the column of presenter view's step buttons when it is empty: the controls share the row.
BAR_COLUMN = f'.st-key-{BAR_KEY} [data-testid="stColumn"]'
BAR_CSS = (
    f"<style>.st-key-{BAR_KEY} {{ display: none; }} @media (max-width: {NARROW_PX}px) "
    f"{{ .st-key-{BAR_KEY} {{ display: flex; }} :is({BAR_COLUMN}:has(.st-key-{BAR_PREFIX}preset), "
    f"{BAR_COLUMN}:not(:has([data-testid='stElementContainer']))) {{ display: none; }} }}</style>"
)
# On a phone formulas are set at the text's size instead of 1.21× it, so fewer of them are wider than their column
# (the page script, ui/fit.py, sets those smaller still).
FORMULA_CSS = "<style>@media (max-width: 640px) { .katex-display > .katex { font-size: 1em; } }</style>"
# Streamlit cuts a button's text, a metric's label and a page link's title with "…" where they do not fit: in the
# page they wrap onto a second line instead, so a narrow column never hides words.
WRAP_CSS = (
    "<style>[data-testid='stMain'] :is(.stMarkdownEllipsis, .stMarkdownEllipsis *, "
    "[data-testid='stPageLink-NavLink'] > span:last-child) { white-space: normal; }</style>"
)
# Presenter view: larger type, and a first screen that holds the controls bar, the title and the page's first chart
# (ui/widths.py sizes that chart to end on the screen). The bar is drawn at 80 % without its "τ in every layer" switch
# (it stays in the sidebar) and starts in the header's band (the header keeps its buttons, clear of the bar); title,
# headings, gaps and formulas are tighter (Streamlit pulls the element after a markdown block up by 1rem, the margin a
# paragraph leaves: a formula's bottom margin and the gap make up that 1rem, or it runs under the next element); a
# paragraph of text that sits above a chart in the same block is drawn at the end of that block, below the chart, and
# so is what a page puts in ui.after_figures (an order in the block's flex column: the page's order stays for screen
# readers).
TEXT = '[data-testid="stElementContainer"]:has(> [data-testid="stMarkdown"]):not(:has(.katex-display, h1, h2, h3, h4))'
CHART = '[data-testid="stElementContainer"] [data-testid="stPlotlyChart"]'  # (a :has() holds no other :has())
SHORT_PX = 740  # a wide projector (1280 × 720): tighter still
AFTER_PREFIX = "after_figures_"  # the keys of ui.after_figures's containers: drawn at the end of their block
AFTER = f'[class*="st-key-{AFTER_PREFIX}"]'
CSS = f"""<style>
.st-key-{BAR_KEY} {{ display: flex !important; zoom: 0.8; }}
.st-key-{BAR_KEY} label p {{ font-size: 0.8rem; }}
.st-key-{BAR_PREFIX}tau_every_layer {{ display: none; }}
html {{ font-size: 19px; }}
[data-testid="stHeader"] {{ background: transparent; pointer-events: none; }}
[data-testid="stHeader"] :is(button, a) {{ pointer-events: auto; }}
[data-testid="stCaptionContainer"] {{ display: none; }}
[data-testid="stMainBlockContainer"] {{ padding: 0.6rem 4rem 2rem; max-width: none; }}
[data-testid="stMain"] [data-testid="stVerticalBlock"] {{ gap: 0.4rem; }}
[data-testid="stMain"] .katex-display {{ margin: 0 0 0.6rem; }}
h1 {{ font-size: 1.5rem !important; line-height: 1.3 !important; padding: 0 0 0.25rem !important; }}
[data-testid="stMain"] h2 {{ font-size: 1.3rem; padding: 0.2rem 0; }}
[data-testid="stMain"] h3 {{ font-size: 1.1rem; padding: 0.2rem 0; }}
[data-testid="stMain"] :is(h2, h3) {{ line-height: 1.3; }}
[data-testid="stMain"] [data-testid="stVerticalBlock"] > {TEXT}:has(~ {CHART}) {{ order: 1; }}
[data-testid="stMain"] [data-testid="stVerticalBlock"] > :is({AFTER}, :has(> {AFTER})) {{ order: 2; }}
@media (max-height: {SHORT_PX}px) {{
  .st-key-{BAR_KEY} {{ zoom: 0.72; }}
  [data-testid="stMain"] [data-testid="stVerticalBlock"] {{ gap: 0.25rem; }}
  [data-testid="stMain"] .katex-display {{ margin-bottom: 0.75rem; }}
  [data-testid="stMain"] .katex-display > .katex {{ font-size: 1em; }}
  h1 {{ font-size: 1.25rem !important; }}
}}
</style>"""
HIDDEN_KEYS_CSS = "<style>.st-key-step_pageup, .st-key-step_pagedown { display: none; }</style>"


def on() -> bool:
    """Whether presenter view is on: the toggle, or on a first visit the address (?present=true)."""
    if KEY in st.session_state:
        return bool(st.session_state[KEY])
    return st.query_params.get(KEY, "").lower() in ("true", "1")


def sidebar_state() -> str:
    """The sidebar's state for st.set_page_config, at the start of each whole run."""
    st.session_state[SHOWN_KEY] = on()
    return "collapsed" if on() else "auto"


def toggle() -> None:
    help_present = (
        "For a projector: larger text, controls above the figures, "
        "no written explanations (you give them). ← → (or a clicker) step through the tabs and pages."
    )
    st.toggle("Presenter view", key=KEY, bind="query-params", persist_state="session", help=help_present)
    if on() != st.session_state.get(SHOWN_KEY, on()):
        st.rerun(scope="app")  # switched in a run of the page alone (navigation.page_alone): the sidebar's state too


def style(presenting: bool) -> None:
    """The page's CSS (static, no user text): formulas, text that wraps instead of being cut, the controls bar's
    visibility, and in presenter view the larger type."""
    st.html(FORMULA_CSS + WRAP_CSS + BAR_CSS + (CSS if presenting else ""))


def larger(layout: dict) -> dict:
    """Layout updates for a chart in presenter view: ticks TICK_PX, axis titles and legend larger, the title TITLE_PX,
    margins and height grown in proportion (the margins were sized for the theme's 12 px labels)."""
    grow = TICK_PX / 12
    axes = [k for k in layout if AXIS.match(k)] or ["xaxis", "yaxis"]
    out = {
        k: {
            **(layout.get(k) or {}),
            "tickfont": {"size": TICK_PX},
            "title": {**_title(layout.get(k)), "font": {"size": TICK_PX + 2}},
        }
        for k in axes
    }
    margin = layout.get("margin") or {}
    out.update(
        font={"size": TICK_PX},
        legend={**(layout.get("legend") or {}), "font": {"size": TICK_PX}},
        title={**_title(layout), "font": {"size": TITLE_PX}},
        margin={**margin, **{side: round(margin[side] * grow) for side in "lrtb" if side in margin}},
        height=round((layout.get("height") or 420) * grow),
    )
    return out


def thinned_ticks(layout: dict) -> dict:
    """Layout updates for a chart fitted to the first screen (layout.height): each y axis of token labels (tickvals)
    whose labels would stand closer than TICK_GAP_PX keeps every k-th, so the ones shown can be read (SmolLM2's 61
    stages of the residual stream in ~300 px: each label ran over the next three); each x axis too when the chart's
    width is known, TICK_PX apart (tokens turned on their side under maps in rows: the ␣ and ↵ of a fallback font
    stand out of the line)."""
    margin = layout.get("margin") or {}
    plot = {  # px, every axis's domain in it
        "y": layout["height"] - margin.get("t", 0) - margin.get("b", 0),
        "x": (layout.get("width") or 0) - margin.get("l", 0) - margin.get("r", 0),
    }
    least = {"y": TICK_GAP_PX, "x": TICK_PX}  # px between two labels
    out = {}
    for name, axis in layout.items():
        ticks = axis.get("tickvals") if AXIS.match(name) and isinstance(axis, dict) else None
        numbers = isinstance(ticks, list) and all(isinstance(t, int | float) for t in ticks)
        if not numbers or len(ticks) < 2 or ticks[-1] <= ticks[0] or plot[name[0]] <= 0:  # (a typed array,
            continue  # categories, an x axis of a chart whose width is not known: left as they are)
        low, high = (axis.get("domain") or [0, 1])[:2]
        step = (ticks[-1] - ticks[0]) / (len(ticks) - 1)  # data units between two labels
        gap = plot[name[0]] * (high - low) * step / (ticks[-1] - ticks[0] + step)  # px: the labels fill the domain
        if gap < least[name[0]]:
            k = math.ceil(least[name[0]] / gap)
            out[name] = {**axis, "tickvals": ticks[::k], "ticktext": (axis.get("ticktext") or ticks)[::k]}
    return out


def cell_text(data: list[dict]) -> list[dict]:
    """Presenter view: the numbers written in heatmap cells at CELL_TEXT_PX (plotly would shrink them to the cell)."""
    return [
        {**t, "textfont": {**(t.get("textfont") or {}), "size": CELL_TEXT_PX}}
        if t.get("type") == "heatmap" and t.get("texttemplate") else t
        for t in data
    ]


def _title(parent) -> dict:
    """An element's title as a dict (plotly also takes a bare string)."""
    title = (parent or {}).get("title")
    return title if isinstance(title, dict) else {} if title is None else {"text": title}


def step(delta: int) -> None:
    """Open the next (delta = 1) or previous (-1) tab of the current page, or past
    its ends the next or previous page."""
    page = navigation.current()
    tabs = st.session_state.get(TABS_KEY)
    if tabs is not None and tabs[0] == page:
        _, key, labels = tabs
        # (none yet: the first is open)
        i = labels.index(st.session_state[key]) + delta if st.session_state.get(key) in labels else delta
        if 0 <= i < len(labels):
            stepped = st.session_state.get(STEPPED)
            kept = stepped["old"] if stepped is not None and stepped["key"] == key else ()  # another page's: dropped
            old = (*kept, st.session_state.get(key))
            st.session_state[key] = labels[i]
            st.session_state[STEPPED] = {
                "key": key, "label": labels[i], "old": old, "at": time.monotonic(), "set": True, "reopen": False
            }
            return
    other = navigation.neighbour(page, delta) if page else None
    if other is not None:
        st.session_state[GOTO_KEY] = other.path


def follow() -> None:
    """Open the page a step key asked for (call at the start of a page's run)."""
    goto = st.session_state.pop(GOTO_KEY, None)
    # an empty address: the pages' controls kept there cannot be cleared by name
    # (sidebar() writes the shared state back)
    if goto is not None:
        st.switch_page(str(navigation.ROOT / goto), query_params={})


def step_buttons() -> None:
    """◀ and ▶ buttons bound to ←/→, and two hidden ones bound to PageUp/PageDown."""
    st.html(HIDDEN_KEYS_CSS)
    with st.container(horizontal=True, gap="small"):
        st.button(
            "◀", key="step_back", on_click=step, args=(-1,), shortcut="Left", help="Previous step or page (←, PageUp)"
        )
        st.button(
            "▶", key="step_next", on_click=step, args=(1,), shortcut="Right", help="Next step or page (→, PageDown)"
        )
        st.button("PageUp", key="step_pageup", on_click=step, args=(-1,), shortcut="PageUp")
        st.button("PageDown", key="step_pagedown", on_click=step, args=(1,), shortcut="PageDown")


def remember_tabs(key: str, labels: list[str]) -> None:
    """Record the page's lazy tabs, for the step keys; open again a step's tab that a stale request closed."""
    st.session_state[TABS_KEY] = (navigation.current(), key, labels)
    stepped = st.session_state.get(STEPPED)
    if stepped is not None and stepped["key"] == key and stepped["reopen"]:
        st.session_state[key] = stepped["label"]
        stepped.update(reopen=False, set=True)


def stale_tab(key: str) -> bool:
    """After st.tabs(key=key): whether the open tab is one the browser showed before a step key's move, sent back
    within STALE_S of it (the request left before the move reached the browser) — no click of the user's. The next
    run opens the step's tab again (remember_tabs); a widget's value can only be set before the widget. Once a run
    the step did not set has the step's tab open, the browser shows it and the step is forgotten."""
    stepped = st.session_state.get(STEPPED)
    if stepped is None or stepped["key"] != key:
        return False
    value, was_set = st.session_state.get(key), stepped["set"]
    stepped["set"] = False
    if value in stepped["old"] and time.monotonic() - stepped["at"] <= STALE_S:
        stepped["reopen"] = True
        return True
    if not was_set:
        del st.session_state[STEPPED]
    return False
