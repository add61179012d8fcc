"""Layout in headless Chromium, at phone, tablet, laptop and desktop widths: legends clear of titles, no blank bands
under charts, plot areas wide enough, tables and widget labels not cut off, bar values not run together.

Each (page, width) is loaded once per module and measured by one script (MEASURE); the tests read those measurements.
The pages are the ones a lecturer reported layout defects on.
"""

from __future__ import annotations

import pytest

from figures.narrow import CELL_NOTE, MIN_CELL_TEXT_PX
from scripts.browser import CUT, new_tab, open_tab, settled, wait_rendered
from tests.browser.groups import by_group

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

WIDTHS = (390, 768, 1024, 1440)
# name → (address, tab to open, button to press first)
PAGES = {
    # ×100 (the address holds the label): the worked table's widest numbers
    "softmax": ("Softmax_and_temperature?softmax_scale=%C3%97100", None, None),
    "softmaxdk": ("Softmax_and_temperature", "2 · Why divide by √d_k?", None),
    "softmaxrow": ("Softmax_and_temperature", "3 · τ on one of the model's rows", None),
    "context": ("Context", None, None),
    "ablation": ("Multi_head", "5 · Switch heads off", None),
    "cross": ("Cross_attention", None, None),
    # 8 English words, 9 French: the alignment's numbers in cells ~26 px wide on a phone
    "crosslong": ("Cross_attention?phrase=my+two+black+cats+eat+the+white+cheeses", None, None),
    "positions": ("Positional_encoding?model=shakespeare-gpt", None, None),  # learned positions: the input panels show
    "future": ("Masking", "3 · Seeing the future", None),
    "lecture": ("Lecture_example", None, None),
    "next": ("Next_token", "2 · Generate text", "Generate one token"),  # the generation timeline and its step bars
    "lens": ("Next_token", "3 · The logit lens", None),
    "qkmap": ("Query_key_map", None, None),  # a map drawn to scale (x and y in the same units)
    "heads": ("Multi_head?model=shakespeare-gpt", None, None),  # a layer's heads side by side, wrapping into rows
    "forming": ("Heads_forming", None, None),  # eight heads in two layers, and two line charts with legends above
    "rope": ("RoPE_and_shared_heads?model=smollm2-135m", None, None),  # angles as a heatmap and as lines
    # three query heads, K and V of three heads
    "shared": ("RoPE_and_shared_heads?model=smollm2-135m", "4 · Shared key/value heads", None),
    "home": ("", None, None),
    "tokens": ("Tokens_and_embeddings?model=smollm2-135m", None, None),  # its chips: long tokens ("␣hiking")
    "tokensrows": ("Tokens_and_embeddings?model=smollm2-135m", "2 · Tokens → vectors", None),
    "tokensmap": ("Tokens_and_embeddings?model=smollm2-135m", "3 · A map of the space", None),
    "tokensnear": ("Tokens_and_embeddings?model=smollm2-135m", "5 · Nearest neighbours", None),
    "analogy": ("Tokens_and_embeddings?model=smollm2-135m", "6 · a − b + c", None),
    # a sentence short enough for numbers in the cells (10 tokens)
    "onehead": ("One_head?sentence=The+cat+sat+on+the+mat.", "4 · Mask, then softmax", None),
    "block": ("Inside_a_block", None, None),
    "encdec": ("Encoder_vs_decoder", None, None),
    "everyhead": ("Multi_head", "3 · Every head of the model", None),
    "means": ("Multi_head", "2 · Averages (not heads)", None),
}
MIN_PLOT_PX = 240  # the plot area of a chart (inside its axes)
MAX_BLANK_PX = 96  # the tallest band with nothing drawn in it, between a chart's plot area and its bottom edge

