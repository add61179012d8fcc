"""The figure side of the layout fixes (tests/browser/test_layout.py checks the drawn result in Chromium)."""

from __future__ import annotations

import numpy as np
import pytest

from figures import margins
from figures.attention import WRITTEN_MAX, padding_heatmap
from figures.common import LEGEND_BELOW, ROW_GAP_PX, grouped_bars, rows_fitted
from figures.context import cosine_lines
from figures.heads_forming import head_patterns
from figures.matrices import lecture_figures
from figures.multihead import weight_panels
from figures.positions import bits_heatmap
from figures.rope import head_panels
from figures.softmax import dk_lines, temperature_curves
from tests.apptest_utils import array


def layout(fig) -> dict:
    return fig.to_dict()["layout"]


def test_legends_sit_under_everything_in_the_figures_own_coordinates():
    """A legend placed against the plot overprints the chart title or the x-axis title once it wraps; in container
    coordinates plotly.js reserves its rows below the x-axis title."""
    d_ks = np.array([1, 2, 4, 8])
    figs = [
        temperature_curves(np.geomspace(0.05, 5, 8), np.ones(8), np.ones(8), 1.0, 1.0, 0.5, 1.58),
        dk_lines(d_ks, {"a": np.ones(4), "b": np.ones(4)}, title="t", y_title="y", chosen=1, log_y=True),
        grouped_bars({"a": np.ones(3), "b": np.ones(3)}, ["x", "y", "z"], title="t"),
        cosine_lines(
            np.ones((2, 3)), ["1 vs 2", "1 vs 3"], ["embedding W_E[id]", "after block 0", "after block 1"], "t"
        ),
    ]
    for fig in figs:
        assert layout(fig)["legend"] == LEGEND_BELOW


def test_log_axis_ticks_are_written_in_full():
    """plotly's own log ticks read "1, 2, 5, 10, 2, 5, 100" (minor ticks as bare digits)."""
    y = layout(
        dk_lines(
            np.array([1, 4, 16, 64, 256, 512]),
            {"q·k": np.sqrt([1, 4, 16, 64, 256, 512.0])},
            title="t",
            y_title="std",
            log_y=True,
        )
    )["yaxis"]
    assert y["type"] == "log" and y["tickmode"] == "array"
    assert y["ticktext"] == ["1", "2", "5", "10", "20"] and y["tickvals"] == [1, 2, 5, 10, 20]  # √512 ≈ 22.6


def test_softmax_table_numbers_stay_short():
    """At scale ×100 e^z reaches 1e+304 and a weight 1e-87: written in full they are cut off in the grid."""
    from lessons import softmax_lab as lab

    w = lab.worked_softmax(100 * np.array([2.0, 4.0, 7.0]))
    for v in [*w["z"], *w["exp"], *w["weights"], -np.finfo(np.float64).max]:
        assert len(lab.TABLE_FORMAT % v) <= lab.TABLE_CHARS


def test_bar_values_hide_rather_than_overlap():
    assert (
        layout(grouped_bars({"a": np.ones(8), "b": np.ones(8)}, list("abcdefgh")))["uniformtext"]
        == {"minsize": 9, "mode": "hide"}
    )


def test_context_cosine_ticks_are_short():
    labels = ["embedding W_E[id]", *(f"after block {i}" for i in range(30))]
    x = layout(cosine_lines(np.ones((1, 31)), ["1 vs 2"], labels, "t"))["xaxis"]
    assert x["ticktext"][0] == "emb" and all(len(t) <= 3 for t in x["ticktext"]) and len(x["ticktext"]) <= 16


def test_cell_valued_maps_have_no_colour_bar():
    """A colour bar takes ~110 px of a narrow column: the binary counter and the
    lecture's matrices write their values."""
    bits = bits_heatmap(np.array([[0, 1], [1, 0]]))
    assert bits.to_dict()["data"][0]["showscale"] is False and layout(bits)["xaxis"]["ticktext"] == ["0", "1"]
    m = {
        k: np.eye(4, 3) if k in ("X", "Q", "K", "V", "attention") else np.eye(3 if k.startswith("W") else 4)
        for k in ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "scaled", "weights", "attention")
    }
    figs = lecture_figures(m, ["a", "b", "c", "d"], ["d1", "d2", "d3"])
    assert all(f.to_dict()["data"][0]["showscale"] is False for f in figs.values())
    assert margins.colorbar_px(figs["weights"].to_dict()["data"], layout(figs["weights"])) == 0
    assert layout(figs["weights"])["height"] > max(layout(f)["height"] for k, f in figs.items() if k != "weights")


def map_rows(fig) -> list[list[int]]:
    """The maps of a panel figure by row (maps of a row share their y axis), each map by its index."""
    rows: dict[str, list[int]] = {}
    for k, trace in enumerate(fig.to_dict()["data"]):
        if trace.get("type") == "heatmap":
            rows.setdefault(trace.get("yaxis", "y"), []).append(k)
    return list(rows.values())


def test_panel_maps_wrap_into_rows_of_per_row():
    maps, labels = np.full((4, 3, 3), 1 / 3), ["a", "b", "c"]
    visible = np.ones((3, 3), dtype=bool)
    assert map_rows(weight_panels(maps, labels, visible, ["0", "1", "2", "3"], "t")) == [[0, 1, 2, 3]]
    assert map_rows(weight_panels(maps, labels, visible, ["0", "1", "2", "3"], "t", per_row=2)) == [[0, 1], [2, 3]]
    # rows of equal length
    assert map_rows(weight_panels(maps, labels, visible, ["0", "1", "2", "3"], "t", per_row=3)) == [[0, 1], [2, 3]]
    assert map_rows(weight_panels(maps, labels, visible, ["0", "1", "2", "3"], "t", per_row=1)) == [[0], [1], [2], [3]]


