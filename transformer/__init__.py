"""Attention Atlas engine: an instrumented transformer (no streamlit, no plotly)."""

from .config import GPTConfig
from .model import GPT, Interventions, attention, sinusoidal_encoding
from .tokenizer import Encoding, Tokenizer
from .trace import Trace, TraceInputError, run_trace, run_traces, trace_names

__all__ = [
    "GPT",
    "Encoding",
    "GPTConfig",
    "Interventions",
    "Tokenizer",
    "Trace",
    "TraceInputError",
    "attention",
    "run_trace",
    "run_traces",
    "sinusoidal_encoding",
    "trace_names",
]