# Charts whose plot area is narrower than MIN_PLOT_PX at these widths (measured; plot widths in px in the comments):
# - at 390: a phone's whole column is ~358 px, and y tick labels and a y title (or a second y axis, or labels on both
#   sides) leave less than 240 px. A colour bar or a legend beside the plot goes under it in a column narrower than
#   figures.narrow.NARROW_PX (else the plots below were 55–155 px);
# - at 1440: three (or two) charts in a row, each still readable: 3 × 3 matrices, and 4 × 4 and 5 × 5 maps with
#   their numbers in the cells. Below 1,300 px each of them has a row of its own (ui.side_by_side).
# Any chart not listed must hold MIN_PLOT_PX; a listed chart must still hold MIN_LISTED_PX.
NARROW_IN_COLUMNS = {
    ("softmax", "Entropy and top probability"): (390,),  # 156: two y axes
    ("softmaxdk", "Saturation"): (390,),  # 233
    ("softmaxrow", "Scores of query"): (390,),  # 233
    ("context", "Cosine similarity"): (390,),  # 233
    ("context", "The word's vectors in 2 principal components"): (390,),  # 225
    ("context", "Sentence "): (390,),  # 233
    ("ablation", "Next-token probabilities"): (390,),  # 233
    ("cross", "Cross-attention, layer"): (390,),  # 191
    ("cross", "Step "): (390,),  # 233
    ("cross", "Encoder self-attention"): (390,),  # 207
    ("cross", "Decoder masked self-attention"): (390,),  # 155
    ("crosslong", "Cross-attention, layer"): (390,),  # 207
    ("crosslong", "Step "): (390,),  # 233, 213
    ("crosslong", "Encoder self-attention"): (390,),  # 217
    ("crosslong", "Decoder masked self-attention"): (390,),  # 207
    ("positions", "A few dimensions as waves"): (390,),  # 233
    ("positions", "token embedding W_E[id]"): (390,),  # 228
    ("positions", "+ position W_pos"): (390,),
    ("positions", "= "): (390,),
    ("future", "Weights without the mask"): (390,),  # 228
    ("forming", "Loss with and without the causal mask"): (390,),  # 233
    ("lecture", "W_"): (390, 1440),  # 230, 188: three in a row at 1440
    ("lecture", "Q = X·W_Q"): (1440,),  # 232
    ("lecture", "K = X·W_K"): (1440,),
    ("lecture", "V = X·W_V"): (1440,),
    ("lecture", "scores"): (390,),  # 222
    ("lecture", "weights = softmax"): (390,),  # 222: words on both axes
    ("lens", "Logit lens"): (390,),  # 171: one column per token
    ("qkmap", "Queries and keys"): (390,),  # 233
    ("forming", "Induction score of every head"): (390,),  # 233
    ("rope", "How many positions each pair needs"): (390,),  # 217
    ("shared", "9 query heads"): (390, 1440),  # 230; 191: beside its explanation at 1440 (three columns of "reads")
    ("home", "Attention weights, layer"): (390,),  # 228
    ("tokensrows", "Embedding rows W_E"): (390,),  # 228
    ("tokensmap", ""): (390,),  # 233: the vocabulary map (no title)
    ("tokensnear", "The 10 tokens nearest"): (390,),  # 233
    ("analogy", "Nearest to"): (390,),  # 233
    ("onehead", "Masked scores"): (390,),  # 228
    ("onehead", "Attention weights α"): (390,),  # 228
    ("block", "Length ‖x‖"): (390,),  # 163: stage names on the left
    ("block", "Mean μ"): (390,),  # 225
    ("block", "The "): (390,),  # 233
    ("block", "GELU, and the"): (390,),  # 233
    ("block", "MLP activations"): (390,),  # 228
    ("everyhead", "Opened:"): (390,),  # 228
    ("everyhead", "Lines,"): (390,),  # 130: token labels on both sides
    ("everyhead", "Every head of layer"): (390,),  # 130
}
MIN_LISTED_PX = 125
# Figures of several maps (figures.multihead.weight_panels) wrap their maps into rows at the width the browser measured
# (ui.widths.panels_per_row): each map holds MIN_MAP_PX (on a phone one map has the row).
PANEL_FIGURES = {
    ("heads", "The heads of layer"), ("forming", "Every head on the probe"), ("shared", "Weights of the query heads"),
    ("shared", "K after RoPE"), ("shared", "V of each"), ("means", "Averages (not heads)"),
}
MIN_MAP_PX = 125  # a phone: 358 px less the token labels (~115–140 px); the colour bar goes under the maps
# Charts that may leave a taller blank band (at most MAX_LISTED_BLANK_PX) at these widths: plotly turns x labels
# vertical when they crowd, so a chart's bottom margin holds them standing (figures/margins.py, sized before any
# width is known); on a wide screen plotly draws them level, and the room they would have taken stays blank.
BLANK_UNDER = {
    ("cross", "Decoder masked self-attention"): (768,),  # 100 px: "économique", "européenne" at 736 px
}
MAX_LISTED_BLANK_PX = 110

# The tables the lecturer reported (other pages' tables are not checked here). (The worked softmax table sits beside
# the bars only on screens wider than 1,100 px.)
TABLES = ("softmax_worked", "masking_table", "masking_top")

