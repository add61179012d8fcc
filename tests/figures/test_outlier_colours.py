"""vectors_heatmap(cap_outliers=True): a few huge dimensions (SmolLM2's and MiniLM's residual streams) do not wash
out the others' colours; the title says where the colours stop and how large the largest value is."""

from __future__ import annotations

import numpy as np

from figures.attention import OUTLIER_RATIO, vectors_heatmap

LABELS = [f"t{i}" for i in range(8)]


def spec(z: np.ndarray):
    fig = vectors_heatmap(z, LABELS, "X", cap_outliers=True).to_dict()
    return fig["data"][0], fig["layout"]["title"]["text"]


def test_a_few_huge_dimensions_cap_the_colours_at_the_99th_percentile():
    rng = np.random.default_rng(0)
    z = rng.normal(0, 0.1, size=(8, 64)).astype(np.float32)
    z[3, 5], z[6, 5] = -55.0, 40.0  # two cells of 512 (under 1 %) hundreds of times the others' spread
    cap = float(np.percentile(np.abs(z), 99))  # the others' tail: ~0.26
    assert cap < 0.5
    trace, title = spec(z)
    assert trace["zmin"] == -cap and trace["zmax"] == cap and trace.get("zmid") is None
    assert title == f"X · colours capped at ±{cap:.2g} (max 55)"


def test_values_of_one_scale_keep_the_full_colour_range():
    z = np.linspace(-1, 1, 8 * 64, dtype=np.float32).reshape(8, 64)
    assert np.abs(z).max() < OUTLIER_RATIO * np.percentile(np.abs(z), 99)
    trace, title = spec(z)
    assert "zmin" not in trace and trace["zmid"] == 0 and title == "X"
