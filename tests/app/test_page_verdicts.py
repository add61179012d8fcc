"""The sentences that state a result, through AppTest on the bundled model: each follows the numbers the page shows,
and says so when the effect is absent or reversed (Masking · 3, Multi-head's switch-off, Context, Tokens' analogy).
The real models' cases are in tests/app/test_models_verdicts.py."""

from __future__ import annotations

import re

import numpy as np
from streamlit.runtime.state.query_params import QueryParams

from tests import apptest_utils as u
from ui.context import OWN, SETS

REPEATED = "the cat and the dog and the bird"  # 9 tokens on the bundled model: the whole text fits the table


def printed(text: str) -> float:
    """A probability as printed: "12.3%" → 0.123, "2.7e-7" → 2.7e-7."""
    return float(text.removesuffix("%")) / (100 if text.endswith("%") else 1)


def test_masking_counts_are_those_of_the_printed_table():
    at = u.open_tab(u.run_page(u.page_path("4_Masking"), sentence=REPEATED), "masking_part", "3 ·")
    at.slider(key="masking_rows").set_value(32).run()  # every position in the table
    u.assert_ok(at)
    df = at.dataframe[0].value
    rows = df[df["actual next token"] != "(end)"]
    assert len(rows) == len(df) - 1 > 4
    with_mask, without = rows["p(actual) with mask"], rows["p(actual) without mask"]
    pairs = [(printed(a), printed(b)) for a, b in zip(with_mask, without, strict=True)]
    ups, downs = sum(b > a for a, b in pairs), sum(b < a for a, b in pairs)
    assert list(rows["as printed"]).count("higher") == ups and list(rows["as printed"]).count("lower") == downs
    said = re.search(r"more likely at \*\*(\d+) of (\d+)\*\* positions, less likely at \*\*(\d+)\*\*", u.texts(at))
    assert said and tuple(map(int, said.groups())) == (ups, len(rows), downs)
    assert ("did **not** help" in u.texts(at)) == (ups <= downs)


def test_context_preset_box_names_the_loaded_set_and_the_note_follows_the_cosines():
    bank = "\n".join(SETS["River bank vs money bank"][0])
    at = u.run_page(u.page_path("10_Context"), context_sentences=bank, context_word="bank")  # a link without the set
    u.assert_ok(at)
    assert at.selectbox(key="context_set").value == "River bank vs money bank"
    cos = u.array(u.chart(at, "context_cosine")["data"][0]["y"])  # one pair: its cosine at every layer
    start, end = round(float(cos[0]), 3), round(float(cos[-1]), 3)
    said = f"cos = {start:.3f} at the embedding, {end:.3f} after the last block"
    assert said in u.texts(at)
    verdict = "**moved apart**" if end - start <= -0.05 else "**reversed**" if end - start >= 0.05 else "**no clear"
    assert verdict in u.texts(at)
    at.text_area(key="context_sentences").input("The bank was closed.\nThe bank of the river.").run()
    assert at.selectbox(key="context_set").value == OWN  # typed sentences: no preset named
    at.selectbox(key="context_set").set_value("Time flies vs fruit flies").run()
    assert at.text_area(key="context_sentences").value == "\n".join(SETS["Time flies vs fruit flies"][0])
    assert at.selectbox(key="context_set").value == "Time flies vs fruit flies"


def test_context_says_when_the_vectors_did_not_move_apart():
    # the same sentence twice: the word's vectors are equal at every layer (cos 1.000 → 1.000), no effect
    at = u.run_page(u.page_path("10_Context"), context_sentences="I love bears.\nI love bears.", context_word="bear")
    u.assert_ok(at)
    np.testing.assert_allclose(u.array(u.chart(at, "context_cosine")["data"][0]["y"]), 1.0, atol=1e-5)
    assert "cos = 1.000 at the embedding, 1.000 after the last block: **no clear change**" in u.texts(at)
    assert "moved apart" not in u.texts(at) and at.selectbox(key="context_set").value == OWN


def test_the_address_is_written_only_when_the_shared_state_changes(monkeypatch):
    """Each write sends the whole address as the server knows it, whose copy of the pages' own controls can be older
    than the browser's: a run that changed none of the sidebar's values writes nothing."""
    sent = []
    send = QueryParams._send_query_param_msg
    monkeypatch.setattr(QueryParams, "_send_query_param_msg", lambda self: sent.append(1) or send(self))
    at = u.open_tab(u.run_page(u.page_path("7_Multi_head"), sentence=REPEATED), "multihead_part", "5 ·")
    sent.clear()
    at.slider(key="multihead_topk").set_value(5).run()  # a page control: the sidebar's values stay
    u.assert_ok(at)
    assert sent == []
    at.slider(key="w_head").set_value(1).run()  # one shared value: one message, with the new head
    assert len(sent) == 1 and at.query_params["head"] == "1" and at.query_params["sentence"] == REPEATED
