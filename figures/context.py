"""Context figures: one word's vectors in several sentences, compared layer by layer."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .colours import PALETTE
from .common import LEGEND_BELOW, esc, figure, layout_dict, title_dict
from .reuse import reused

MAX_STAGE_TICKS = 16  # tick labels on the cosine chart's x axis: every stage up to this many, then every few


@reused
def cosine_lines(cos: np.ndarray, pair_names: Sequence[str], stage_labels: Sequence[str], title: str) -> go.Figure:
    """One line per sentence pair: cosine similarity of the word's vectors
    (rows of cos, (n_pairs, stages)) at every stage.

    stage_labels: the stages' full names, for the hover (the first is the embedding, stage k + 1 the output of block k);
    the axis writes them short ("emb", "L0", …) so that they stay horizontal.
    """
    x = np.arange(len(stage_labels))
    lines = [
        {
            "type": "scatter",
            "x": x,
            "y": np.asarray(c, dtype=np.float32),
            "mode": "lines+markers",
            "name": esc(name),
            "line": {"color": PALETTE[k % len(PALETTE)]},
            "text": [esc(s) for s in stage_labels],
            "hovertemplate": f"{esc(name)}<br>%{{text}}: cos = %{{y:.4f}}<extra></extra>",
        }
        for k, (name, c) in enumerate(zip(pair_names, cos, strict=True))
    ]
    # long names ("after block 12") turn vertical and take more height than the plot
    short = ["emb", *(f"L{k}" for k in range(len(stage_labels) - 1))]
    step = max(1, -(-len(short) // MAX_STAGE_TICKS))
    axis = {
        "tickmode": "array",
        "tickvals": x[::step].tolist(),
        "ticktext": short[::step],
        "title": title_dict("vector: emb = the embedding W_E[id], Lk = after block k"),
    }
    y_axis = {"title": title_dict("cosine similarity"), "range": [min(-0.05, float(np.min(cos)) - 0.05), 1.05]}
    # a legend on the right leaves a phone ~70 px of plot
    return figure(lines, layout_dict(title, 380, xaxis=axis, yaxis=y_axis, legend=LEGEND_BELOW))


# more stages than this: only every few points carries its label on the map (every one in its hover)
LABELLED_POINTS = 13


@reused
def trajectories_figure(
    coords: np.ndarray, sentence_names: Sequence[str], point_labels: Sequence[str], explained: np.ndarray, title: str
) -> go.Figure:
    """One line per sentence through its vectors (coords (n_sentences, stages, 2)), each point labelled by its stage
    (for many stages: the first, the last and every few between)."""
    step = max(1, -(-len(point_labels) // LABELLED_POINTS))
    names = [esc(s) for s in point_labels]
    text = [s if k % step == 0 or k == len(names) - 1 else "" for k, s in enumerate(names)]
    paths = [
        {
            "type": "scatter",
            "x": xy[:, 0],
            "y": xy[:, 1],
            "mode": "lines+markers+text",
            "name": esc(name),
            "text": text,
            "textposition": "top center",
            "marker": {"size": 9, "color": PALETTE[k % len(PALETTE)]},
            "line": {"color": PALETTE[k % len(PALETTE)]},
            "hovertext": names,
            "hovertemplate": f"{esc(name)}<br>%{{hovertext}}: (%{{x:.3g}}, %{{y:.3g}})<extra></extra>",
        }
        for k, (name, xy) in enumerate(zip(sentence_names, np.asarray(coords, dtype=np.float32), strict=True))
    ]
    axes = {
        f"{a}axis": {"title": title_dict(f"PC{k + 1} ({100 * explained[k]:.1f}% of variance)")}
        for k, a in enumerate("xy")
    }
    return figure(paths, layout_dict(title, 480, legend=LEGEND_BELOW, **axes))
