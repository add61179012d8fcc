"""The sentences that state a result, through AppTest on the bundled model: each follows the numbers the page shows,
and says so when the effect is absent or reversed (Masking · 3, Multi-head's switch-off, Context, Tokens' analogy).
The real models' cases are in tests/app/test_models_verdicts.py."""

from __future__ import annotations

import re

from tests import apptest_utils as u

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
