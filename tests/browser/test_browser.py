"""The app in headless Chromium: every page loads and every tab draws, at a desktop's and a phone's width, without
console errors, cut text or a serious accessibility violation; links restore state, charts keep their labels."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import plotly
import pytest

from scripts.browser import CUT, ROOT, open_tab, page_url, wait_rendered
from tests.apptest_utils import PAGES as PAGE_FILES
from tests.apptest_utils import XSS_PAYLOADS
from tests.browser.axe import add_axe, serious
from tests.browser.groups import by_group
from ui import fit, presenter

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

PAGES = [None, *PAGE_FILES]  # None: the home page
NAMES = ["home" if p is None else p.stem for p in PAGES]
NO_FORMULA = {"0_Guided_tour"}  # pages with no display formula
# plotly.js as a global, to draw figures by hand
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


# Every shown display formula: its box's width and the width it needs (a formula that needs more scrolls sideways).
FORMULAS = """() => [...document.querySelectorAll('[data-testid="stMain"] .katex-display')]
  .filter((d) => d.clientWidth > 0)
  .map((d) => ({text: d.textContent.slice(0, 50), room: d.clientWidth, need: d.scrollWidth}))"""

# Every shown chart title: where it ends, and where its chart's toolbar starts (the chart's width if it has none).
TITLES = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot text.gtitle')]
  .filter((t) => t.ownerSVGElement.getBoundingClientRect().width > 0)
  .map((t) => {
    const b = t.getBBox(), svg = t.ownerSVGElement.getBoundingClientRect();
    const bar = t.ownerSVGElement.closest('.js-plotly-plot').querySelector('.modebar-group');
    const free = bar ? bar.getBoundingClientRect().left - svg.left : svg.width;
    return {text: t.textContent, right: b.x + b.width, free};
  })"""


def resize(tab, width: int) -> None:
    tab.set_viewport_size({"width": width, "height": 844})
    wait_rendered(tab)


TABBED = [p for p in PAGES if p and "ui.lazy_tabs(" in p.read_text(encoding="utf-8")]


def test_the_pages_with_lazy_tabs_are_found():
    assert [p.stem for p in TABBED] == [
        "13_RoPE_and_shared_heads", "14_Encoder_vs_decoder", "1_Tokens_and_embeddings", "3_One_head", "4_Masking",
        "5_Softmax_and_temperature", "7_Multi_head", "9_Next_token",
    ]


FIRST_PRESS = {"2 · Generate text": "Generate one token"}  # tabs that draw a chart once a button is pressed
TAB_LABELS = """() => [...document.querySelectorAll('[data-testid="stMain"] [role="tab"]')].map((t) => t.innerText)"""