MEASURE = """() => {
  const contrast = (fill) => {  // against white
    const v = (fill.match(/[\\d.]+/g) || []).slice(0, 3).map((c) => c / 255)
      .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
    return v.length === 3 ? 1.05 / (0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2] + 0.05) : 21;
  };
  const box = (e) => {
    const r = e.getBoundingClientRect();
    return {l: r.left, r: r.right, t: r.top, b: r.bottom, w: r.width, h: r.height};
  };
  const charts = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
    .filter(p => p.getBoundingClientRect().width > 0).map((p) => {
    const drags = [...p.querySelectorAll('.nsewdrag')].map(box).sort((a, b) => b.w * b.h - a.w * a.h);
    const titles = [...p.querySelectorAll(
      'text.gtitle, text.xtitle, text[class^="x"][class$="title"], text.ytitle, text[class^="y"][class$="title"]')]
      .filter(e => e.textContent.trim()).map(e => ({cls: e.getAttribute('class'), text: e.textContent, ...box(e)}));
    const legend = p.querySelector('.legend .bg');
    // drawn under the plot: every x axis's labels and title (x2, x3, … of a figure's other maps), those maps and
    // their titles
    const below = [...p.querySelectorAll(
      '.xaxislayer-above text, text[class^="x"][class$="title"], .legend .bg, .colorbar, .nsewdrag, .annotation')]
      .map(box);
    return {
      title: (p.querySelector('text.gtitle') || {textContent: ''}).textContent,
      svg: box(p), plot: drags[0] || null, titles, legend: legend ? box(legend) : null, below,
      bartext: [...p.querySelectorAll('.bartext')]
        .filter(e => getComputedStyle(e).display !== 'none' && e.textContent).map(box),
      // the sizes of the numbers written in heatmap cells, and the note under the title
      cells: [...p.querySelectorAll('.heatmap-label text')].filter(e => /^[−-]?[0-9.]+$/.test(e.textContent.trim()))
        .map(e => parseFloat(getComputedStyle(e).fontSize)),
      note: (p.querySelector('text.gtitle-subtitle') || {textContent: ''}).textContent,
      // texts (and their coloured parts) written on the white of the chart under WCAG AA's 4.5:1, and their colour
      // (the numbers in heatmap cells take a colour against their cell's, and are left out)
      faint: [...p.querySelectorAll('text, tspan')].filter(e => e.textContent.trim() && !e.closest('.heatmap-label'))
        .map(e => [e.textContent.slice(0, 20), getComputedStyle(e).fill]).filter(([, f]) => contrast(f) < 4.5),
    };
  });
  const grids = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')].map((d) => {
    const s = d.querySelector('.dvn-scroller'), box = d.closest('[data-testid="stElementContainer"]');
    const key = box && [...box.classList].find((c) => c.startsWith('st-key-'));
    return s ? {key: key ? key.slice(7) : '', scroll: s.scrollWidth, client: s.clientWidth} : null;
  }).filter(Boolean);
  const labels = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stWidgetLabel"]')]
    .filter(e => e.clientWidth > 0).map(e => ({text: e.textContent, scroll: e.scrollWidth, client: e.clientWidth}));
  return {charts, grids, labels};
}"""

# What the page shows when no chart is visible: its charts' frames (width × height, visibility), its tabs (the
# selected one marked *), the app's run state and the end of the main column's text.
SHOWN = """() => ({
  charts: [...document.querySelectorAll('[data-testid="stMain"] .stPlotlyChart')].map((c) => {
    const r = c.getBoundingClientRect();
    return `${Math.round(r.width)}×${Math.round(r.height)} ${getComputedStyle(c).visibility}`;
  }),
  tabs: [...document.querySelectorAll('[data-testid="stMain"] [role="tab"]')]
    .map((t) => (t.getAttribute('aria-selected') === 'true' ? '*' : '') + t.innerText),
  state: document.querySelector('[data-testid="stApp"]').dataset.testScriptState,
  url: location.href,
  end: document.querySelector('[data-testid="stMain"]').innerText.slice(-300),
})"""


