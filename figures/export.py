"""The numbers behind a page's charts, as one CSV table: a row per drawn value (chart, trace, x, y, z, text).

Heatmaps give a row per cell (x = column label, y = row label, z = the value); bars, lines and points a row per
point (z only in 3-D). A chart that writes a text in each cell (the logit lens's top tokens: texttemplate "%{text}")
gives it in the column "text". Token positions are written as the axis shows them (their tick labels), unescaped. A text
cell that a spreadsheet would read as a formula (starting with = + - @) gets a leading apostrophe.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import math
from collections.abc import Mapping

import numpy as np

COLUMNS = ["chart", "trace", "x", "y", "z", "text"]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def values(v, rows: int | None = None) -> np.ndarray | None:
    """A trace's data array: a list, a numpy array, or plotly's typed array ({"dtype", "bdata", "shape"}). rows: only
    the first `rows` rows (of a typed array, only their bytes are decoded)."""
    if v is None:
        return None
    if isinstance(v, Mapping) and "bdata" in v:
        shape = [int(n) for n in str(v.get("shape") or "").split(",") if n.strip()]
        data = v["bdata"]
        if rows is not None and shape and rows < shape[0]:
            shape[0] = rows
            data = data[: -(-np.dtype(v["dtype"]).itemsize * math.prod(shape) // 3) * 4]  # base64: 4 chars per 3 bytes
        flat = np.frombuffer(base64.b64decode(data), dtype=v["dtype"], count=math.prod(shape) if shape else -1)
        return flat.reshape(shape) if shape else flat[:rows]
    return np.asarray(v[:rows], dtype=object)


def length(v) -> int:
    """A trace's data array's number of rows, read from a typed array's shape without decoding it."""
    if isinstance(v, Mapping) and v.get("shape"):
        return int(str(v["shape"]).split(",")[0])
    a = values(v)
    return 0 if a is None else len(a)


def axis_labels(layout: dict, ref: str) -> dict:
    """Tick value → tick label of the axis a trace draws on ("x", "x2", "y" …), where the axis names its ticks."""
    axis = layout.get(f"{ref[0]}axis{ref[1:]}") or {}
    return {
        v: html.unescape(str(t)) for v, t in zip(axis.get("tickvals") or (), axis.get("ticktext") or (), strict=False)
    }


def cell(v):
    """One CSV value: numbers as numbers (NaN, a masked cell, left empty), text unescaped and never a formula."""
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return "" if np.isnan(v) else v.item() if isinstance(v, np.generic) else v
    text = html.unescape(str(v))
    return "'" + text if text.startswith(FORMULA_START) else text


def rows(name: str, spec: dict):
    """(chart, trace, x, y, z, text) for every value one figure draws."""
    layout = spec.get("layout", {})
    for i, trace in enumerate(spec.get("data", [])):
        label = trace.get("name") or f"{trace.get('type', 'scatter')} {i}"
        xs, ys, zs = (values(trace.get(k)) for k in "xyz")
        texts = values(trace.get("text")) if "%{text}" in str(trace.get("texttemplate", "")) else None  # drawn texts
        xl, yl = axis_labels(layout, trace.get("xaxis", "x")), axis_labels(layout, trace.get("yaxis", "y"))
        if trace.get("type") == "heatmap" and zs is not None:
            for r, row in enumerate(zs):
                for c, z in enumerate(row):
                    x = xs[c] if xs is not None else c
                    y = ys[r] if ys is not None else r
                    yield name, label, xl.get(x, x), yl.get(y, y), z, "" if texts is None else texts[r][c]
        elif xs is not None or ys is not None:
            n = len(xs if xs is not None else ys)
            for k in range(n):
                x = xs[k] if xs is not None else k
                y = ys[k] if ys is not None else k
                z = zs[k] if zs is not None and zs.ndim == 1 else ""
                yield name, label, xl.get(x, x), yl.get(y, y), z, "" if texts is None else texts[k]


def to_csv(figures: Mapping[str, dict]) -> str:
    """The CSV of every chart (chart key → figure dict), in the order they were drawn."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(COLUMNS)
    for name, spec in figures.items():
        for row in rows(name, spec):
            w.writerow([cell(v) for v in row])
    return out.getvalue()
