"""The query–key map: one head's queries and keys as points in one 2-D picture, lines to the strongest keys."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .colours import DARK, KEY, KEY_TEXT, QUERY, WHITE, rgba
from .common import LEGEND_BELOW, esc, figure, layout_dict, title_dict
from .multihead import pair_markers
from .reuse import reused

TEXT_MAX = 40  # write the token next to each point only for sentences this short


def segments(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Line segments start[n] → end[n] as one trace's x and y, separated by NaN. start, end (n, 2)."""
    gap = np.full((len(start), 1), np.nan)
    xy = np.hstack([start[:, :1], end[:, :1], gap, start[:, 1:], end[:, 1:], gap])  # (n, 6)
    return xy[:, :3].reshape(-1).astype(np.float32), xy[:, 3:].reshape(-1).astype(np.float32)


@reused
def qk_scatter(
    q2: np.ndarray,
    k2: np.ndarray,
    labels: Sequence[str],
    i: np.ndarray,
    j: np.ndarray,
    w: np.ndarray,
    explained: np.ndarray,
    title: str,
) -> go.Figure:
    """Queries (circles) and keys (diamonds) in the map; a grey line from query i to key j for each
    pair, with a hover dot in its middle."""
    names = [esc(s) for s in labels]
    mode = "markers+text" if len(labels) <= TEXT_MAX else "markers"
    lx, ly = segments(q2[i], k2[j])
    grey = rgba(DARK, 0.5)  # the lines and the dots at their middles
    lines = {
        "type": "scatter",
        "x": lx,
        "y": ly,
        "mode": "lines",
        "line": {"color": grey, "width": 1.5},
        "hoverinfo": "skip",
        "name": "query → its strongest key",
    }
    mid = (q2[i] + k2[j]) / 2  # (n, 2)
    weights = pair_markers(mid[:, 0], mid[:, 1], i, j, w, labels, "line middles", size=4, color=grey)
    points = [
        {
            "type": "scatter",
            "x": p[:, 0].astype(np.float32),
            "y": p[:, 1].astype(np.float32),
            "mode": mode,
            "name": name,
            "marker": {"symbol": symbol, "size": 10, "color": color, "line": {"width": 1, "color": WHITE}},
            "text": names,
            "textposition": "top center",
            "textfont": {"color": text},
            "customdata": np.arange(len(names)),
            "hovertemplate": f"{role} %{{customdata}}: %{{text}}<extra></extra>",
        }
        for p, name, role, symbol, color, text in (
            (q2, "queries", "query", "circle", QUERY, QUERY),
            (k2, "keys", "key", "diamond", KEY, KEY_TEXT),
        )
    ]
    lay = {
        "xaxis": {"title": title_dict(f"axis 1 ({explained[0]:.0%} of the spread)"), "zeroline": False},
        "yaxis": {
            "title": title_dict(f"axis 2 ({explained[1]:.0%} of the spread)"),
            "zeroline": False,
            "scaleanchor": "x",
            "scaleratio": 1,
        },
        "legend": LEGEND_BELOW,
    }
    return figure([lines, weights, *points], layout_dict(title, 560, **lay))
