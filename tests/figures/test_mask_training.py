"""figures/mask_training.py: each model's training curve solid and its real-task curve dotted, in one colour per model,
at their own steps; the loss of guessing as a line; model names escaped; the spec is plotly's validated form."""

from __future__ import annotations

import math

import numpy as np
import plotly.io as pio

from figures.mask_training import mask_curves
from tests.apptest_utils import array, checked_spec


def test_mask_curves():
    steps, real_steps = np.array([0, 5, 10]), np.array([0, 10])
    train = {"with <b>": np.array([4.2, 3.0, 2.0]), "without": np.array([4.2, 1.0, 0.1])}
    real = {"with <b>": np.array([4.2, 2.1]), "without": np.array([4.2, 6.0])}
    spec = checked_spec(pio.to_json(mask_curves(steps, train, real_steps, real, math.log(64))))
    lines = {t["name"]: t for t in spec["data"]}
    assert list(lines) == [
        "with &lt;b&gt;",  # the solid line: the legend's entry
        "with &lt;b&gt;: real task (future hidden)",
        "without",
        "without: real task (future hidden)",
    ]
    for name, x, y, dash in (
        ("with &lt;b&gt;", steps, train["with <b>"], "solid"),
        ("without: real task (future hidden)", real_steps, real["without"], "dot"),
    ):
        np.testing.assert_array_equal(array(lines[name]["x"]), x)
        np.testing.assert_allclose(array(lines[name]["y"]), y, rtol=1e-6)
        assert lines[name]["line"]["dash"] == dash
    assert [t["showlegend"] for t in spec["data"]] == [True, False, True, False]  # the solid lines name the models
    assert spec["data"][0]["legendgroup"] == spec["data"][1]["legendgroup"] != spec["data"][2]["legendgroup"]
    colors = [t["line"]["color"] for t in spec["data"]]
    assert colors[0] == colors[1] != colors[2] == colors[3]  # one colour per model
    (guess,) = spec["layout"]["shapes"]
    assert guess["y0"] == guess["y1"] == math.log(64)
    assert spec["layout"]["annotations"][0]["text"] == "guessing: 4.16"
