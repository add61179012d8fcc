"""The chart toolbar (plotly's modebar) stands along the right edge: across the top, on a phone, it covers the title."""

from __future__ import annotations

import numpy as np
import plotly.io as pio

from figures.common import figure, heatmap, layout_dict
from tests.apptest_utils import checked_spec


def test_every_figure_has_its_toolbar_upright_unless_it_sets_its_own():
    fig = heatmap(np.eye(3), ["a", "b", "c"], ["a", "b", "c"], title="A long title on a phone")
    assert checked_spec(pio.to_json(fig))["layout"]["modebar"] == {"orientation": "v"}  # as plotly.js reads it
    own = figure([{"type": "bar", "x": [0], "y": [1]}], {**layout_dict("t"), "modebar": {"orientation": "h"}})
    assert own.to_dict()["layout"]["modebar"] == {"orientation": "h"}
