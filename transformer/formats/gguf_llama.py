"""A llama GGUF file (llama.cpp's format) as a Hugging Face LlamaForCausalLM checkpoint: config, state, tokenizer.

Quantized tensors are dequantized to float32 with gguf.quants.dequantize, which gives the weights Hugging Face's
own GGUF loader gives. llama.cpp stores the rows of Q and K permuted for its rotary layout (pairs (2i, 2i+1)
instead of HF's halves (i, i + head_dim/2)); the reader undoes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from gguf import GGUFReader
from gguf.quants import dequantize
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

from . import FormatError

MAGIC = b"GGUF"
CONTROL = 3  # tokenizer.ggml.token_type of tokens like <|im_start|>: special, never split
# tokenizer.ggml.pre values whose text split is GPT-2's own (ByteLevel's regex); others (llama-bpe, qwen2...) differ.
GPT2_SPLIT = {"default", "gpt-2", "smollm"}

# GGUF name -> HF name, per layer ("blk.{i}." -> "model.layers.{i}.") and for the rest.
LAYER_NAMES = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}


class _Reader(GGUFReader):
    """GGUFReader parsing a plain ndarray view of its memory map, not the np.memmap itself.

    Every slice of an np.memmap pays for memmap bookkeeping; parsing SmolLM2's header takes 250,000 slices
    (49,152 tokens, 48,900 merges), 2.2 s that way and 0.7 s this way. Tensors become plain views too.
    """

    @property
    def data(self) -> np.ndarray:
        return self._plain

    @data.setter
    def data(self, mapped: np.memmap) -> None:
        self._plain = mapped.view(np.ndarray)  # keeps the map alive through .base


@dataclass(frozen=True)
class LlamaFiles:
    """What a llama GGUF holds, in Hugging Face naming."""

    config: dict  # LlamaConfig keyword arguments
    state: dict[str, torch.Tensor]  # HF LlamaForCausalLM name -> float32 tensor
    tokenizer: Tokenizer  # byte-level BPE from the metadata; adds no BOS unless the file asks for it


def read_gguf_llama(path: str | Path) -> LlamaFiles:
    """Parse, check and dequantize a llama GGUF file."""
    reader = _open(path)
    meta = {name: field.contents() for name, field in reader.fields.items()}
    tensors = {t.name: t for t in reader.tensors}
    config = _config(meta, "output.weight" not in tensors, path)
    tokenizer = _tokenizer(meta, path)  # before the slow part, so a bad tokenizer fails fast
    return LlamaFiles(config, _state(tensors, config, path), tokenizer)


def _open(path: str | Path) -> _Reader:
    """A reader over the file, its magic checked first; a file cut anywhere, header or tensor data, fails to parse."""
    with open(path, "rb") as f:
        magic = f.read(len(MAGIC))
    if magic != MAGIC:
        raise FormatError(f"{path} is not a GGUF file (it starts with {magic!r}, not {MAGIC!r}).")
    try:
        return _Reader(path)
    except (ValueError, IndexError, KeyError, OverflowError) as err:  # GGUFReader slices past the end, then fails here
        raise FormatError(f"{path} is truncated or corrupt: the GGUF parser stopped with {err!r}.") from err


def _config(meta: dict, tied: bool, path: str | Path) -> dict:
    """HF LlamaConfig keyword arguments from the llama.* and tokenizer.ggml.* metadata."""
    arch = meta.get("general.architecture")
    if arch != "llama":
        raise FormatError(f"{path} holds a {arch!r} model; only 'llama' GGUF files can be read.")
    if meta.get("llama.rope.scaling.type", "none") != "none":
        raise FormatError(f"{path} uses RoPE scaling {meta['llama.rope.scaling.type']!r}, which is not supported.")

    def need(key: str):
        if f"llama.{key}" not in meta:
            raise FormatError(f"{path} lacks the metadata key llama.{key}.")
        return meta[f"llama.{key}"]

    hidden, heads = need("embedding_length"), need("attention.head_count")
    return {
        "vocab_size": meta.get("llama.vocab_size", len(meta.get("tokenizer.ggml.tokens", ()))),
        "hidden_size": hidden,
        "intermediate_size": need("feed_forward_length"),
        "num_hidden_layers": need("block_count"),
        "num_attention_heads": heads,
        "num_key_value_heads": meta.get("llama.attention.head_count_kv", heads),
        "head_dim": meta.get("llama.rope.dimension_count", hidden // heads),
        "rope_theta": meta.get("llama.rope.freq_base", 10000.0),
        "rms_norm_eps": need("attention.layer_norm_rms_epsilon"),
        "max_position_embeddings": need("context_length"),
        "tie_word_embeddings": tied,
        "bos_token_id": meta.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": meta.get("tokenizer.ggml.eos_token_id"),
        "pad_token_id": meta.get("tokenizer.ggml.padding_token_id"),
    }


def _expected_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    """GGUF tensor name -> HF shape (out, in) of every tensor a llama of this config must have."""
    d, d_ff, hd = config["hidden_size"], config["intermediate_size"], config["head_dim"]
    q, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    layer = {
        "attn_norm": (d,),
        "attn_q": (q, d),
        "attn_k": (kv, d),
        "attn_v": (kv, d),
        "attn_output": (d, q),
        "ffn_norm": (d,),
        "ffn_gate": (d_ff, d),
        "ffn_up": (d_ff, d),
        "ffn_down": (d, d_ff),
    }
    shapes = {"token_embd.weight": (config["vocab_size"], d), "output_norm.weight": (d,)}
    for i in range(config["num_hidden_layers"]):
        shapes.update({f"blk.{i}.{name}.weight": shape for name, shape in layer.items()})
    if not config["tie_word_embeddings"]:
        shapes["output.weight"] = (config["vocab_size"], d)
    return shapes


def _hf_name(name: str) -> str:
    """The HF name of a GGUF tensor: blk.3.attn_q.weight -> model.layers.3.self_attn.q_proj.weight,
    output.weight -> lm_head.weight."""
    stem, suffix = name.rsplit(".", 1)
    if stem.startswith("blk."):
        _, i, kind = stem.split(".")
        return f"model.layers.{i}.{LAYER_NAMES[kind]}.{suffix}"
    return f"{TOP_NAMES[stem]}.{suffix}"


def _state(tensors: dict, config: dict, path: str | Path) -> dict[str, torch.Tensor]:
    """Every tensor dequantized to float32 under its HF name, Q and K rows put back in HF order."""
    shapes = _expected_shapes(config)
    missing, unexpected = sorted(shapes.keys() - tensors.keys()), sorted(tensors.keys() - shapes.keys())
    if missing:
        raise FormatError(f"{path} is missing {len(missing)} tensors a llama needs: {_some(missing)}.")
    if unexpected:
        raise FormatError(f"{path} has tensors a plain llama does not: {_some(unexpected)}.")
    heads = {"attn_q": config["num_attention_heads"], "attn_k": config["num_key_value_heads"]}
    state = {}
    for name, shape in shapes.items():
        t = tensors[name]
        if tuple(reversed(t.shape.tolist())) != shape:  # GGUF lists dimensions innermost first
            raise FormatError(
                f"{path}: tensor {name} has shape {tuple(reversed(t.shape.tolist()))}, "
                f"expected {shape} from the metadata."
            )
        try:
            w = dequantize(t.data, t.tensor_type)  # (out, in) float32; a read-only view of the file when stored as F32
        except NotImplementedError as err:
            raise FormatError(
                f"{path}: tensor {name} is stored as {t.tensor_type.name}, which gguf cannot dequantize."
            ) from err
        kind = name.split(".")[-2]
        if kind in heads:
            w = _unpermute(w, heads[kind])
        state[_hf_name(name)] = torch.from_numpy(w if w.flags.writeable else w.copy())
    return state


def _some(names: list[str], shown: int = 4) -> str:
    """The first few names, and how many more."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _unpermute(w: np.ndarray, n_heads: int) -> np.ndarray:
    """llama.cpp's Q/K row order -> HF's: per head, rows (pair, 2) -> (2, pair)."""
    d_in = w.shape[1]
    return w.reshape(n_heads, -1, 2, d_in).swapaxes(1, 2).reshape(-1, d_in)  # (n_heads * head_dim, d_in), a fresh copy


