"""Llama-family decoders (e.g. SmolLM2) read into the GPT class with Llama's parts.

Llama = RMSNorm before each sublayer, rotary positions (RoPE) inside attention instead of a position
table, grouped-query attention (several query heads share one key/value head), a SwiGLU MLP, no biases.
Weights come in Hugging Face LlamaForCausalLM names (from a safetensors directory, or a GGUF file
read by transformer.formats).
"""

from __future__ import annotations

import torch

from ..config import ModelConfig
from ..errors import ModelLoadError
from ..layers import per_head


def llama_to_atlas(hf: dict, state: dict[str, torch.Tensor]) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """Map a Hugging Face Llama config and state dict onto ModelConfig and our parameter names."""
    if hf.get("hidden_act", "silu") != "silu":
        raise ModelLoadError(f"Llama activation {hf['hidden_act']!r} is not supported (silu).")
    # transformers ≥ 5 nests it
    rope = {"rope_theta": hf.get("rope_theta", 10000.0), **(hf.get("rope_parameters") or {})}
    if hf.get("rope_scaling") or rope.get("rope_type", "default") != "default":
        raise ModelLoadError(
            f"Llama RoPE scaling {hf.get('rope_scaling') or rope!r} is not supported (plain RoPE only)."
        )
    tied = "lm_head.weight" not in state or hf.get("tie_word_embeddings", False)
    cfg = ModelConfig.from_hugging_face(
        hf, pos_encoding="rotary", activation="silu", ln_eps=hf.get("rms_norm_eps", 1e-5), tie_embeddings=tied,
        family="llama", n_kv_head=hf.get("num_key_value_heads") or 0, head_dim=hf.get("head_dim") or 0,
        rope_theta=float(rope["rope_theta"]),
    )
    d, nh, nkv, hs = cfg.d_model, cfg.n_head, cfg.n_kv_heads, cfg.d_head
    sd = {k.removeprefix("model."): v for k, v in state.items()}
    out = {"W_E": sd["embed_tokens.weight"], "ln_final.w": sd["norm.weight"]}
    if not tied:
        out["W_U_untied"] = state["lm_head.weight"].T.contiguous()  # (d, vocab)
    for i in range(cfg.n_layer):
        h, b = f"layers.{i}.", f"blocks.{i}."
        for name, hf_name, n in (("Q", "q_proj", nh), ("K", "k_proj", nkv), ("V", "v_proj", nkv)):
            out[f"{b}attn.W_{name}"] = per_head(sd[f"{h}self_attn.{hf_name}.weight"], n)  # (n, d, hs)
        out[b + "attn.W_O"] = sd[h + "self_attn.o_proj.weight"].T.reshape(nh, hs, d).contiguous()  # (nh, hs, d)
        out[b + "mlp.W_gate"] = sd[h + "mlp.gate_proj.weight"].T.contiguous()  # (d, d_mlp)
        out[b + "mlp.W_in"] = sd[h + "mlp.up_proj.weight"].T.contiguous()  # (d, d_mlp)
        out[b + "mlp.W_out"] = sd[h + "mlp.down_proj.weight"].T.contiguous()  # (d_mlp, d)
        out[b + "ln1.w"], out[b + "ln2.w"] = sd[h + "input_layernorm.weight"], sd[h + "post_attention_layernorm.weight"]
    return cfg, out