@pytest.fixture(scope="module")
def measured(base_url, profile):
    """(page name, width) → MEASURE's result (the worker's server and browser profile: conftest). Each page is loaded
    once, at the first width asked for, and then resized to the next ones, as a tablet turned or a window dragged
    wider: the browser reports the new chart widths and the page redraws for them (ui/widths.py). The cases come page
    by page."""
    cache, shown = {}, {}  # shown: the page now open, {name: tab}

    def get(name: str, width: int) -> dict:
        if (name, width) not in cache:
            if name in shown:
                page = shown[name]
                page.set_viewport_size({"width": width, "height": 900})
                wait_rendered(page)
            else:
                for other in shown.values():
                    other.close()
                shown.clear()
                page = shown[name] = new_tab(profile, viewport={"width": width, "height": 900})
                address, tab, button = PAGES[name]
                page.goto(f"{base_url}/{address}")
                wait_rendered(page)
                if tab:
                    open_tab(page, tab)
                if button:
                    page.get_by_role("button", name=button).click()
                    wait_rendered(page)
            assert page.locator('[data-testid="stException"]').count() == 0, (name, width)
            m = settled(page, MEASURE, tries=10, until=lambda m: bool(m["charts"]))  # every page here has a chart
            cache[name, width] = {**m, "cut": page.evaluate(CUT), "shown": "" if m["charts"] else page.evaluate(SHOWN)}
        return cache[name, width]

    yield get
    for page in shown.values():
        page.close()


def overlap(a: dict, b: dict, slack: float = 1.0) -> bool:
    return a["l"] + slack < b["r"] and b["l"] + slack < a["r"] and a["t"] + slack < b["b"] and b["t"] + slack < a["b"]


def listed(table: dict, name: str, title: str, width: int) -> bool:
    """Whether the chart (page name, title) is listed in `table` at this width (a title is listed by its start)."""
    return any(name == n and title.startswith(prefix) and width in widths for (n, prefix), widths in table.items())


PAIRS = [(name, width) for name in PAGES for width in WIDTHS]
CASES = by_group(PAIRS, [f"{name}-{width}" for name, width in PAIRS], [f"layout-{name}" for name, _ in PAIRS])


@pytest.mark.parametrize(("name", "width"), CASES)
def test_legends_and_titles_do_not_overprint(measured, name, width):
    """(Softmax page: the legend over the entropy chart's and the √d_k charts' titles; Cross-attention: the y-axis title
    longer than the plot, into the chart title.) No legend box overlaps a title, and no two titles overlap."""
    m = measured(name, width)
    assert m["charts"], m["shown"]
    charts = m["charts"]
    bad = []
    for c in charts:
        if c["legend"]:
            bad += [
                f"{c['title']!r}: legend over {t['cls']} {t['text']!r}" for t in c["titles"] if overlap(c["legend"], t)
            ]
        ts = c["titles"]
        bad += [
            f"{c['title']!r}: {a['text']!r} over {b['text']!r}"
            for i, a in enumerate(ts)
            for b in ts[i + 1 :]
            if overlap(a, b)
        ]
    assert bad == []


@pytest.mark.parametrize(("name", "width"), CASES)
def test_titles_stay_inside_their_chart(measured, name, width):
    """(Context at 390 px: the x-axis title "vector: emb = the embedding W_E[id], Lk = after block k" ran 29 px past the
    chart's right edge, cut.) Every chart title and axis title lies within its chart (ui/fit.py sets a wide one
    smaller)."""
    bad = []
    for c in measured(name, width)["charts"]:
        s = c["svg"]
        bad += [
            f"{c['title']!r}: {t['cls']} {t['text']!r}"
            for t in c["titles"]
            if t["l"] < s["l"] - 1 or t["r"] > s["r"] + 1 or t["t"] < s["t"] - 1 or t["b"] > s["b"] + 1
        ]
    assert bad == []


@pytest.mark.parametrize(("name", "width"), CASES)
def test_no_blank_band_under_a_chart(measured, name, width):
    """(Context cosine chart, the √d_k charts, the ablation chart: big empty space under the chart.) Between the plot
    area's bottom and the chart's bottom edge, nothing drawn leaves a band taller than MAX_BLANK_PX (BLANK_UNDER: a few
    px more)."""
    bad = []
    for c in measured(name, width)["charts"]:
        if not c["plot"]:
            continue
        top, gaps = c["plot"]["b"], []
        for r in sorted((r for r in c["below"] if r["h"] > 0 and r["b"] > c["plot"]["b"]), key=lambda r: r["t"]):
            gaps.append(r["t"] - top)
            top = max(top, r["b"])
        gaps.append(c["svg"]["b"] - top)
        if max(gaps) > (MAX_LISTED_BLANK_PX if listed(BLANK_UNDER, name, c["title"], width) else MAX_BLANK_PX):
            bad.append(f"{c['title']!r}: {max(gaps):.0f} px blank")
    assert bad == []


