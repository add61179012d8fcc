"""Charts are drawn at the width the browser last measured for them (ui/widths.py); a bad report is ignored."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest_utils import TIMEOUT, assert_ok, charts_by_key, page_path
from ui import widths

PAGE = page_path("4_Masking")  # first part: two charts, masking_mask and masking_row


def run_with(report) -> AppTest:
    """Run the page with `report` as the measuring component's state, as if the browser had sent it."""
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.session_state[widths.KEY] = report
    return at.run()


def drawn_widths(at: AppTest) -> dict:
    return {key: spec["layout"].get("width") for key, spec in charts_by_key(at).items()}


def test_a_measured_chart_is_drawn_at_its_width_and_the_others_as_before():
    at = run_with({"widths": {"masking_mask": 412.5, "some_other_page_chart": 300}})
    assert_ok(at)
    assert drawn_widths(at) == {"masking_mask": 412.5, "masking_row": None}
    at.run()  # and again on the next run (the report is kept)
    assert drawn_widths(at)["masking_mask"] == 412.5


def test_without_a_report_no_chart_gets_a_width():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    assert_ok(at)
    assert set(drawn_widths(at).values()) == {None}


BAD_REPORTS = {
    "not_a_number": {"widths": {"masking_mask": "wide"}},
    "nan": {"widths": {"masking_mask": float("nan")}},
    "infinite": {"widths": {"masking_mask": float("inf")}},
    "bool": {"widths": {"masking_mask": True}},
    "too_narrow": {"widths": {"masking_mask": widths.MIN_W - 1}},
    "too_wide": {"widths": {"masking_mask": widths.MAX_W + 1}},
    "widths_not_a_dict": {"widths": [412]},
    "too_many_charts": {"widths": {f"chart{i}": 400 for i in range(widths.MAX_CHARTS)} | {"masking_mask": 412}},
    "no_widths": {"other": 1},
}


@pytest.mark.parametrize("report", BAD_REPORTS.values(), ids=BAD_REPORTS.keys())
def test_a_bad_report_is_ignored(report):
    at = run_with(report)
    assert_ok(at)
    assert drawn_widths(at)["masking_mask"] is None