@pytest.mark.parametrize("page_file", by_group(PAGES, NAMES, [f"load-{n}" for n in NAMES]))
def test_every_tab_at_a_desktop_and_a_phone(base_url, tab, page_file):
    """One load per page, opened by a link whose sentence holds HTML and script (every payload in one sentence: any
    one that ran would set window.__xss or open a dialog): each tab at 1300 px, then the page resized to 390 px and
    each tab again (in reverse order, so the open tab comes first). In every tab: no exception, a chart drawn, no text
    cut (Encoder-decoder: "A phrase i…", "mean of the h…"; Next token: "Reset to the…"; the layout test checks the
    widths between, on its pages) and no serious or critical axe-core violation (WCAG 2.0/2.1 A and AA,
    tests/browser/axe.py; presenter view: tests/browser/test_projector.py). On the phone, in every tab: no formula
    scrolls sideways and no chart title runs past its chart (ui/fit.py sets a wide one smaller; the few formulas too
    wide even at its floor are written on two lines); and no console error all along."""
    tab.goto(page_url(base_url, page_file) + "?sentence=" + urllib.parse.quote(" ".join(XSS_PAYLOADS)))
    wait_rendered(tab)
    add_axe(tab)
    labels = tab.evaluate(TAB_LABELS) or [None]
    assert len(labels) >= 2 or page_file not in TABBED
    found, checked, formulas, titles = [], 0, [], []
    for width, order in ((1300, labels), (390, labels[::-1])):
        if width != 1300:
            resize(tab, width)
        for i, label in enumerate(order):
            if label is not None and i > 0:
                open_tab(tab, label)
                if label in FIRST_PRESS and width == 1300:
                    tab.get_by_role("button", name=FIRST_PRESS[label]).click()
                    wait_rendered(tab)
            where = (width, label)
            assert tab.locator('[data-testid="stException"]').count() == 0, where
            # The controls bar: drawn on the phone (the report of the narrower window redrew the page with it); on
            # the desktop not drawn at all once a run followed the browser's report (opening a tab is one)
            bar = tab.locator(f".st-key-{presenter.BAR_KEY} [data-testid='stSlider']")
            if width == 1300 and i > 0 and label is not None:
                assert bar.count() == 0, where
            if width == 390:
                assert bar.first.is_visible(), where
            assert label is None or tab.locator('[role="tabpanel"]:visible .stPlotlyChart .main-svg').count() > 0, where
            assert (where, tab.evaluate(CUT)) == (where, [])
            found += serious(tab, f"{width} px{f', tab {label}' if label else ''}")
            if width == 390:  # on the phone, in every tab
                formulas += tab.evaluate(FORMULAS)
                titles += [t for t in tab.evaluate(TITLES) if t not in titles]
            checked += 1
    assert checked == 2 * len(labels)
    assert found == [], "\n".join(found)
    assert tab.evaluate("window.__xss") is None and tab.dialogs == []
    assert formulas or page_file is None or page_file.stem in NO_FORMULA
    assert [f for f in formulas if f["need"] > f["room"] + fit.SLACK_PX] == []
    assert titles or tab.locator('[data-testid="stMain"] .js-plotly-plot').count() == 0  # every chart has a title
    assert [t for t in titles if t["right"] > t["free"]] == []  # neither cut nor under the toolbar's buttons
    assert tab.errors == []


def test_query_string_restores_state(base_url, tab):
    query = urllib.parse.urlencode(
        {"sentence": "The cat sat on the mat.", "layer": "1", "head": "2", "temperature": "0.5"}
    )
    tab.goto(base_url + "/?" + query)
    wait_rendered(tab)
    assert tab.get_by_role("textbox", name="Sentence").input_value() == "The cat sat on the mat."
    playwright_api.expect(tab.locator(".stPlotlyChart").first).to_contain_text("layer 1, head 2")


TOKEN_TAB = {
    "3_One_head": ("5 · One query's weighted sum", "Query token i"),
    "7_Multi_head": ("4 · Concat and W_O", "Token"),
}


TOKEN_PAGES = [p for p in PAGES if p and p.stem in ("3_One_head", "7_Multi_head", "8_Inside_a_block", "9_Next_token")]


@pytest.mark.parametrize(
    "page_file", by_group(TOKEN_PAGES, [p.stem for p in TOKEN_PAGES], [f"token-{p.stem}" for p in TOKEN_PAGES])
)
def test_token_choice_survives_a_new_sentence(base_url, tab, page_file):
    """After the sentence changes, a browser sends the token selectbox's old label back ("3: ␣not", now another token's
    position); the next rerun must fall back to a valid token (found by the load
    generator: a TypeError on pages 3, 7, 8)."""
    tab.goto(page_url(base_url, page_file) + "?sentence=" + urllib.parse.quote("To be or not"))
    wait_rendered(tab)
    if page_file.stem in TOKEN_TAB:  # the tab with the token selectbox
        label, box_label = TOKEN_TAB[page_file.stem]
        open_tab(tab, label)
        playwright_api.expect(tab.get_by_text(box_label, exact=True)).to_be_visible()
    box = tab.get_by_role("textbox", name="Sentence")
    box.fill("To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer")
    box.press("Control+Enter")
    wait_rendered(tab)
    # another rerun
    tab.locator('[data-testid="stSidebar"] input[aria-label^="Attention temperature"]').press("ArrowRight")
    wait_rendered(tab)
    assert tab.locator('[data-testid="stException"]').count() == 0
    assert tab.errors == []


