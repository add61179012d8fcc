"""Formulas, chart titles and x-axis titles that fit their column. A display formula or a title wider than its room is
set smaller, down to FLOOR of its size; a formula that would need less scrolls sideways (Streamlit's own style for a
wide formula), and a title is never set smaller than the floor (its ends may then be cut).

The page's script (ui/page_script.py) runs fitText() after each change of the page and each resize. Without
components v2 the page keeps Streamlit's and plotly's style.
"""

from __future__ import annotations

FLOOR = 0.6  # the smallest scale: a 16 px formula becomes 9.6 px, a 14 px chart title 8.4 px
SLACK_PX = 2  # KaTeX's rounding: a formula this much wider than its box does not scroll visibly
EDGE_PX = 4  # the room a chart title keeps from its chart's right edge…
MODEBAR_PX = 26  # …beyond the chart's toolbar, a column of 24 px buttons 2 px from that edge (figures/common.py)

# Each pass puts back the sizes it changed, reads every element's room and need, then writes the new sizes: reads
# and writes batched, so one layout per pass, not one per element. A formula's room is its .katex-display box and
# its need the box's scrollWidth; a chart title's room runs from where it starts to the chart's toolbar (less
# EDGE_PX); an x-axis title is centred under its plot, so its room is twice the way from its middle to the nearer edge
# of the chart (less EDGE_PX on each side).
JS = f"""
  const fitted = (e, px, room, need) => {{
    e.dataset.atlasPx = e.style.fontSize;
    e.style.fontSize = Math.max(px * room / need, px * {FLOOR}) + 'px';
  }};
  const fitText = () => {{
    document.querySelectorAll('[data-atlas-px]').forEach((e) => {{
      e.style.fontSize = e.dataset.atlasPx;
      delete e.dataset.atlasPx;
    }});
    const formulas = [...document.querySelectorAll('[data-testid="stMain"] .katex-display')]
      .map((d) => [d, d.querySelector(':scope > .katex')]).filter(([d, k]) => k && d.clientWidth > 0)
      .map(([d, k]) => [k, d.clientWidth, d.scrollWidth - {SLACK_PX}]);
    const inShownCharts = (texts) => [...document.querySelectorAll(`[data-testid="stMain"] .js-plotly-plot ${{texts}}`)]
      .filter((t) => t.ownerSVGElement && t.ownerSVGElement.getBoundingClientRect().width > 0);
    const titles = inShownCharts('text.gtitle')
      .map((t) => {{
        const b = t.getBBox();
        return [t, t.ownerSVGElement.getBoundingClientRect().width - b.x - {MODEBAR_PX + EDGE_PX}, b.width];
      }});
    const axes = inShownCharts('text[class^="x"][class$="title"]')
      .map((t) => {{
        const b = t.getBBox(), width = t.ownerSVGElement.getBoundingClientRect().width, middle = b.x + b.width / 2;
        return [t, 2 * (Math.min(middle, width - middle) - {EDGE_PX}), b.width];
      }});
    const sized = [...formulas, ...titles, ...axes]
      .map(([e, room, need]) => [e, room, need, parseFloat(getComputedStyle(e).fontSize)]);
    sized.forEach(([e, room, need, px]) => {{ if (need > room) fitted(e, px, room, need); }});
  }};"""
