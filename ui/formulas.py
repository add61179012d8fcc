"""Formulas that fit their column: a display formula wider than its column is set smaller, down to FLOOR of its
size, before it has to scroll sideways (Streamlit's own style for a wide formula).

A small component in the sidebar (ui/watcher.py: plain JavaScript in the page, nothing sent back) refits every
formula after each change of the page and each resize. Without components v2 a wide formula scrolls.
"""

from __future__ import annotations

from .watcher import watcher

KEY = "atlas_formulas"
FLOOR = 0.6  # the smallest scale a formula is set at (16 px type: 9.6 px); a formula that needs less scrolls instead
SLACK_PX = 2  # KaTeX's rounding: a formula this much wider than its box does not scroll visibly

# Each pass clears the sizes it set, reads every formula's room (its .katex-display box) and need (the box's
# scrollWidth), then writes the new sizes: reads and writes batched, so one layout per pass, not one per formula.
SCAN = f"""
  const scan = () => {{
    const shown = [...document.querySelectorAll('[data-testid="stMain"] .katex-display')]
      .map((d) => [d, d.querySelector(':scope > .katex')]).filter(([d, k]) => k && d.clientWidth > 0);
    shown.forEach(([, k]) => {{ k.style.fontSize = ''; }});
    const sizes = shown.map(([d, k]) => [d.clientWidth, d.scrollWidth, parseFloat(getComputedStyle(k).fontSize)]);
    shown.forEach(([, k], i) => {{
      const [room, need, px] = sizes[i];
      if (need > room + {SLACK_PX}) k.style.fontSize = Math.max(px * room / need, px * {FLOOR}) + 'px';
    }});
  }};"""


def fitter():
    """The fitting component, or None (after one warning) when Streamlit has no st.components.v2.component."""
    return watcher("atlas_fit_formulas", SCAN, "wide formulas scroll sideways (Streamlit's style)")


_fit = fitter()


def fit() -> None:
    """Mount the fitting component (in the sidebar, no height); nothing without components v2."""
    if _fit is not None:
        _fit(key=KEY, height=0)