@pytest.mark.parametrize(("name", "width"), CASES)
def test_plot_areas_are_wide_enough(measured, name, width):
    """(Lecture page at 768 px: its matrices in three columns drawn 2 px wide; the binary counter likewise; Multi-head
    at 390 px: four maps of ~60 px in a row.) Every plot area is at least MIN_PLOT_PX wide, except the charts listed in
    NARROW_IN_COLUMNS, which must hold MIN_LISTED_PX, and the maps of PANEL_FIGURES (MIN_MAP_PX)."""
    too_narrow = []
    for c in measured(name, width)["charts"]:
        w = c["plot"]["w"] if c["plot"] else 0
        if any(name == n and c["title"].startswith(prefix) for n, prefix in PANEL_FIGURES):
            least = MIN_MAP_PX
        else:
            least = MIN_LISTED_PX if listed(NARROW_IN_COLUMNS, name, c["title"], width) else MIN_PLOT_PX
        if w < least:
            too_narrow.append(f"{c['title']!r}: {w:.0f} px")
    assert too_narrow == []


@pytest.mark.parametrize(("name", "width"), CASES)
def test_tables_and_widget_labels_are_not_cut_off(measured, name, width):
    """(Softmax page at ×100: the worked table cut its e^z and weight columns; Masking: the future table's last column;
    Context: the toggle label.) An st.dataframe is a canvas, so its cells cannot be read: its scroller must not be wider
    than its frame. Every widget label in the page is shown whole (no ellipsis)."""
    m = measured(name, width)
    assert [g for g in m["grids"] if g["key"] in TABLES and g["scroll"] > g["client"] + 1] == []
    assert [lab["text"] for lab in m["labels"] if lab["scroll"] > lab["client"] + 1] == []


@pytest.mark.parametrize(("name", "width"), CASES)
def test_bar_values_do_not_run_together(measured, name, width):
    """(Next token page: the generation step's bar values overprinted each other.) No
    two values written on bars overlap."""
    bad = []
    for c in measured(name, width)["charts"]:
        t = c["bartext"]
        bad += [c["title"] for i, a in enumerate(t) for b in t[i + 1 :] if overlap(a, b)]
    assert bad == []


@pytest.mark.parametrize(("name", "width"), CASES)
def test_numbers_in_heatmap_cells_are_readable(measured, name, width):
    """(Numbers in heatmap cells were written at 4–8 px on a phone: plotly shrinks them to the cell.) Every number
    written in a cell is at least MIN_CELL_TEXT_PX."""
    small = [(c["title"], px) for c in measured(name, width)["charts"] for px in c["cells"] if px < MIN_CELL_TEXT_PX]
    assert small == []


@pytest.mark.parametrize(("name", "width"), CASES)
def test_chart_text_has_the_contrast_of_body_text(measured, name, width):
    """(Tick labels, axis titles, panel titles, notes, values over bars and words beside points were the theme's grey,
    3.7:1 on white; a key's words orange, 2.3:1.) Every text on a chart has a contrast of at least 4.5:1 on white."""
    assert [(c["title"], *f) for c in measured(name, width)["charts"] for f in c["faint"]] == []


@pytest.mark.parametrize("width", by_group(list(WIDTHS), [str(w) for w in WIDTHS], ["layout-onehead"] * len(WIDTHS)))
def test_one_heads_maps_have_numbers_or_say_where_they_are(measured, width):
    """One head's masked scores and weights (10 tokens) write their numbers on a tablet and wider; on a phone, where
    they would be 6–8 px, the title says to tap a cell instead."""
    maps = [c for c in measured("onehead", width)["charts"] if c["title"].startswith(("Masked scores", "Attention w"))]
    assert len(maps) == 2
    if width == 390:
        assert [(c["cells"], c["note"]) for c in maps] == [([], CELL_NOTE)] * 2
    else:
        assert all(len(c["cells"]) >= 10 * 11 // 2 and not c["note"] for c in maps)  # the lower triangle, at least


@pytest.mark.parametrize("width", by_group(list(WIDTHS), [str(w) for w in WIDTHS], ["layout-lecture"] * len(WIDTHS)))
def test_lecture_weights_are_the_largest_matrix(measured, width):
    """(Lecture page: the attention weights, its point, drawn smaller than the other matrices.)"""
    areas = {c["title"]: c["plot"]["w"] * c["plot"]["h"] for c in measured("lecture", width)["charts"]}
    weights = areas.pop("weights = softmax (rows)")
    assert len(areas) == 10 and all(weights >= a for a in areas.values()), (weights, areas)


@pytest.mark.parametrize(("name", "width"), CASES)
def test_no_text_is_cut_off(measured, name, width):
    """No text in the page ends in Streamlit's "…" (a button's, a metric's label, a page link's title), no select box
    shows less than its value, no widget label runs under the next column (scripts.browser.CUT)."""
    assert measured(name, width)["cut"] == []
