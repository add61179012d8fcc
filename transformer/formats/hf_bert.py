"""A Hugging Face BERT checkpoint (config.json, model.safetensors, tokenizer.json) from a zip or a folder.

The zip is read in memory, never extracted. Names are Hugging Face BertModel's ("embeddings.word_embeddings.weight",
"encoder.layer.0.attention.self.query.weight", ...); a "bert." prefix (BertForMaskedLM and friends) is dropped.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from tokenizers import Tokenizer

from . import FormatError

FILES = ("config.json", "model.safetensors", "tokenizer.json")


@dataclass(frozen=True)
class BertFiles:
    """What a BERT checkpoint holds, in Hugging Face naming."""

    config: dict  # config.json as is (model_type "bert")
    state: dict[str, torch.Tensor]  # HF name -> float32 tensor
    tokenizer: Tokenizer  # tokenizer.json, with its padding and truncation switched off


def read_bert_zip(path: str | Path) -> BertFiles:
    """Read a zip of a BERT folder; the files may sit at the top of the zip or in one folder inside it."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            root = _zip_root(names)
            return _read_bert({name: archive.read(root + name) for name in FILES if root + name in names}, str(path))
    except zipfile.BadZipFile as err:
        raise FormatError(f"{path} is not a readable zip file ({err}).") from err


def read_bert_dir(path: str | Path) -> BertFiles:
    """Read a plain Hugging Face BERT folder."""
    folder = Path(path)
    return _read_bert({name: (folder / name).read_bytes() for name in FILES if (folder / name).is_file()}, str(folder))


def _zip_root(names: set[str]) -> str:
    """The prefix of the checkpoint's files: the one folder everything is in ("model/"), else "" (the zip's top)."""
    tops = {name.split("/", 1)[0] for name in names}
    return tops.pop() + "/" if len(tops) == 1 and all("/" in name for name in names) else ""


def _read_bert(blobs: dict[str, bytes], where: str) -> BertFiles:
    """The checkpoint from its files' bytes ({name: bytes} for those present); `where` names the source in errors."""
    missing = [name for name in FILES if name not in blobs]
    if missing:
        raise FormatError(f"{where} has no {', '.join(missing)} (a BERT checkpoint needs {', '.join(FILES)}).")
    return BertFiles(
        _config(blobs["config.json"], where),
        _state(blobs["model.safetensors"], where),
        _tokenizer(blobs["tokenizer.json"], where),
    )


def _config(blob: bytes, where: str) -> dict:
    """config.json, checked to describe a BERT."""
    try:
        config = json.loads(blob)
    except ValueError as err:
        raise FormatError(f"config.json in {where} is not valid JSON ({err}).") from err
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if model_type != "bert":
        raise FormatError(f"config.json in {where} describes model_type {model_type!r}, not 'bert'.")
    return config


def _state(blob: bytes, where: str) -> dict[str, torch.Tensor]:
    """The weights as float32, "bert." prefix dropped; integer buffers (old files save position_ids) left out."""
    try:
        tensors = load_safetensors(blob)
    except SafetensorError as err:
        raise FormatError(f"model.safetensors in {where} is truncated or corrupt ({err}).") from err
    return {name.removeprefix("bert."): t.float() for name, t in tensors.items() if t.is_floating_point()}


def _tokenizer(blob: bytes, where: str) -> Tokenizer:
    """tokenizer.json without the padding and truncation it may carry (all-MiniLM-L6-v2's pads to 128)."""
    try:
        tokenizer = Tokenizer.from_str(blob.decode("utf-8"))
    except Exception as err:  # tokenizers raises a bare Exception for a malformed file
        raise FormatError(f"tokenizer.json in {where} is not a valid tokenizers file ({err}).") from err
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer
