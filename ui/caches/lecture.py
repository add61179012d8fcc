"""Lecture example: the worked example's matrices and figures."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from figures.matrices import lecture_figures as lecture_matrices
from lessons.lecture import lecture_example

from ..models import shared


@shared(max_entries=32)
def lecture_figures(
    X: np.ndarray, words: tuple[str, ...], dims: tuple[str, ...], seed: int
) -> tuple[dict[str, np.ndarray], dict[str, go.Figure]]:
    """Every matrix of the worked example for these inputs (read-only), and its figure."""
    m = lecture_example(X, seed)
    for a in m.values():
        a.flags.writeable = False
    return m, lecture_matrices(m, words, dims)
