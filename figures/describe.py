"""A chart's text alternative: a few sentences computed from the numbers it draws, for a screen reader and for anyone
who would rather read than look ("Attention weights α. Heatmap, query i (looking) × key j (looked at). '␣it' looks
most at '␣animal' (0.75), then 'The' (0.10). …").

It reads the figure as plotly JSON (the dicts the app draws, or any go.Figure), with its own title, axis titles, tick
labels and trace names: heatmaps give each row's two largest cells, bars the largest bars, lines where they start,
end and peak, points their count and extent. Text comes out unescaped (plain text, not HTML or markdown).
"""

from __future__ import annotations

import html
from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from .export import axis_labels, length, values

MAX_ROWS = 12  # heatmap rows described one by one; the data table has the rest
TOP_BARS = 3


def describe(fig: go.Figure | Mapping) -> str:
    """The figure's text alternative: its title, then a sentence or two per trace."""
    spec = fig if isinstance(fig, Mapping) else fig.to_dict()
    layout = spec.get("layout") or {}
    parts = [text_of(layout.get("title")) or "Chart"]
    parts += [describe_trace(trace, layout) for trace in spec.get("data") or ()]
    return " ".join(p if p.endswith(".") else p + "." for p in parts if p)


def describe_trace(trace: Mapping, layout: Mapping) -> str:
    kind = trace.get("type", "scatter")
    name = text_of(trace.get("name"))
    head = f"{name}: " if name else ""
    xref, yref = trace.get("xaxis", "x"), trace.get("yaxis", "y")
    x_title, y_title = axis_title(layout, xref), axis_title(layout, yref)
    if kind == "heatmap":
        return head + heatmap_text(trace, layout, x_title, y_title)
    if kind == "bar":
        return head + bars_text(trace, layout)
    if kind == "scatter" and "lines" in (trace.get("mode") or "lines"):
        return head + line_text(trace, layout, x_title, y_title)
    if kind == "scatter":
        return head + points_text(trace, x_title, y_title)
    return head + f"a {kind} chart (its numbers are in the data table)"


def heatmap_text(trace: Mapping, layout: Mapping, x_title: str, y_title: str) -> str:
    """Each row's largest and second-largest cells (blank cells, NaN, left out), for the first MAX_ROWS rows (the
    only rows read)."""
    z = numbers(trace.get("z"), rows=MAX_ROWS)
    if z is None or z.ndim != 2 or z.size == 0:
        return "an empty heatmap"
    xs, ys = positions(trace.get("x"), z.shape[1]), positions(trace.get("y"), length(trace.get("z")))
    x_name = namer(layout, trace.get("xaxis", "x"), x_title or "column")
    y_name = namer(layout, trace.get("yaxis", "y"), y_title or "row")
    looks = x_title.lower().startswith("key")  # an attention map: rows look at columns
    out = [f"Heatmap, {len(ys)} rows ({y_title or 'rows'}) × {len(xs)} columns ({x_title or 'columns'})"]
    for r in range(min(len(ys), MAX_ROWS)):
        row = z[r]
        order = top(row, 2)
        if not len(order):
            continue
        first = f"{x_name(xs[order[0]])} ({num(row[order[0]])})"
        then = f", then {x_name(xs[order[1]])} ({num(row[order[1]])})" if len(order) > 1 else ""
        verb = "looks most at" if looks else "is largest at"
        out.append(f"{y_name(ys[r])} {verb} {first}{then}")
    if len(ys) > MAX_ROWS:
        out.append(f"{len(ys) - MAX_ROWS} more rows in the data table")
    return ". ".join(out)


def bars_text(trace: Mapping, layout: Mapping) -> str:
    """The TOP_BARS largest bars, with their labels."""
    horizontal = trace.get("orientation") == "h"
    cats_key, vals_key = ("y", "x") if horizontal else ("x", "y")
    v = numbers(trace.get(vals_key))
    if v is None or v.size == 0:
        return "no bars"
    cats = positions(trace.get(cats_key), len(v))
    text = trace.get("text")
    if isinstance(text, list | tuple) and len(text) == len(v) and all(isinstance(t, str) for t in text):
        labels = [f"'{html.unescape(t)}'" for t in text]  # the bar's own label (bars at token positions carry it)
    else:
        labels = names(layout, trace.get(f"{cats_key}axis", cats_key), cats)
    listed = ", ".join(f"{labels[i]} {num(v[i])}" for i in top(v, TOP_BARS))
    return f"{len(v)} bars; the largest: {listed}"