# Figures whose margin plotly.js may still push in the narrow column, each with why: (page stem, title start, width).
# its legend (a head per entry) under the plot wraps deeper than margins.fit counts in a narrow column
PUSH_ALLOWED = {("7_Multi_head", "Every head of layer", 380)}
MARGIN_SENTENCES = [
    None,
    "Supercalifragilistic 日本語のテキスト 🐻‍❄️ antidisestablishmentarianism, internationalization!",
]
PLOT_MARGINS = """async ([figures, widths]) => {
  // Streamlit's theme, as it styles our charts
  const template = document.querySelector('.js-plotly-plot').layout.template;
  const pushed = [];
  for (const [name, fig] of figures) for (const width of widths) {
    const div = document.createElement('div');
    document.querySelector('[data-testid="stMain"]').prepend(div);
    await Plotly.newPlot(div, fig.data, {...fig.layout, template, width});
    const got = div._fullLayout._size, want = fig.layout.margin;
    const over = ['l', 'r', 't', 'b'].filter(k => got[k] > want[k] + 0.5)
      .map(k => `${k} ${want[k]} → ${Math.round(got[k])}`);
    if (over.length) pushed.push(`${name} at ${width} px: ${over.join(', ')}`);
    Plotly.purge(div);
    div.remove();
  }
  return pushed;
}"""


def test_figure_margins_hold_their_labels(base_url, tab):
    """figures.margins gives every figure room for its labels, colour bars and legends, so that plotly.js with
    Streamlit's theme pushes no margin out (a push draws the whole chart a second time). Every figure of every page
    and tab, for the default sentence and one of long, CJK and emoji tokens, in a narrow and a wide column."""
    from tests.apptest_utils import charts, each_tab, run_page

    figures = []
    for page_file in PAGES:
        for sentence in MARGIN_SENTENCES:
            at = run_page(
                "app.py" if page_file is None else f"pages/{page_file.name}",
                **({"sentence": sentence} if sentence else {}),
            )
            name = "home" if page_file is None else page_file.stem
            figures += [(f"{name} '{c['layout'].get('title', {}).get('text', '')}'", c) for c in charts(at)]
            for _ in each_tab(at):
                figures += [
                    (f"{page_file.stem} '{c['layout'].get('title', {}).get('text', '')}'", c) for c in charts(at)
                ]
    assert len(figures) > 100
    tab.goto(page_url(base_url, None))
    wait_rendered(tab)
    tab.add_script_tag(path=str(PLOTLY_JS))
    pushed = tab.evaluate(PLOT_MARGINS, [figures, [380, 1100]])
    allowed = [
        p
        for p in pushed
        if any(p.startswith(f"{stem} '{title}") and f" at {w} px:" in p for stem, title, w in PUSH_ALLOWED)
    ]
    assert len(allowed) <= 2 * len(PUSH_ALLOWED)  # (one per sentence)
    assert [p for p in pushed if p not in allowed] == []


# The chart key (its st-key-… class) of a chart div, in the page's JavaScript.
CHART_KEY = "[...div.closest('[data-testid=\"stElementContainer\"]').classList].find((c) => c.startsWith('st-key-'))"
# Notes, for each chart div plotly draws into, its chart key, and its visibility and width when its first drawing is
# over.
FIRST_DRAWS = """
window.firstDraws = [];
const watch = (div) => {
  if (div.watched) return;
  div.watched = true;
  div.on('plotly_afterplot', () => div.firstDraw || window.firstDraws.push(div.firstDraw = {
    key: CHART_KEY,
    visibility: getComputedStyle(div).visibility, width: div._fullLayout.width,
    frame: div.closest('[data-testid="stFullScreenFrame"]').getBoundingClientRect().width}));
};
new MutationObserver(
  () => document.querySelectorAll('.js-plotly-plot').forEach((d) => typeof d.on === 'function' && watch(d))
).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ['class']});
""".replace("CHART_KEY", CHART_KEY)


