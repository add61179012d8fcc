"""Training with and without the causal mask: each model's training loss (as it was trained) and its loss on the real
task (the future hidden) over the training steps, and the loss of guessing."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .colours import BLUE, GREY, TEXT_MUTED, VERMILLION
from .common import LEGEND_BELOW, esc, figure, layout_dict, title_dict
from .reuse import reused

RUN_COLORS = (BLUE, VERMILLION)  # a colour per model (blue: with the mask); the real task's line is dotted


@reused
def mask_curves(
    steps: np.ndarray,
    train: dict[str, np.ndarray],
    real_steps: np.ndarray,
    real: dict[str, np.ndarray],
    guess: float,
    height: int = 380,
) -> go.Figure:
    """For each model, named by the keys of train and real (the same, in the same order): train[name] (S,) at steps,
    the mean batch loss as that model was trained; real[name] (R,) at real_steps, its loss with the mask on (the real
    task), dotted; and a grey line at y = guess (log of the symbols: guessing uniformly)."""
    data = []
    for k, (model, y_train) in enumerate(train.items()):
        color, y_real = RUN_COLORS[k % len(RUN_COLORS)], real[model]
        for kind, x, y, dash in (
            ("training loss (as trained)", steps, y_train, "solid"),
            ("real task (future hidden)", real_steps, y_real, "dot"),
        ):
            name = esc(model if dash == "solid" else f"{model}: {kind}")  # the legend's entry: the model's name
            data.append(
                {
                    "type": "scatter",
                    "x": np.asarray(x, dtype=np.float32),
                    "y": np.asarray(y, dtype=np.float32),
                    "mode": "lines",
                    "name": name,
                    # one legend entry per model (its solid line; the page says what the dotted one is): four entries
                    # wrapped into rows that left a blank band under the plot
                    "legendgroup": esc(model),
                    "showlegend": dash == "solid",
                    "line": {"color": color, "dash": dash, "width": 2},
                    "hovertemplate": f"{esc(f'{model}: {kind}')}<br>step %{{x}}: %{{y:.3f}} nats<extra></extra>",
                }
            )
    guess_line = {
        "type": "line",
        "xref": "paper",
        "yref": "y",
        "x0": 0,
        "x1": 1,
        "y0": guess,
        "y1": guess,
        "line": {"color": GREY, "dash": "dash", "width": 1},
    }
    note = {
        "text": f"guessing: {guess:.2f}",
        "xref": "paper",
        "yref": "y",
        "x": 1,
        "y": guess,
        "xanchor": "right",
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 11, "color": TEXT_MUTED},
    }
    axes = {
        "xaxis": {"title": title_dict("training step")},
        "yaxis": {"title": title_dict("loss (nats per symbol)"), "rangemode": "tozero"},
    }
    lay = layout_dict(
        "Loss with and without the causal mask",
        height,
        **axes,
        shapes=[guess_line],
        annotations=[note],
        legend=LEGEND_BELOW,
    )
    lay["margin"]["r"] = 28  # the last step's tick label ("1500") is centred on the plot's right edge
    return figure(data, lay)
