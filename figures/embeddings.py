"""Token and embedding figures: token chips, embedding rows, a PCA map, cosine similarities, neighbour bars."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer.tokenizer import Encoding, visible

from .colours import CHIPS, DIVERGING, FAINT, GREY, HIGHLIGHT, INK, TEXT_MUTED, WHITE
from .common import bars, esc, figure, heatmap, layout_dict, tick_labels, title_dict
from .reuse import reused

ROW_UNITS = 90  # width of one row of chips, in characters
# in a column narrower than narrow.NARROW_PX: a phone's ~330 px of plot give a character ~8 px, room for the 13 px
# monospace label (at ROW_UNITS ~3.6 px: the labels ran into the next chips)
NARROW_ROW_UNITS = 40


def shown_chars(piece: str) -> str:
    """Characters made visible: whitespace as ␣ ↵ ⇥, invisible format characters (e.g. U+202E) as their code."""
    return "".join(
        f"⟨U+{ord(ch):04X}⟩" if unicodedata.category(ch) in ("Cf", "Co", "Cn", "Zl", "Zp") else ch
        for ch in visible(piece)
    )


def chip_rows(
    labels: Sequence[str], ids: Sequence[int], row_units: int = ROW_UNITS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lay chips out left to right, wrapping into rows. Returns (x start, width, row) per token, in characters."""
    x0, width, row = [], [], []
    x, r = 0, 0
    for label, i in zip(labels, ids, strict=True):
        w = max(len(label), len(str(i))) + 2
        if x > 0 and x + w > row_units:
            x, r = 0, r + 1
        x0.append(x)
        width.append(w)
        row.append(r)
        x += w + 1
    return np.array(x0), np.array(width), np.array(row)


@reused
def chip_figure(
    labels: Sequence[str],
    numbers: Sequence[int],
    colors: Sequence[str],
    hover: Sequence[str],
    title: str,
    row_units: int = ROW_UNITS,
) -> go.Figure:
    """One chip per token, left to right in rows of row_units characters: its label over a number (its id or its
    position), in its colour; `hover` per chip (already escaped)."""
    x0, width, row = chip_rows(labels, numbers, row_units)
    chips = {
        "type": "bar",
        "orientation": "h",
        "base": x0,
        "x": width,
        "y": row,
        "width": 0.8,
        "marker": {"color": list(colors), "line": {"color": GREY, "width": 1}},
        "text": [
            f"{esc(label)}<br><span style='font-size:10px;color:{TEXT_MUTED}'>{i}</span>"
            for label, i in zip(labels, numbers, strict=True)
        ],
        "textposition": "inside",
        "insidetextanchor": "middle",
        "textangle": 0,
        "textfont": {"family": "monospace", "size": 13, "color": INK},
        "hovertext": list(hover),
        "hovertemplate": "%{hovertext}<extra></extra>",
    }
    n_rows = int(row.max()) + 1 if len(row) else 1
    axes = {
        "xaxis": {"visible": False, "range": [-0.5, row_units + 0.5]},
        "yaxis": {"visible": False, "autorange": "reversed"},
    }
    return figure(
        [chips],
        layout_dict(
            title,
            60 + 46 * n_rows,
            bargap=0,
            showlegend=False,
            plot_bgcolor=WHITE,
            uniformtext={"minsize": 8, "mode": "show"},
            **axes,
        ),
    )


def token_chips(enc: Encoding, narrow: bool = False) -> go.Figure:
    """One chip per token: its readable label over its id; hover names the characters of the text it covers. narrow:
    for a column narrower than narrow.NARROW_PX (shorter rows)."""
    hover = []
    for pos, (label, i, (s, e)) in enumerate(zip(enc.labels, enc.ids, enc.offsets, strict=True)):
        piece = enc.text[s:e]
        codes = " ".join(f"U+{ord(c):04X}" for c in piece) if any(ord(c) > 126 or ord(c) < 32 for c in piece) else ""
        hover.append(
            f"position {pos} · id {i} · token {esc(label)}<br>characters {s}–{e}: «{esc(shown_chars(piece))}»"
            + (f"<br>{codes}" if codes else "")
        )
    colors = [CHIPS[p % len(CHIPS)] for p in range(len(enc))]
    title = "Your text, token by token (hover a chip)"
    return chip_figure(enc.labels, enc.ids, colors, hover, title, NARROW_ROW_UNITS if narrow else ROW_UNITS)