def _tokenizer(meta: dict, path: str | Path) -> Tokenizer:
    """The byte-level BPE tokenizer the metadata describes, control tokens kept whole as special tokens."""
    model, split = meta.get("tokenizer.ggml.model"), meta.get("tokenizer.ggml.pre", "default")
    if model != "gpt2":
        raise FormatError(f"{path} has tokenizer {model!r}; only byte-level BPE ('gpt2') is supported.")
    if split not in GPT2_SPLIT:
        raise FormatError(
            f"{path} splits text the {split!r} way; only {sorted(GPT2_SPLIT)} (GPT-2's split) are supported."
        )
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges"):
        if key not in meta:
            raise FormatError(f"{path} has no {key}: its tokenizer cannot be built.")
    tokens = meta["tokenizer.ggml.tokens"]
    merges = [tuple(merge.split(" ")) for merge in meta["tokenizer.ggml.merges"]]
    tokenizer = Tokenizer(models.BPE({token: i for i, token in enumerate(tokens)}, merges, fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    types = meta.get("tokenizer.ggml.token_type", ())  # may be absent: then no control tokens
    control = [token for token, kind in zip(tokens, types, strict=False) if kind == CONTROL]
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in control])
    if meta.get("tokenizer.ggml.add_bos_token", False):  # as Hugging Face's tokenizer does when the file asks
        bos_id = meta["tokenizer.ggml.bos_token_id"]
        bos = tokens[bos_id]
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1", special_tokens=[(bos, bos_id)]
        )
    return tokenizer