def test_a_redrawn_chart_is_shown_at_its_first_draw(base_url, tab):
    """ui/widths.py: the browser reports each chart's width, so that the next run's figure has it. Without it,
    Streamlit draws a new chart hidden, measures its column, draws it again and only then shows it. The report
    itself must not rerun the page: the charts drawn before it stay in place."""
    tab.add_init_script(FIRST_DRAWS)
    tab.goto(page_url(base_url, ROOT / "pages" / "3_One_head.py"))
    wait_rendered(tab)
    open_tab(tab, "4 · Mask, then softmax")  # charts no run has measured yet: drawn hidden first
    assert [d["visibility"] for d in tab.evaluate("window.firstDraws")][-2:] == ["hidden", "hidden"]
    tab.evaluate("document.querySelectorAll('.js-plotly-plot').forEach((d) => { d.before = true; })")
    tab.wait_for_timeout(1500)  # the widths report comes and goes
    assert (
        tab.evaluate("[...document.querySelectorAll('.js-plotly-plot')].map((d) => d.before === true)")
        == [True, True]
    )
    tab.evaluate("window.firstDraws = []")
    tab.locator('[data-testid="stSidebar"] input[aria-label^="Attention temperature"]').press("ArrowRight")
    wait_rendered(tab)
    draws = tab.evaluate("window.firstDraws")
    assert len(draws) == 2
    assert all(d["visibility"] == "visible" and d["width"] == d["frame"] for d in draws), draws
    assert tab.errors == []


# The chart keys of the charts in the page now.
SHOWN_KEYS = f"""() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
  .map((div) => {CHART_KEY})"""


def test_on_a_phone_a_tab_opened_first_is_drawn_once(base_url, tab):
    """ui/widths.py: on a phone every chart fills the main column, whose width the browser reports; a tab opened for
    the first time (its charts not measured yet, or measured for another window) draws them at that width, shown
    at their first draw and not drawn again. (Before: each chart mounted twice, first hidden, then again after the
    report said it was narrow, a page rerun.)"""
    tab.add_init_script(FIRST_DRAWS)
    tab.set_viewport_size({"width": 390, "height": 844})
    tab.goto(page_url(base_url, ROOT / "pages" / "3_One_head.py"))
    wait_rendered(tab)
    tab.wait_for_timeout(1500)  # the first widths report, and the run it asks for (the first chart is narrow)
    wait_rendered(tab)
    for label in ("4 · Mask, then softmax", "3 · Scores and scaling"):
        tab.evaluate("window.firstDraws = []")
        open_tab(tab, label)
        tab.wait_for_timeout(1500)  # the widths report comes and goes
        wait_rendered(tab)
        shown = tab.evaluate(SHOWN_KEYS)
        draws = [d for d in tab.evaluate("window.firstDraws") if d["key"] in shown]  # the tab's charts
        assert len(shown) == 2 and len(draws) == 2, (label, draws)  # two charts, each mounted once
        assert all(d["visibility"] == "visible" and d["width"] == d["frame"] for d in draws), (label, draws)
    assert tab.errors == []


# The controls bar's left and right edges, where its shown controls start and end, and their keys.
BAR_ROW = f"""() => {{
  const box = (e) => e.getBoundingClientRect();
  const bar = document.querySelector('.st-key-{presenter.BAR_KEY}');
  const shown = [...bar.querySelectorAll('[data-testid="stElementContainer"]')].filter((e) => box(e).width > 0);
  return {{bar: [box(bar).left, box(bar).right], first: Math.min(...shown.map((e) => box(e).left)),
           last: Math.max(...shown.map((e) => box(e).right)),
           keys: shown.map((e) => [...e.classList].find((c) => c.startsWith('st-key-')))}};
}}"""


def test_on_a_tablet_the_bar_s_controls_fill_its_row(base_url, tab):
    """(At 768 px the bar kept the empty columns of its hidden presets and of presenter view's step buttons: its
    controls sat in the middle ~60 % of the row, "τ in every layer" on three lines.) On a screen narrow enough for the
    bar, its shown controls run from the row's left edge to its right edge, and moving one keeps the focus on it."""
    tab.set_viewport_size({"width": 768, "height": 1024})
    tab.goto(page_url(base_url, ROOT / "pages" / "5_Softmax_and_temperature.py"))
    wait_rendered(tab)
    row = tab.evaluate(BAR_ROW)
    keys = [k.removeprefix("st-key-") for k in row["keys"]]
    assert presenter.BAR_PREFIX + "sentence" in keys and presenter.BAR_PREFIX + "preset" not in keys
    assert abs(row["first"] - row["bar"][0]) <= 1 and abs(row["last"] - row["bar"][1]) <= 1, row
    tab.locator(f".st-key-{presenter.BAR_PREFIX}temperature input").press("ArrowLeft")
    wait_rendered(tab)
    assert tab.evaluate(f"document.activeElement.closest('.st-key-{presenter.BAR_PREFIX}temperature') !== null")
    assert tab.errors == []
