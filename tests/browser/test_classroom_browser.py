"""Classroom features in headless Chromium: the menu, presenter view and its keys, links, and the downloads."""

from __future__ import annotations

import csv
import io
import re
import struct
import urllib.parse

import numpy as np
import pytest

from scripts.browser import CUT, new_tab, serve_app, settled, wait_rendered

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

PROJECTOR = {"width": 1024, "height": 768}
SECTIONS = ["Start", "Inputs", "One head", "The whole model", "Beyond"]


@pytest.fixture
def tab(profile):
    page = new_tab(profile, viewport=PROJECTOR)
    yield page
    page.close()


def menu(page) -> str:
    return page.locator(".st-key-atlas_menu").inner_text()  # ui/navigation.draw_menu


def test_a_first_visit_to_a_page_address_gets_the_grouped_menu(profile):
    with serve_app() as base:  # a fresh server: nothing has opened the home page yet
        page = new_tab(profile, viewport=PROJECTOR)
        page.goto(base + "/One_head")
        wait_rendered(page)
        text = menu(page)
        assert all(s in text for s in SECTIONS) and "Guided tour" in text and "Heads forming" in text
        assert "View" not in text and "app" not in text.split()  # every page listed; the home page is "Home"
        assert text.index("Home") < text.index("Tokens and embeddings")
        page.close()


def shown(page) -> tuple:
    """The page's title, the sidebar's sentence, the menu's current page, and the mark the test left in the window."""
    return (
        page.locator("h1").first.inner_text(),
        page.locator('[data-testid="stSidebar"] textarea[aria-label="Sentence"]').input_value(),
        page.locator('nav.atlas-menu [aria-current="page"]').text_content(),
        page.evaluate("window.__mark"),
    )


def test_the_menu_opens_a_page_in_the_same_session(base_url, tab):
    """The menu (ui/menu.py) is a navigation landmark with a list per section. A click on a link, Enter on one, and
    the browser's Back each open their page without loading the app again (the window keeps a mark), with the
    student's sentence, the current page marked and the address holding the state; the link keeps the focus."""
    errors = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(base_url + "/One_head?sentence=The+cat+sat+on+the+mat")
    wait_rendered(tab)
    tab.evaluate("window.__mark = 'same page load'")
    nav = tab.get_by_role("navigation", name="Pages")
    assert nav.get_by_role("list").count() == len(SECTIONS) and nav.get_by_role("link").count() == 17
    sentence, mark = "The cat sat on the mat", "same page load"
    nav.get_by_role("link", name="Masking").click()
    wait_rendered(tab)
    assert shown(tab) == ("🎭 Masking", sentence, "🎭Masking", mark)
    assert "/Masking?" in tab.url and "sentence=The+cat+sat" in tab.url
    tab.go_back()
    wait_rendered(tab)
    assert shown(tab)[1:] == (sentence, "🔍One head", mark) and "/One_head?" in tab.url
    nav.get_by_role("link", name="Home").focus()
    tab.keyboard.press("Enter")
    wait_rendered(tab)
    assert shown(tab)[1:] == (sentence, "🧭Home", mark)
    assert tab.evaluate("document.activeElement.textContent") == "🧭Home"
    assert errors == []


def test_the_home_pages_pipeline_opens_a_page_in_the_same_session(base_url, tab):
    """The home page's pipeline (ui/navigation.draw_pipeline) is a navigation landmark: a heading and a list per
    section, each link with what its page shows. A click opens the page without loading the app again."""
    tab.goto(base_url + "/?sentence=The+cat+sat+on+the+mat")
    wait_rendered(tab)
    tab.evaluate("window.__mark = 'same page load'")
    nav = tab.get_by_role("navigation", name="The pipeline")
    assert nav.get_by_role("heading", level=4).all_inner_texts() == ["Inputs", "One head", "The whole model", "Beyond"]
    assert nav.get_by_role("list").count() == 4 and nav.get_by_role("link").count() == 15
    link = nav.get_by_role("link", name="Masking")
    assert link.text_content() == "🎭Masking · A decoder may not look at the future."
    link.click()
    wait_rendered(tab)
    assert shown(tab) == ("🎭 Masking", "The cat sat on the mat", "🎭Masking", "same page load")
    assert "/Masking?" in tab.url


# The font sizes of the charts' tick labels, and of their titles.
FONT_SIZES = """() => ['.js-plotly-plot .xtick text', '.js-plotly-plot .gtitle'].map((s) =>
  [...document.querySelectorAll(s)].map((t) => parseFloat(getComputedStyle(t).fontSize)))"""


def test_presenter_view_is_readable_on_a_projector(base_url, tab):
    tab.goto(base_url + "/One_head?present=true&onehead_step=4+%C2%B7+Mask%2C+then+softmax")
    wait_rendered(tab)
    assert tab.locator('[data-testid="stSidebar"]').evaluate("e => e.getBoundingClientRect().right") <= 1  # collapsed
    sentence = tab.locator('[data-testid="stMain"]').get_by_role("textbox", name="Sentence")
    assert sentence.is_visible() and sentence.bounding_box()["y"] < 300  # the controls sit above the page
    # read once the page has settled: under the whole suite's load a reading during a redraw gave every size as NaN
    ticks, titles = settled(tab, FONT_SIZES, tries=10, until=lambda r: all(np.isfinite(x) for xs in r for x in xs))
    assert ticks and min(ticks) >= 16 and titles and min(titles) >= 20
    assert tab.evaluate(CUT) == []  # the bar's preset box showed "(choose" in its narrow column


def test_arrow_keys_and_clicker_keys_step_through_tabs_then_pages(base_url, tab):
    tab.goto(base_url + "/Masking?present=true&masking_part=3+%C2%B7+Seeing+the+future")
    wait_rendered(tab)
    tab.keyboard.press("ArrowRight")
    # the key's run may start after wait_rendered's first pause on a busy machine: wait for the tab itself
    playwright_api.expect(tab.get_by_role("tab", name="4 · The padding mask")).to_have_attribute(
        "aria-selected", "true", timeout=60_000
    )
    wait_rendered(tab)
    assert "masking_part=4 · The padding mask" in urllib.parse.unquote_plus(tab.url)
    tab.keyboard.press("PageDown")  # past the last tab: the next page, still in presenter view
    playwright_api.expect(tab).to_have_url(re.compile(r"/Softmax_and_temperature\?.*present=true"), timeout=60_000)
    wait_rendered(tab)
    tab.keyboard.press("PageUp")
    playwright_api.expect(tab).to_have_url(re.compile(r"/Masking\?"), timeout=60_000)


def test_a_shared_link_opens_the_same_view(base_url, profile, tab):
    tab.goto(base_url + "/Softmax_and_temperature")
    wait_rendered(tab)
    box = tab.get_by_role("textbox", name="Scores s")
    box.fill("1, 3, 9")
    box.press("Enter")
    wait_rendered(tab)
    link = tab.url
    assert "softmax_scores=1%2C+3%2C+9" in link
    other = new_tab(profile, viewport=PROJECTOR)  # another student: a new tab is a new session
    other.goto(link)
    wait_rendered(other)
    assert other.get_by_role("textbox", name="Scores s").input_value() == "1, 3, 9"
    other.goto(base_url + "/One_head")
    wait_rendered(other)
    other.get_by_role("tab", name="3 · Scores and scaling").click()
    wait_rendered(other)
    assert "onehead_step=3 · Scores and scaling" in urllib.parse.unquote_plus(other.url)
    third = new_tab(profile, viewport=PROJECTOR)
    third.goto(other.url)
    wait_rendered(third)
    assert third.get_by_role("tab", name="3 · Scores and scaling").get_attribute("aria-selected") == "true"
    other.close()
    third.close()


def test_a_link_brings_back_a_control_moved_to_its_first_value(base_url, profile, tab):
    """Masking's position starts at 3: moved to 0, the link must say so (the browser leaves a control out of the
    address only while it shows its start value)."""
    tab.goto(base_url + "/Masking")
    wait_rendered(tab)
    position = tab.locator('[data-testid="stMain"] input[aria-label="Position i"]')
    assert position.input_value() == "3"
    position.focus()
    position.press("Home")
    wait_rendered(tab)
    assert "masking_pos=0" in tab.url
    other = new_tab(profile, viewport=PROJECTOR)
    other.goto(tab.url)
    wait_rendered(other)
    assert other.locator('[data-testid="stMain"] input[aria-label="Position i"]').input_value() == "0"
    other.close()


# Where a token's dot sits on the page: x = 0 (query side) or 1 (key side), y = its position, through the chart's axes.
DOT = """(gd, [x, t]) => { const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
  return [r.left + xa._offset + xa.l2p(x), r.top + ya._offset + ya.l2p(t)]; }"""
# The pairs with that token as query (or key), counted in the hover texts of the line middles of the heads shown.
PAIRS = """(gd, [role, t]) => gd._fullData.filter((d) => d.mode === 'markers' && d.visible === true && d.x[0] === 0.5)
  .flatMap((d) => [...d.text]).filter((s) => s.includes(`${role} ${t}:`)).length"""
HIGHLIGHTED = "gd => gd.querySelectorAll('.atlas-hover-lines line').length"
LINE_OPACITIES = "gd => [...gd.querySelectorAll('.scatterlayer .trace')].map((e) => e.style.opacity)"


