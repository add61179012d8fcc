"""Model configuration: one frozen dataclass, saved as config.json beside the weights."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 1024  # tokens in the BPE vocabulary
    n_ctx: int = 256  # longest sequence the model reads (context length)
    d_model: int = 128  # width of the residual stream
    n_layer: int = 4  # transformer blocks
    n_head: int = 4  # attention heads per block; d_head = d_model / n_head
    d_mlp: int = 512  # hidden width of the feed-forward network
    pos_encoding: str = "sinusoidal"  # "sinusoidal" (fixed) or "learned" (GPT-2)
    activation: str = "gelu_new"  # "gelu_new" (tanh approximation, GPT-2) or "gelu"
    ln_eps: float = 1e-5  # LayerNorm epsilon
    dropout: float = 0.0  # used only while training
    tie_embeddings: bool = True  # unembedding W_U = W_Eᵀ (GPT-2); False gives W_U its own weights

    def __post_init__(self):
        if self.d_model % self.n_head:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_head={self.n_head}")
        if self.pos_encoding not in ("sinusoidal", "learned"):
            raise ValueError(f"pos_encoding must be 'sinusoidal' or 'learned', not {self.pos_encoding!r}")
        if self.activation not in ("gelu_new", "gelu"):
            raise ValueError(f"activation must be 'gelu_new' or 'gelu', not {self.activation!r}")
        if self.pos_encoding == "sinusoidal" and self.d_model % 2:
            raise ValueError("sinusoidal positions need an even d_model")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head

    def to_json(self, path: Path) -> None:
        data = {"model_type": "atlas-gpt", **dataclasses.asdict(self)}
        Path(path).write_text(json.dumps(data, indent=2) + "\n")

    @classmethod
    def from_dict(cls, data: dict) -> GPTConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
