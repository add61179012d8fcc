"""The CSV of a page's charts: every drawn value, with the labels the axes show."""

from __future__ import annotations

import base64
import csv
import io

import numpy as np
import pytest

from figures.common import bars, heatmap
from figures.export import length, to_csv, values
from figures.prediction import lens_heatmap


def read(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_a_heatmap_gives_a_row_per_cell_with_its_token_labels():
    z = np.array([[1.0, -np.inf], [0.25, 0.75]])  # a causal row 0: its future cell is masked
    fig = heatmap(z, ["The", "<b>cat"], ["The", "<b>cat"], title="weights")
    rows = read(to_csv({"weights": fig.to_dict()}))
    assert rows[0] == ["chart", "trace", "x", "y", "z", "text"]
    assert rows[1:] == [
        ["weights", "heatmap 0", "The", "The", "1.0", ""],
        ["weights", "heatmap 0", "<b>cat", "The", "", ""],  # the masked cell is drawn blank: no number; label unescaped
        ["weights", "heatmap 0", "The", "<b>cat", "0.25", ""],
        ["weights", "heatmap 0", "<b>cat", "<b>cat", "0.75", ""],
    ]


def test_the_logit_lens_gives_each_cells_top_token():
    # 2 stages × 2 positions; each cell names its stage's most probable next token (texttemplate %{text})
    fig = lens_heatmap(
        np.array([[0.5, 0.25], [0.75, 0.125]]), [["␣the", "<b>"], ["␣cat", "=1"]], ["embedding", "block 0"], [3, 4],
        ["␣a", "␣b"],
    )
    rows = read(to_csv({"next_lens": fig.to_dict()}))
    assert [(r[4], r[5]) for r in rows[1:]] == [("0.5", "␣the"), ("0.25", "<b>"), ("0.75", "␣cat"), ("0.125", "'=1")]


def test_bars_and_a_formula_looking_label():
    fig = bars(np.array([0.5, 0.125]), ["=cmd()", "+1"], title="p")
    rows = read(
        to_csv(
            {
                "a": fig.to_dict(),
                "b": {"data": [{"type": "scatter", "x": [1, 2], "y": [3, 4], "name": "line"}], "layout": {}},
            }
        )
    )
    body = [r[2:] for r in rows[1:]]
    assert body[:2] == [["'=cmd()", "0.5", "", ""], ["'+1", "0.125", "", ""]]  # a spreadsheet would run "=cmd()"
    assert rows[3:] == [["b", "line", "1", "3", "", ""], ["b", "line", "2", "4", "", ""]]


def test_plotly_typed_arrays_are_decoded():
    z = np.arange(6, dtype=np.float32).reshape(2, 3)
    spec = {
        "data": [
            {"type": "heatmap", "z": {"dtype": "f4", "bdata": base64.b64encode(z.tobytes()).decode(), "shape": "2, 3"}}
        ],
        "layout": {},
    }
    rows = read(to_csv({"m": spec}))
    assert (
        [float(r[4]) for r in rows[1:]] == list(range(6))
        and [r[2:4] for r in rows[1:4]] == [["0", "0"], ["1", "0"], ["2", "0"]]
    )


@pytest.mark.parametrize("dtype", ["f8", "f4", "i1", "i2"])
@pytest.mark.parametrize("shape", [(256, 256), (13, 7), (5, 3), (1, 1)])
def test_the_first_rows_of_a_typed_array_are_decoded_alone(monkeypatch, dtype, shape):
    """A description reads a heatmap's first rows only: each row count gives the same rows as the whole array sliced,
    and the base64 text decoded is only as long as they need."""
    z = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    typed = {"dtype": dtype, "bdata": base64.b64encode(z.tobytes()).decode(), "shape": ", ".join(map(str, shape))}
    decoded = []  # the length of each base64 text decoded
    monkeypatch.setattr(base64, "b64decode", lambda b, f=base64.b64decode: decoded.append(len(b)) or f(b))
    for rows in (None, 0, 1, 2, 12, shape[0], shape[0] + 5):
        got = values(typed, rows)
        assert got.dtype == z.dtype and np.array_equal(got, z[:rows]), rows
        need = z[:rows].nbytes if rows is not None else z.nbytes
        assert need <= decoded[-1] * 3 / 4 < need + 3, (rows, decoded[-1])  # whole 4-character groups
    assert length(typed) == shape[0]
    assert length({"dtype": "f8", "bdata": base64.b64encode(np.zeros(4).tobytes()).decode()}) == 4  # no shape
    assert list(values([1, 2, 3], 2)) == [1, 2] and length([1, 2, 3]) == 3 and length(None) == 0