def test_hovering_a_token_in_the_line_view_highlights_its_lines(base_url, tab):
    tab.set_viewport_size({"width": 1300, "height": 1000})
    tab.goto(base_url + "/Multi_head?model=shakespeare-gpt&multihead_part=3+%C2%B7+Every+head+of+the+model")
    wait_rendered(tab)
    chart = tab.locator(".st-key-multihead_layer_lines .js-plotly-plot")
    chart.scroll_into_view_if_needed()
    wait_rendered(tab)
    drawn = chart.evaluate(LINE_OPACITIES)
    for x, role, t in ((0, "query", 3), (1, "key", 0)):
        tab.mouse.move(*chart.evaluate(DOT, [x, t]))
        tab.wait_for_timeout(300)
        expected = chart.evaluate(PAIRS, [role, t])
        assert expected > 0 and chart.evaluate(HIGHLIGHTED) == expected, (role, t)
        assert chart.evaluate(LINE_OPACITIES) != drawn  # the other lines fade
        tab.mouse.move(5, 5)
        tab.wait_for_timeout(300)
        assert chart.evaluate(HIGHLIGHTED) == 0 and chart.evaluate(LINE_OPACITIES) == drawn  # and come back as drawn


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_charts_save_as_large_png_or_svg_and_pages_save_numbers_and_trace(base_url, tab):
    tab.goto(base_url + "/")
    wait_rendered(tab)
    chart = tab.locator(".stPlotlyChart").first
    width = chart.bounding_box()["width"]
    chart.hover()
    with tab.expect_download() as got:
        chart.locator('.modebar-btn[data-title^="Download plot"]').click()
    w, _ = png_size(open(got.value.path(), "rb").read())
    assert w >= 2 * width - 2  # slide resolution: at least twice the size on screen
    with tab.expect_download() as got:
        tab.get_by_role("button", name="Numbers on this page (CSV)").click()
    rows = list(csv.DictReader(io.StringIO(open(got.value.path(), encoding="utf-8").read())))
    weights = [float(r["z"]) for r in rows if r["chart"] == "home_pattern" and r["z"]]
    assert weights and max(weights) <= 1.0 and min(weights) >= 0.0
    with tab.expect_download() as got:
        tab.get_by_role("button", name="The model's trace (NPZ)").click()
    saved = np.load(got.value.path())
    assert (
        "blocks.0.attn.hook_pattern" in saved.files
        and saved["blocks.0.attn.hook_pattern"].shape[-1] == len(saved["tokens"])
    )
    tab.goto(base_url + "/?chart_format=SVG")
    wait_rendered(tab)
    chart = tab.locator(".stPlotlyChart").first
    chart.hover()
    with tab.expect_download() as got:
        chart.locator(".modebar-btn[data-title^='Download plot']").click()
    assert open(got.value.path(), "rb").read(200).lstrip().startswith(b"<svg")


@pytest.mark.parametrize("width,height", [(390, 844), (768, 1024)])
def test_on_a_phone_or_tablet_the_sentence_box_is_on_the_page(base_url, profile, width, height):
    page = new_tab(profile, viewport={"width": width, "height": height})
    page.goto(base_url + "/One_head")
    wait_rendered(page)
    box = page.locator('[data-testid="stMain"]').get_by_role("textbox", name="Sentence")
    assert box.is_visible() and box.bounding_box()["y"] + box.bounding_box()["height"] < height  # on the first screen
    box.fill("I love bears.")
    box.press("Control+Enter")
    wait_rendered(page)
    assert "sentence=I+love+bears." in page.url
    page.close()


def test_on_a_desktop_the_controls_stay_in_the_sidebar(base_url, tab):
    tab.set_viewport_size({"width": 1440, "height": 900})
    tab.goto(base_url + "/One_head")
    wait_rendered(tab)
    assert not tab.locator('[data-testid="stMain"]').get_by_role("textbox", name="Sentence").is_visible()
    assert tab.locator('[data-testid="stSidebar"]').get_by_role("textbox", name="Sentence").is_visible()


def test_clicking_a_token_in_the_line_view_keeps_only_its_lines(base_url, tab):
    tab.goto(base_url + "/Multi_head?multihead_part=3+%C2%B7+Every+head+of+the+model")
    wait_rendered(tab)
    chart = tab.locator(".st-key-multihead_layer_lines")
    chart.scroll_into_view_if_needed()
    queries = chart.locator(".scatterlayer .trace").nth(-2).locator(".points path")  # the query tokens' dots, left
    box = queries.nth(3).bounding_box()
    tab.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    wait_rendered(tab)
    assert tab.locator(".st-key-multihead_line_token input").input_value().startswith("3: ")
    assert "multihead_line_token=3" in tab.url  # the link keeps it
