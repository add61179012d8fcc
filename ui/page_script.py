"""The page's own script: one small component in the sidebar (ui/watcher.py: plain JavaScript in the page, nothing
sent back) that, after each change of the page and each resize, fits formulas and chart titles to their column
(ui/fit.py) and hooks the line views' hover (ui/line_hover.py). Without components v2 neither happens (one warning).
"""

from __future__ import annotations

from . import fit, line_hover
from .watcher import watcher

KEY = "atlas_page_script"
SCAN = fit.JS + line_hover.JS + "\n  const scan = () => { fitText(); hookLines(); };"


def component():
    """The page's script, or None (after one warning) when Streamlit has no st.components.v2.component."""
    return watcher(
        "atlas_page_script",
        SCAN,
        "formulas and chart titles keep their size (a wide one scrolls or is cut) and line views have no hover",
    )


_script = component()


def mount() -> None:
    """Mount the page's script (in the sidebar, no height); nothing without components v2."""
    if _script is not None:
        _script(key=KEY, height=0)
