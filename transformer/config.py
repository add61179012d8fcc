"""Model configuration: one frozen dataclass for every family, saved as config.json beside the weights.

The defaults describe the bundled GPT. A family is a choice of parts:

    family  norm       where  positions              MLP            attention
    gpt     LayerNorm  pre    sinusoidal or learned  GELU           n_head heads, biases
    bert    LayerNorm  post   learned + token types  GELU           n_head heads, biases, no causal mask
    llama   RMSNorm    pre    rotary (RoPE)          SwiGLU (gated) n_head query heads share n_kv_head key/value heads

attn_only=True drops every block's MLP (and the norm before it): the attention-only models in which induction
heads were first studied (transformer/train_induction.py trains one).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

FAMILIES = ("gpt", "bert", "llama")
POSITIONS = ("sinusoidal", "learned", "rotary")
ACTIVATIONS = ("gelu_new", "gelu", "silu")
# ModelConfig field → the key Hugging Face's BERT and Llama configs give it
HF_SIZES = {
    "vocab_size": "vocab_size",
    "n_ctx": "max_position_embeddings",
    "d_model": "hidden_size",
    "n_layer": "num_hidden_layers",
    "n_head": "num_attention_heads",
    "d_mlp": "intermediate_size",
}


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 1024  # tokens in the vocabulary
    n_ctx: int = 256  # longest sequence the model reads (context length)
    d_model: int = 128  # width of the residual stream
    n_layer: int = 4  # transformer blocks
    n_head: int = 4  # (query) attention heads per block
    d_mlp: int = 512  # hidden width of the feed-forward network
    pos_encoding: str = "sinusoidal"  # "sinusoidal" (fixed), "learned" (GPT-2, BERT) or "rotary" (RoPE, Llama)
    activation: str = "gelu_new"  # "gelu_new" (tanh approximation, GPT-2), "gelu" (exact, BERT) or "silu" (Llama)
    ln_eps: float = 1e-5  # LayerNorm / RMSNorm epsilon
    dropout: float = 0.0  # used only while training
    tie_embeddings: bool = True  # unembedding W_U = W_Eᵀ; False gives W_U its own weights
    family: str = "gpt"  # "gpt", "bert" or "llama": which parts (table above)
    n_kv_head: int = 0  # key/value heads, shared by n_head / n_kv_head query heads each (GQA); 0 = n_head
    head_dim: int = 0  # width of one head; 0 = d_model / n_head
    rope_theta: float = 10000.0  # RoPE base θ: pair i of a head turns by pos · θ^(−2i/d_head)
    n_token_types: int = 0  # BERT's segment embeddings (sentence A / B); 0 = none
    has_lm_head: bool = True  # False for an encoder read without a language-model head (no logits)
    attn_only: bool = False  # True: blocks have no MLP (nor its norm): x + Attn(LN1(x)) only; d_mlp is unused

    def __post_init__(self):
        for name, value, allowed in (
            ("family", self.family, FAMILIES),
            ("pos_encoding", self.pos_encoding, POSITIONS),
            ("activation", self.activation, ACTIVATIONS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
        if not self.head_dim and self.d_model % self.n_head:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_head={self.n_head}")
        if self.n_head % self.n_kv_heads:
            raise ValueError(f"n_head={self.n_head} is not a multiple of n_kv_head={self.n_kv_heads}")
        if self.pos_encoding == "sinusoidal" and self.d_model % 2:
            raise ValueError("sinusoidal positions need an even d_model")
        if self.attn_only and self.post_norm:
            raise ValueError("attention-only blocks are pre-norm: family gpt or llama")
        if self.pos_encoding == "rotary" and self.d_head % 2:
            raise ValueError("rotary positions need an even head width")

    @property
    def d_head(self) -> int:
        return self.head_dim or self.d_model // self.n_head

    @property
    def n_kv_heads(self) -> int:
        """Key/value heads per block (= n_head unless grouped-query attention)."""
        return self.n_kv_head or self.n_head

    @property
    def causal(self) -> bool:
        """A decoder reads earlier tokens only; an encoder (BERT) reads both directions."""
        return self.family != "bert"

    @property
    def norm(self) -> str:
        return "rmsnorm" if self.family == "llama" else "layernorm"

    @property
    def post_norm(self) -> bool:
        """BERT normalizes after adding to the residual stream; GPT and Llama normalize each sublayer's input."""
        return self.family == "bert"

    @classmethod
    def from_hugging_face(cls, hf: dict, **parts) -> ModelConfig:
        """The sizes every Hugging Face BERT and Llama config names the same way, plus this family's `parts`."""
        return cls(**{ours: hf[theirs] for ours, theirs in HF_SIZES.items()}, **parts)

    def kv_head(self, head: int) -> int:
        """The key/value head that query head `head` reads: heads g·n/n_kv … (g+1)·n/n_kv − 1 share head g."""
        return head // (self.n_head // self.n_kv_heads)

    def to_dict(self) -> dict:
        """config.json's contents."""
        return {"model_type": "atlas-gpt", **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
