"""Models on disk: a directory with config.json, model.safetensors, tokenizer.json and a README.md card.

Two formats load into the same instrumented `GPT`: our own (config `model_type: atlas-gpt`) and
Hugging Face GPT-2 (`model_type: gpt2`, Conv1D weights, learned positions, GELU-new). Weights
are read from safetensors only, never from pickle.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .config import GPTConfig
from .model import GPT
from .tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets" / "models"
FILES = ("config.json", "model.safetensors", "tokenizer.json")
MODEL_DIRS_ENV = "ATLAS_MODEL_DIRS"  # extra folders (os.pathsep-separated) whose model directories the app may open


class ModelLoadError(ValueError):
    """A model directory cannot be loaded; the message says why."""


@dataclass(frozen=True)
class LoadedModel:
    name: str
    path: Path
    model: GPT  # eval mode; never modified after loading
    tokenizer: Tokenizer
    card: str  # the README.md model card ("" if none)

    @property
    def cfg(self) -> GPTConfig:
        return self.model.cfg


def is_gpt_dir(path: Path) -> bool:
    """A directory whose config.json describes a decoder this module loads (atlas-gpt or gpt2)."""
    try:
        kind = json.loads((path / "config.json").read_text()).get("model_type", "atlas-gpt")
    except (OSError, ValueError, AttributeError):
        return False
    return kind in ("atlas-gpt", "gpt2")


def bundled_models() -> list[str]:
    """Names of the decoder models under assets/models/ (the translator has its own page and loader)."""
    return sorted(p.name for p in ASSETS.iterdir() if is_gpt_dir(p)) if ASSETS.is_dir() else []


def allowed_roots() -> list[Path]:
    """Folders whose model directories the app may load: assets/models, ./models, and $ATLAS_MODEL_DIRS."""
    extra = [Path(p).expanduser() for p in os.environ.get(MODEL_DIRS_ENV, "").split(os.pathsep) if p]
    return [r.resolve() for r in (ASSETS, ROOT / "models", *extra)]


def local_models() -> list[str]:
    """Model directories found one level below the allowed folders (bundled ones excluded), as paths."""
    found = []
    for root in allowed_roots()[1:]:
        if root.is_dir():
            found += [str(p) for p in sorted(root.iterdir()) if is_gpt_dir(p)]
    return found


def resolve(name_or_dir: str | Path, restrict: bool = False) -> Path:
    """A bundled model's name, or a path to a model directory (inside allowed_roots() when `restrict`)."""
    bundled = ASSETS / str(name_or_dir)
    path = bundled if str(name_or_dir) in bundled_models() else Path(name_or_dir).expanduser()
    if restrict and not any(path.resolve().is_relative_to(r) for r in allowed_roots()):
        raise ModelLoadError(f"{str(name_or_dir)!r} is outside the folders this app may open models from; put it under ./models or add its folder to {MODEL_DIRS_ENV}.")
    if not path.is_dir():
        raise ModelLoadError(f"No model directory at {str(name_or_dir)!r} (bundled models: {', '.join(bundled_models())}).")
    missing = [f for f in FILES if not (path / f).is_file()]
    if missing:
        raise ModelLoadError(f"{path} is not a model directory: missing {', '.join(missing)}.")
    return path


def save_model(out: str | Path, model: GPT, tokenizer: Tokenizer, card: str = "") -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.cfg.to_json(out / "config.json")
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "atlas-gpt"})
    tokenizer.save(out / "tokenizer.json")
    if card:
        (out / "README.md").write_text(card)
    return out


