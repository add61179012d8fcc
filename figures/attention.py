"""Attention figures: vectors, scores, weights and masks, drawn from a trace's arrays."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer import Trace

from .colours import BLACK, BLANK, DIVERGING, HIGHLIGHT
from .common import Spec, bars, esc, figure, hatch, heatmap, layout_dict, title_dict, token_axis, with_note
from .reuse import reused

SHOW_VALUES_MAX = 16  # write numbers into T×T cells only for sentences this short (16 × 16 cells hold 14 px text)
HIDDEN_NOTE = f"numbers hidden above {SHOW_VALUES_MAX} tokens: hover a cell"


def pattern_weights(tr: Trace, layer: int, head: int) -> np.ndarray:
    """The attention weights of one head, (T, T): rows are queries, columns keys."""
    return tr[f"blocks.{layer}.attn.hook_pattern"][head]


def pattern_heatmap(tr: Trace, layer: int, head: int, title: str = "") -> go.Figure:
    """One head's weights; masked (future) cells are drawn blank and say −∞ in their score."""
    masked = np.isneginf(tr[f"blocks.{layer}.attn.hook_scores_masked"][head])
    return weights_heatmap(
        pattern_weights(tr, layer, head),
        tr.encoding.labels,
        masked,
        title or f"Attention weights, layer {layer}, head {head}",
    )


OUTLIER_RATIO = 3.0  # cap_outliers: cap the colours when the largest |value| is this many times the 99th percentile


@reused
def vectors_heatmap(
    z: np.ndarray,
    labels: Sequence[str],
    title: str,
    *,
    dim_title: str = "dimension",
    value_name: str = "value",
    blank: np.ndarray | None = None,
    shapes: Sequence[dict] = (),
    cap_outliers: bool = False,
) -> go.Figure:
    """One vector per row, (T, n): rows are tokens, columns dimensions; blue < 0 < red; `blank` rows left empty.

    The hover names the row's position (the axis names its token): per-cell hover text for T×n cells
    would cost more bytes and time than the whole figure. cap_outliers: when a few dimensions are far larger than the
    rest (SmolLM2's and MiniLM's residual streams), the colours stop at the 99th percentile of |value|
    (said in the title, with the largest |value|) so that the other dimensions do not all look white; the hover still
    gives every value.
    """
    z = np.asarray(z, dtype=np.float32)
    shown = z if blank is None else np.where(np.asarray(blank, dtype=bool)[:, None], np.nan, z).astype(np.float32)
    rows, cols = z.shape
    hover = f"row %{{y}}, dimension %{{x}}<br>{esc(value_name)} = %{{z:.4g}}<extra></extra>"
    hm = {
        "type": "heatmap", "z": shown, "x": np.arange(cols), "y": np.arange(rows), "colorscale": DIVERGING, "zmid": 0,
        "hoverongaps": False, "hovertemplate": hover, "colorbar": {"thickness": 12},
    }
    if cap_outliers and z.size:
        top, cap = float(np.abs(z).max()), float(np.percentile(np.abs(z), 99))
        if cap > 0 and top > OUTLIER_RATIO * cap:
            hm.update(zmid=None, zmin=-cap, zmax=cap)
            title = f"{title} · colours capped at ±{cap:.2g} (max {top:.2g})"  # short: it fits a phone's chart
    axes = {
        "xaxis": {"title": title_dict(dim_title)},
        "yaxis": {**token_axis(labels, "token"), "autorange": "reversed"},
        "shapes": list(shapes) or None,
        "images": [hatch()] if blank is not None and np.any(blank) else None,
    }
    return figure([hm], layout_dict(title, plot_bgcolor=BLANK, **axes))


@reused
def scores_heatmap(
    scores: np.ndarray, labels: Sequence[str], title: str, *, value_name: str = "score", values: bool = True
) -> go.Figure:
    """Query × key scores, (T, T); −∞ (masked) cells are blank and say −∞ on hover. values:
    numbers in the cells of a short sentence."""
    short = values and len(labels) <= SHOW_VALUES_MAX
    fig = heatmap(
        scores, labels, labels, title=title, x_title="key j", y_title="query i", colorscale=DIVERGING, zmid=0,
        value_name=value_name, show_values=short,
    )
    return _hidden_note(fig, values and not short)


@reused
def weights_heatmap(
    weights: np.ndarray, labels: Sequence[str], masked: np.ndarray | None, title: str, *, values: bool = True
) -> go.Figure:
    """Softmax weights α_ij in [0, 1], (T, T); masked cells (weight exactly 0) blank."""
    short = values and len(labels) <= SHOW_VALUES_MAX
    fig = heatmap(
        weights, labels, labels, title=title, x_title="key j (looked at)", y_title="query i (looking)", zmin=0, zmax=1,
        value_name="weight", show_values=short, masked=masked,
    )
    return _hidden_note(fig, values and not short)