def test_a_layers_heads_never_share_a_row_with_the_next_layers():
    """Heads forming: 2 layers × 4 heads; three maps would fit in a row, but a row holds two, so that each layer's
    heads fill whole rows."""
    patterns = np.full((2, 4, 6, 6), 1 / 6)
    titles = [f"head {layer}.{h}" for layer in range(2) for h in range(4)]
    rows = map_rows(head_patterns(patterns, list("abcdef"), titles, "t", repeat_from=3, run=3, per_row=3))
    assert rows == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert (
        map_rows(head_patterns(patterns, list("abcdef"), titles, "t", repeat_from=3, run=3))
        == [[0, 1, 2, 3], [4, 5, 6, 7]]
    )


def test_key_and_value_panels_wrap_like_the_weight_maps():
    arrays = np.zeros((3, 5, 8))  # K of three key/value heads, 5 tokens × 8 dimensions
    fig = head_panels(
        arrays, list("abcde"), ["K/V head 0", "K/V head 1", "K/V head 2"], "t", value_name="K after RoPE", per_row=1
    )
    assert map_rows(fig) == [[0], [1], [2]]
    assert map_rows(head_panels(arrays, list("abcde"), ["0", "1", "2"], "t", value_name="V")) == [[0, 1, 2]]


def test_a_padded_batch_in_a_narrow_column_has_one_column_per_text():
    """(Masking · 4 on a phone: ten positions side by side left each cell ~30 px, and plotly shrank its token to
    5 px.) Narrow, up to WRITTEN_MAX positions: one column per text, one row per position, each cell its token or
    "[pad]", padding blank. Wide, or longer: one row per text (the tokens written up to WRITTEN_MAX positions)."""
    real = np.array([[1, 1, 1], [1, 0, 0]], dtype=bool)
    tokens, names = [["A0", "A1", "A2"], ["B0"]], ["A", "B"]
    trace = padding_heatmap(real, tokens, names, "t", by_column=True).to_dict()["data"][0]
    assert trace["text"] == [["A0", "B0"], ["A1", "[pad]"], ["A2", "[pad]"]] and trace["texttemplate"] == "%{text}"
    np.testing.assert_array_equal(~np.isnan(array(trace["z"])), real.T)
    wide = padding_heatmap(real, tokens, names, "t").to_dict()["data"][0]
    assert wide["text"] == [["A0", "A1", "A2"], ["B0", "[pad]", "[pad]"]] and wide["texttemplate"] == "%{text}"
    np.testing.assert_array_equal(~np.isnan(array(wide["z"])), real)
    T = WRITTEN_MAX + 1
    long = padding_heatmap(np.ones((2, T), dtype=bool), [list(map(str, range(T)))] * 2, names, "t", by_column=True)
    trace = long.to_dict()["data"][0]
    assert array(trace["z"]).shape == (2, T) and "texttemplate" not in trace


def test_rows_of_maps_stay_apart_at_any_height():
    """Nine maps in three rows: the tokens and "key j" are named under the bottom row only, "query i" once, and at the
    figure's own height or squeezed onto a projector's first screen the rows stay ROW_GAP_PX apart, each map's title
    on top of its own row (squeezed as fractions of the plot, the gaps shrank until each row's "key j" sat on the tick
    labels of the row below)."""
    maps, labels = np.full((9, 5, 5), 0.2), list("abcde")
    spec = weight_panels(maps, labels, np.ones((5, 5), dtype=bool), [f"h{k}" for k in range(9)], "t", per_row=3)
    layout = spec.to_dict()["layout"]
    named = [k for k in range(9) if layout["xaxis" + (str(k + 1) if k else "")].get("showticklabels", True)]
    assert named == [6, 7, 8]
    assert [bool(layout[y].get("title")) for y in ("yaxis", "yaxis2", "yaxis3")] == [False, True, False]
    for height in (layout["height"], 480, 420):
        fitted = {**layout, "height": height}
        fitted |= rows_fitted(fitted)
        plot = height - fitted["margin"]["t"] - fitted["margin"]["b"]
        rows = [fitted[y]["domain"] for y in ("yaxis", "yaxis2", "yaxis3")]
        gaps = [(upper[0] - lower[1]) * plot for upper, lower in zip(rows[:-1], rows[1:], strict=True)]
        assert gaps == pytest.approx([ROW_GAP_PX] * 2, abs=0.01)
        assert rows[0][1] == 1.0 and rows[2][0] == pytest.approx(0.0, abs=1e-6)
        tops = [a["y"] for a in fitted["annotations"]]
        assert tops == [rows[k // 3][1] for k in range(9)]


def test_a_column_of_maps_names_the_tokens_under_each():
    """A phone's column of maps (one a row): each map keeps its tokens and "key j" under it, and the rows stand apart by
    the room the bottom margin gives those labels."""
    maps, labels = np.full((3, 5, 5), 0.2), list("abcde")
    layout = weight_panels(maps, labels, np.ones((5, 5), dtype=bool), ["h0", "h1", "h2"], "t", per_row=1).to_dict()[
        "layout"
    ]
    assert all(layout[x].get("showticklabels", True) and layout[x]["title"] for x in ("xaxis", "xaxis2", "xaxis3"))
    plot = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    rows = [layout[y]["domain"] for y in ("yaxis", "yaxis2", "yaxis3")]
    gaps = [(upper[0] - lower[1]) * plot for upper, lower in zip(rows[:-1], rows[1:], strict=True)]
    assert layout["margin"]["b"] > ROW_GAP_PX
    assert gaps == pytest.approx([layout["margin"]["b"]] * 2, abs=0.01)
