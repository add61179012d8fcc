"""Words meant for developers never reach students: every page and every tab, on a sentence with a repeated token
(so the count sentences show), scanned for engine names and "(s)" plurals in its text, labels and charts."""

from __future__ import annotations

import re

import pytest

from tests.apptest_utils import PAGES, assert_ok, each_tab, run_page, texts

SENTENCE = "The cat sat on the mat because the cat was tired."
# softmax(s) is maths
DEVELOPER_WORDS = re.compile(r"hook_|\b(?!softmax)[a-z]+\(s\)|task's|intervention", re.IGNORECASE)


def shown_words(at) -> str:
    """Everything a student reads: texts, widget labels and help, chart titles, axis titles, legend names and hovers."""
    widgets = [
        w
        for kind in (
            "slider", "select_slider", "selectbox", "toggle", "checkbox", "radio", "text_area", "text_input", "button",
        )
        for w in at.get(kind)
    ]
    labels = [f"{getattr(w, 'label', '')} {getattr(w, 'help', '') or ''}" for w in widgets]
    charts = [c.proto.spec for c in at.get("plotly_chart")]  # the figures' JSON
    return "\n".join([texts(at), *labels, *charts])


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_no_developer_words_on_any_page_or_tab(page):
    at = run_page(str(page), sentence=SENTENCE)
    assert_ok(at)
    found = set(DEVELOPER_WORDS.findall(shown_words(at)))
    tabs = []
    for label in each_tab(at):
        found |= {f"{w} (tab {label})" for w in DEVELOPER_WORDS.findall(shown_words(at))}
        tabs.append(label)
    assert not found
    assert bool(tabs) == ("lazy_tabs(" in page.read_text(encoding="utf-8"))  # a page with tabs had every tab read