def _hidden_note(fig: go.Figure, hidden: bool) -> go.Figure:
    """The map, with HIDDEN_NOTE under its title when its cells would have numbers but the sentence is too long."""
    if not hidden:
        return fig
    spec = fig.to_dict()
    return Spec({**spec, "layout": with_note(spec["layout"], HIDDEN_NOTE)})


@reused
def weight_bars(row: np.ndarray, labels: Sequence[str], title: str) -> go.Figure:
    """One query's weights over the keys, as bars."""
    return bars(row, labels, title=title, x_title="key j", y_title="weight α_ij")


@reused
def weighted_sum_heatmap(
    terms: np.ndarray, total: np.ndarray, labels: Sequence[str], visible: np.ndarray, title: str
) -> go.Figure:
    """The rows α_ij·v_j (one per key j; hidden keys blank), then a last row with their sum z_i."""
    z = np.vstack([terms, total[None, :]]).astype(np.float32)  # (T+1, hs)
    blank = np.append(~np.asarray(visible, dtype=bool), False)  # (T+1,) hidden keys; the sum row is always shown
    line = {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": len(labels) - 0.5,
        "y1": len(labels) - 0.5,
        "line": {"color": BLACK, "width": 2},
    }
    return vectors_heatmap(
        z,
        [*labels, "Σ = z_i"],
        title,
        dim_title="dimension of the head",
        value_name="α_ij·v_j (last row: z_i)",
        blank=blank,
        shapes=[line],
    )


@reused
def mask_heatmap(visible: np.ndarray, labels: Sequence[str], title: str, *, row: int | None = None) -> go.Figure:
    """A mask, (T, T): filled cells may be looked at, blank cells are −∞. `row` is outlined."""
    visible = np.asarray(visible, dtype=bool)
    n = visible.shape[1]
    outline = (
        None
        if row is None
        else [
            {
                "type": "rect",
                "x0": -0.5,
                "x1": n - 0.5,
                "y0": row - 0.5,
                "y1": row + 0.5,
                "line": {"color": HIGHLIGHT, "width": 3},
            }
        ]
    )
    return heatmap(
        visible.astype(np.float32), labels, labels, title=title, x_title="key j", y_title="query i", zmin=0, zmax=1,
        value_name="may look (1 = yes)", masked=~visible, shapes=outline, extra={"showscale": False},
    )


WRITTEN_MAX = 24  # a padded batch of up to this many positions writes each cell's token
WRITTEN_ROW_PX = 24  # … one row per position in a narrow column, this tall


@reused
def padding_heatmap(
    real: np.ndarray, token_labels: Sequence[Sequence[str]], names: Sequence[str], title: str, by_column: bool = False
) -> go.Figure:
    """A padded batch, real (B, T): one row per text, real tokens filled, padding blank; each cell names its token
    ("[pad]" for padding), written in it up to WRITTEN_MAX positions. by_column (where one row per text would write
    its tokens too small to read: a phone's column, or many positions): one column per text and one row per position
    instead, so that a cell is as wide as a text's column (~150 px on a phone, against ~30 px for one of ten positions
    side by side, where plotly shrinks a token to 5 px) and its token readable."""
    real = np.asarray(real, dtype=bool)
    B, T = real.shape
    cells = [[esc(token_labels[b][j]) if real[b, j] else "[pad]" for j in range(T)] for b in range(B)]
    positions = [str(j) for j in range(T)]
    shown = {"texttemplate": "%{text}" if T <= WRITTEN_MAX else None, "showscale": False}
    if by_column and T <= WRITTEN_MAX:
        by_column = {
            "text": [list(row) for row in zip(*cells, strict=True)],  # (T, B)
            "customdata": [[esc(name) for name in names]] * T,
            "hovertemplate": "%{customdata}, position %{y}: %{text}<extra></extra>",
        }
        return heatmap(
            real.T.astype(np.float32), names, positions, title=title, x_title="sentence", y_title="position",
            zmin=0, zmax=1, masked=~real.T, height=130 + WRITTEN_ROW_PX * T, extra={**shown, **by_column},
        )
    by_row = {"text": cells, "hovertemplate": "row %{y}, position %{x}: %{text}<extra></extra>"}
    return heatmap(
        real.astype(np.float32), positions, names, title=title, x_title="position", zmin=0, zmax=1, masked=~real,
        height=120 + 60 * B, extra={**shown, **by_row},
    )
