"""The page's own script: one small component in the sidebar (ui/watcher.py: plain JavaScript in the page, nothing
sent back) that, after each change of the page and each resize, fits formulas and chart titles to their column
(ui/fit.py), hooks the line views' hover (ui/line_hover.py), lets a formula or code box still wider than its column
take the keyboard focus, and gives a tab back the focus a redraw took from it (ui/a11y.py). One element a run, not
one per script: each component mounted is a widget that every served run registers. Without components v2 none of
this happens (one warning).
"""

from __future__ import annotations

from . import a11y, fit, line_hover
from .watcher import watcher

KEY = "atlas_page_script"
SCAN = (
    fit.JS + line_hover.JS + a11y.KEYBOARD_JS + "\n  const scan = () => { fitText(); hookLines(); focusScrollable(); };"
)


def component():
    """The page's script, or None (after one warning) when Streamlit has no st.components.v2.component."""
    return watcher(
        "atlas_page_script",
        SCAN,
        "formulas and chart titles keep their size (a wide one scrolls or is cut), line views have no hover, a formula "
        "or code wider than its column takes no focus, and a tab being redrawn drops the focus",
    )


_script = component()


def mount() -> None:
    """Mount the page's script (in the sidebar, no height); nothing without components v2."""
    if _script is not None:
        _script(key=KEY, height=0)