def line_text(trace: Mapping, layout: Mapping, x_title: str, y_title: str) -> str:
    """Where the line starts and ends, and its highest and lowest points."""
    y = numbers(trace.get("y"))
    if y is None or y.size == 0 or np.isnan(y).all():
        return "an empty line"
    xs = positions(trace.get("x"), len(y))
    x_name = names(layout, trace.get("xaxis", "x"), xs, x_title)
    ok = np.flatnonzero(~np.isnan(y))
    first, last = ok[0], ok[-1]
    hi, lo = ok[np.argmax(y[ok])], ok[np.argmin(y[ok])]
    return (
        f"{y_title or 'value'} from {num(y[first])} at {x_name[first]} to {num(y[last])} at {x_name[last]}; "
        f"highest {num(y[hi])} at {x_name[hi]}, lowest {num(y[lo])} at {x_name[lo]}"
    )


def points_text(trace: Mapping, x_title: str, y_title: str) -> str:
    x, y = numbers(trace.get("x")), numbers(trace.get("y"))
    if x is None or y is None or x.size == 0:
        return "no points"
    return (
        f"{len(x)} points; {x_title or 'x'} from {num(np.nanmin(x))} to {num(np.nanmax(x))}, "
        f"{y_title or 'y'} from {num(np.nanmin(y))} to {num(np.nanmax(y))}"
    )


def top(values: np.ndarray, k: int) -> np.ndarray:
    """The positions of the k largest values, largest first (the first of equal values first); NaN left out."""
    ok = np.flatnonzero(~np.isnan(values))
    return ok[np.argsort(-values[ok], kind="stable")[:k]]


def numbers(v, rows: int | None = None) -> np.ndarray | None:
    """A data array (its first `rows` rows) as numbers (None where the trace has none, or it is not numeric)."""
    a = values(v, rows)
    if a is None or a.dtype.kind == "f":
        return a
    try:
        return np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def grids(fig: go.Figure | Mapping):
    """(trace name, row names, column names, values) of each heatmap the figure draws: its grid as a table."""
    spec = fig if isinstance(fig, Mapping) else fig.to_dict()
    layout = spec.get("layout") or {}
    for trace in spec.get("data") or ():
        z = numbers(trace.get("z")) if trace.get("type") == "heatmap" else None
        if z is not None and z.ndim == 2:
            ys, xs = positions(trace.get("y"), z.shape[0]), positions(trace.get("x"), z.shape[1])
            yield (
                text_of(trace.get("name")),
                shown(layout, trace.get("yaxis", "y"), ys),
                shown(layout, trace.get("xaxis", "x"), xs),
                z,
            )


def positions(v, n: int) -> list:
    """A trace's x or y values (plotly's default 0…n−1 when it has none)."""
    a = values(v)
    return list(range(n)) if a is None else a.tolist()


def names(layout: Mapping, ref: str, at: list, unnamed: str = "") -> list[str]:
    """What the axis shows at each value (namer)."""
    name = namer(layout, ref, unnamed)
    return [name(v) for v in at]


def namer(layout: Mapping, ref: str, unnamed: str = ""):
    """A function: what the axis shows at a value, its tick label in quotes where it names one ("'␣cat'"), else the
    value after `unnamed` (the axis title: "dimension 21")."""
    ticks = axis_labels(layout, ref)
    return lambda v: f"'{plain(ticks[v])}'" if v in ticks else f"{unnamed} {plain(v)}".strip()


def shown(layout: Mapping, ref: str, at: list) -> list[str]:
    """What the axis shows at each value: its tick label, else the value."""
    ticks = axis_labels(layout, ref)
    return [plain(ticks.get(v, v)) for v in at]


def plain(label) -> str:
    """A label as the reader sees it: the figures escape user text for plotly (figures.common.esc), undone here (the
    description is escaped again for where it goes)."""
    return html.unescape(str(label))


def axis_title(layout: Mapping, ref: str) -> str:
    return text_of((layout.get(f"{ref[0]}axis{ref[1:]}") or {}).get("title"))


def text_of(title) -> str:
    """A title (a dict with "text", or a bare string) as plain text: plotly's <br> as a space, escapes undone."""
    text = title.get("text") if isinstance(title, Mapping) else title
    return html.unescape(str(text).replace("<br>", " ")).strip() if text else ""


def num(v: float) -> str:
    """A value as the description prints it: two decimals, or three significant digits when very large or small."""
    v = float(v)
    return f"{v:.2f}" if v == 0 or 0.01 <= abs(v) < 1000 else f"{v:.3g}"
