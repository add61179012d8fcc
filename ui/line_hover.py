"""Hover a token in a line view to see its lines: the lines that start or end at that token are drawn again on top,
thicker, and every other line fades, until the pointer leaves the token's dot.

The figure (figures.multihead.token_lines) marks itself with layout.meta = LINE_VIEW. The page's script
(ui/page_script.py) runs hookLines() after each change of the page: it hooks plotly's own hover events of every
such chart; the lines it draws again are read from the chart's own data. Streamlit sends no hover event to the
server, so this lives in the browser; a click on a token (ui.token_clicks) keeps only its lines across reruns.
"""

from __future__ import annotations

from figures.multihead import LINE_VIEW

FADED = 0.12  # the opacity of the other lines while a token is hovered
MIN_OPACITY = 0.4  # a highlighted line is drawn at least this opaque (a faint line stays findable)

# A line trace holds its lines as x = [0, 1, NaN]*, y = [query, key, NaN]*; a token dot is a marker at x = 0 (the
# query side) or x = 1 (the key side), y = its position. Pixel positions come from the chart's own axes.
JS = f"""
  const svg = 'http://www.w3.org/2000/svg';
  const hooked = new WeakSet();
  const lineTraces = (gd) => [...gd.querySelectorAll('.scatterlayer .trace')]
    .filter((e) => e.__data__?.[0]?.trace?.mode === 'lines');
  const clear = (gd) => {{
    gd.querySelectorAll('.atlas-hover-lines').forEach((g) => g.remove());
    lineTraces(gd).filter((e) => 'atlasOpacity' in e.dataset).forEach((e) => {{
      e.style.opacity = e.dataset.atlasOpacity;
      delete e.dataset.atlasOpacity;
    }});
  }};
  const show = (gd, p) => {{
    clear(gd);
    if (!p || p.data.mode !== 'markers' || (p.x !== 0 && p.x !== 1)) return;
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
    const px = (x) => xa._offset + xa.l2p(x), py = (y) => ya._offset + ya.l2p(y);
    const g = document.createElementNS(svg, 'g');
    g.setAttribute('class', 'atlas-hover-lines');
    for (const t of gd._fullData) {{
      if (t.mode !== 'lines' || t.visible !== true) continue;
      for (let s = 0; s + 1 < t.y.length; s += 3) {{
        if (t.y[s + p.x] !== p.y) continue;
        const l = document.createElementNS(svg, 'line');
        const at = {{ x1: px(0), y1: py(t.y[s]), x2: px(1), y2: py(t.y[s + 1]), stroke: t.line.color, 'stroke-width': 3,
                      'stroke-opacity': Math.max(t.opacity, {MIN_OPACITY}) }};
        Object.entries(at).forEach(([k, v]) => l.setAttribute(k, v));
        g.appendChild(l);
      }}
    }}
    lineTraces(gd).forEach((e) => {{
      e.dataset.atlasOpacity = e.style.opacity;
      e.style.opacity = {FADED} * (parseFloat(e.style.opacity) || 1);
    }});
    gd.querySelector('.main-svg')?.appendChild(g);
  }};
  const hookLines = () => {{
    for (const gd of document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')) {{
      if (hooked.has(gd) || gd.layout?.meta !== '{LINE_VIEW}' || typeof gd.on !== 'function') continue;
      hooked.add(gd);
      gd.on('plotly_hover', (e) => show(gd, e.points?.[0]));
      gd.on('plotly_unhover', () => clear(gd));
    }}
  }};"""
