"""Attention Atlas engine: instrumented transformers of several families (no streamlit, no plotly)."""

from .attention import NO_INTERVENTIONS, Interventions, attention, visible_mask
from .config import ModelConfig
from .errors import ModelLoadError, TraceInputError
from .families.gpt import GPT
from .layers import sinusoidal_encoding
from .protocol import Decoder, Model
from .tokenizer import END_OF_TEXT, Encoding, Tokenizer
from .trace import Trace, encode_for_model, forward_padded, pad_right, run_trace, run_traces, trace_names

__all__ = [
    "END_OF_TEXT",
    "GPT",
    "Decoder",
    "NO_INTERVENTIONS",
    "Encoding",
    "Interventions",
    "Model",
    "ModelConfig",
    "ModelLoadError",
    "Tokenizer",
    "Trace",
    "TraceInputError",
    "attention",
    "encode_for_model",
    "forward_padded",
    "pad_right",
    "run_trace",
    "run_traces",
    "sinusoidal_encoding",
    "trace_names",
    "visible_mask",
]