def load_model(name_or_dir: str | Path, restrict: bool = False) -> LoadedModel:
    """Load a model directory into an eval-mode GPT; `restrict` limits paths to allowed_roots()."""
    path = resolve(name_or_dir, restrict)
    try:
        raw_cfg = json.loads((path / "config.json").read_text())
        state = load_file(str(path / "model.safetensors"))
    except (OSError, ValueError, SafetensorError) as err:
        raise ModelLoadError(f"Could not read the model in {path}: {err}") from err
    kind = raw_cfg.get("model_type", "atlas-gpt")
    if kind not in ("atlas-gpt", "gpt2"):
        raise ModelLoadError(f"{path}: model_type {kind!r} is not supported (atlas-gpt or gpt2).")
    try:
        cfg, state = gpt2_to_atlas(raw_cfg, state) if kind == "gpt2" else (GPTConfig.from_dict(raw_cfg), state)
        model = GPT(cfg)
        model.load_state_dict(state)
    except ModelLoadError:
        raise
    except KeyError as err:
        raise ModelLoadError(f"{path}: {err.args[0]!r} is missing from config.json or model.safetensors.") from err
    except (ValueError, RuntimeError, TypeError) as err:
        raise ModelLoadError(f"{path}: the weights do not fit the config: {err}") from err
    model.eval().requires_grad_(False)
    try:
        tokenizer = Tokenizer.from_file(path / "tokenizer.json")
    except Exception as err:  # `tokenizers` raises a bare Exception
        raise ModelLoadError(f"{path}: tokenizer.json is not a valid tokenizer: {err}") from err
    card = (path / "README.md").read_text() if (path / "README.md").is_file() else ""
    return LoadedModel(path.name, path, model, tokenizer, card)


def gpt2_to_atlas(hf: dict, state: dict[str, torch.Tensor]) -> tuple[GPTConfig, dict[str, torch.Tensor]]:
    """Map a Hugging Face GPT-2 config and state dict onto GPTConfig and our parameter names.

    GPT-2's Conv1D stores weights as (in, out) and computes x·W + b, so no transpose is needed;
    c_attn packs Q, K, V side by side: (d, 3d) → three (d, d) → per head (nh, d, hs).
    """
    for flag, ok in (("scale_attn_by_inverse_layer_idx", False), ("reorder_and_upcast_attn", False), ("scale_attn_weights", True)):
        if hf.get(flag, ok) != ok:
            raise ModelLoadError(f"GPT-2 option {flag}={hf[flag]} is not supported.")
    if hf.get("activation_function", "gelu_new") not in ("gelu_new", "gelu"):
        raise ModelLoadError(f"GPT-2 activation {hf['activation_function']!r} is not supported (gelu_new, gelu).")
    d, nh = hf["n_embd"], hf["n_head"]
    cfg = GPTConfig(
        vocab_size=hf["vocab_size"],
        n_ctx=hf.get("n_positions", hf.get("n_ctx", 1024)),
        d_model=d,
        n_layer=hf["n_layer"],
        n_head=nh,
        d_mlp=hf.get("n_inner") or 4 * d,
        pos_encoding="learned",
        activation=hf.get("activation_function", "gelu_new"),
        ln_eps=hf.get("layer_norm_epsilon", 1e-5),
    )
    hs = cfg.d_head
    sd = {k.removeprefix("transformer."): v for k, v in state.items()}
    out = {"W_E": sd["wte.weight"], "W_pos": sd["wpe.weight"], "ln_final.w": sd["ln_f.weight"], "ln_final.b": sd["ln_f.bias"]}
    for i in range(cfg.n_layer):
        h, b = f"h.{i}.", f"blocks.{i}."
        W_Q, W_K, W_V = sd[h + "attn.c_attn.weight"].split(d, dim=1)  # 3 × (d, nh·hs)
        b_Q, b_K, b_V = sd[h + "attn.c_attn.bias"].split(d)  # 3 × (nh·hs,)
        for name, W, bias in (("Q", W_Q, b_Q), ("K", W_K, b_K), ("V", W_V, b_V)):
            out[f"{b}attn.W_{name}"] = W.reshape(d, nh, hs).permute(1, 0, 2).contiguous()  # (nh, d, hs)
            out[f"{b}attn.b_{name}"] = bias.reshape(nh, hs)
        out[b + "attn.W_O"] = sd[h + "attn.c_proj.weight"].reshape(nh, hs, d)  # (nh, hs, d)
        out[b + "attn.b_O"] = sd[h + "attn.c_proj.bias"]
        out[b + "mlp.W_in"], out[b + "mlp.b_in"] = sd[h + "mlp.c_fc.weight"], sd[h + "mlp.c_fc.bias"]
        out[b + "mlp.W_out"], out[b + "mlp.b_out"] = sd[h + "mlp.c_proj.weight"], sd[h + "mlp.c_proj.bias"]
        for ln, hf_ln in (("ln1", "ln_1"), ("ln2", "ln_2")):
            out[f"{b}{ln}.w"], out[f"{b}{ln}.b"] = sd[f"{h}{hf_ln}.weight"], sd[f"{h}{hf_ln}.bias"]
    return cfg, out
