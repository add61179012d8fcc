"""Softmax & temperature: the √d_k experiment, and one head of the model with its own τ."""

from __future__ import annotations

import numpy as np
import streamlit as st

from lessons import softmax_lab as lab
from transformer import shortcuts

from ..models import TraceKey, get_trace, shared


@shared(max_entries=32)
def tempered_pattern(key: TraceKey, layer: int, head: int, tau: float) -> np.ndarray:
    """One head's weights with attention temperature τ on that head only, the rest of the model as trained (τ = 1;
    pass the key at τ = 1, as the page does, and no second trace is made)."""
    return shortcuts.tempered_pattern(get_trace(key.but(temperature=1.0)), layer, head, tau)


sqrt_dk_experiment = st.cache_data(max_entries=16, show_spinner=False)(lab.sqrt_dk_experiment)