@reused
def sentence_rows_heatmap(z: np.ndarray, labels: Sequence[str], title: str, value_name: str) -> go.Figure:
    """Rows of a (T, d) array, one per token (a repeated token keeps its own row), dimensions across."""
    return heatmap(
        z, None, labels, title=title, x_title="dimension", y_title="token", colorscale=DIVERGING, zmid=0,
        value_name=value_name, height=rows_height(len(labels)),
    )


def rows_height(n_rows: int) -> int:
    """A figure height that gives each of n rows a readable band, within limits."""
    return int(min(max(140 + 16 * n_rows, 300), 760))


@reused
def cosine_heatmap(sim: np.ndarray, labels: Sequence[str]) -> go.Figure:
    """cos(token i, token j) among the sentence's tokens, on a fixed −1…1 scale."""
    title = "Cosine similarity of the tokens' embeddings"
    return heatmap(
        sim,
        labels,
        labels,
        title=title,
        colorscale=DIVERGING,
        zmin=-1,
        zmax=1,
        zmid=0,
        value_name="cosine",
        show_values=len(labels) <= 12,
        height=rows_height(len(labels)),
    )


@reused
def pca_map(
    bg: np.ndarray, bg_labels: Sequence[str], pts: np.ndarray, pt_labels: Sequence[str], explained: np.ndarray
) -> go.Figure:
    """Vocabulary tokens (grey) and the sentence's tokens (red, labelled) along 2 or 3 principal components."""
    dims = bg.shape[1]
    axes = [f"PC{k + 1} ({100 * explained[k]:.1f}% of variance)" for k in range(dims)]
    vocab = {
        "mode": "markers",
        "hovertext": [esc(s) for s in bg_labels],
        "name": "vocabulary",
        "hovertemplate": "%{hovertext}<extra></extra>",
    }
    sentence = {
        "mode": "markers+text",
        "text": tick_labels(pt_labels),
        "name": "your sentence",
        "hovertemplate": "%{hovertext}<extra></extra>",
    }
    sentence["hovertext"] = [f"position {p}: {esc(s)}" for p, s in enumerate(pt_labels)]
    if dims == 3:
        traces = [
            {
                "type": "scatter3d",
                "x": bg[:, 0],
                "y": bg[:, 1],
                "z": bg[:, 2],
                "marker": {"size": 2, "color": FAINT},
                **vocab,
            },
            {
                "type": "scatter3d",
                "x": pts[:, 0],
                "y": pts[:, 1],
                "z": pts[:, 2],
                "marker": {"size": 5, "color": HIGHLIGHT},
                **sentence,
            },
        ]
        frame = {"scene": {f"{a}axis": {"title": title_dict(axes[k])} for k, a in enumerate("xyz")}}
    else:
        traces = [
            {"type": "scatter", "x": bg[:, 0], "y": bg[:, 1], "marker": {"size": 4, "color": FAINT}, **vocab},
            {
                "type": "scatter",
                "x": pts[:, 0],
                "y": pts[:, 1],
                "marker": {"size": 9, "color": HIGHLIGHT},
                "textposition": "top center",
                **sentence,
            },
        ]
        frame = {"xaxis": {"title": title_dict(axes[0])}, "yaxis": {"title": title_dict(axes[1])}}
    return figure(traces, layout_dict("", 560, legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"}, **frame))


@reused
def neighbour_bars(cosines: np.ndarray, labels: Sequence[str], title: str) -> go.Figure:
    """The nearest tokens, best first, as bars of their cosine similarity."""
    return bars(cosines, labels, title=title, y_title="cosine similarity", height=340)
