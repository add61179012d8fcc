"""The trace file: one text's forward pass saved as a compressed .npz, written by `python -m transformer trace` and
by the app's "The model's trace (NPZ)" button, read by `load_trace` (or by `numpy.load(file)`: plain arrays only).

Keys (T tokens; docs/trace_format.md says the same with examples):

    format          str    ()       "attention-atlas-trace/1": what the file is, and the version of these keys
    model           str    ()       the model's name, directory or .gguf file, as given
    interventions   str    ()       JSON: {"temperature": τ, "head_temperature": [[layer, head or null, τ], …],
                                    "causal": true or false, "ablate": [[layer, head], …]}
    text            str    ()       the text that ran (after any cut; a sentence pair joined by a newline)
    tokens          str    (T,)     the vocabulary's own strings ("Ġbear": Ġ marks a leading space)
    labels          str    (T,)     the same tokens, readable ("␣bear")
    token_ids       int64  (T,)     their ids
    offsets         int64  (T, 2)   (start, end): the characters of `text` each token covers; special tokens (0, 0)
    token_type_ids  int64  (T,)     an encoder's only: the sentence of each token (0 = A, 1 = B)
    <engine name>   float32         every recorded array by its name ("blocks.0.attn.hook_pattern", "logits", …),
                                    shapes as in transformer/trace.py

Strings are numpy unicode arrays, so a file opens with allow_pickle=False; `load_trace` never unpickles.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from dataclasses import dataclass, fields
from typing import BinaryIO

import numpy as np
from numpy.lib.npyio import NpzFile

from .attention import Interventions
from .errors import TraceFileError
from .tokenizer import Encoding
from .trace import Trace

FORMAT = "attention-atlas-trace/1"
META_KEYS = ("format", "model", "interventions", "text")  # one string each
TOKEN_KEYS = {"tokens": "U", "labels": "U", "token_ids": "i", "offsets": "i", "token_type_ids": "i"}  # → dtype kind
UNREADABLE = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error)  # np.load on a damaged or foreign file


@dataclass(frozen=True)
class TraceFile:
    """A trace file's contents, read as a Trace is: `f.encoding`, `f.interventions`, `f[name]`, `f.names`."""

    model: str
    interventions: Interventions
    encoding: Encoding
    arrays: dict[str, np.ndarray]  # engine name → array

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.arrays)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]


def save_trace(file: str | os.PathLike | BinaryIO, tr: Trace, model: str) -> None:
    """Write `tr` (every array: runs the blocks not run yet) to `file`, a path (written as named) or a binary buffer."""
    enc, iv = tr.encoding, tr.interventions
    done = json.dumps({f.name: getattr(iv, f.name) for f in fields(iv)}, default=sorted)  # ablate: a sorted list
    meta = {"format": FORMAT, "model": model, "interventions": done, "text": enc.text}
    tokens = {
        "tokens": np.array(enc.tokens, dtype=str),  # (T,)
        "labels": np.array(enc.labels, dtype=str),  # (T,)
        "token_ids": np.array(enc.ids, dtype=np.int64),  # (T,)
        "offsets": np.array(enc.offsets, dtype=np.int64).reshape(len(enc), 2),  # (T, 2)
    }
    if enc.type_ids:
        tokens["token_type_ids"] = np.array(enc.type_ids, dtype=np.int64)  # (T,)
    contents = {**{k: np.array(v, dtype=str) for k, v in meta.items()}, **tokens, **tr.arrays()}
    if isinstance(file, str | os.PathLike):  # np.savez would add ".npz" to a path without it
        with open(file, "wb") as out:
            np.savez_compressed(out, **contents)
    else:
        np.savez_compressed(file, **contents)


def load_trace(file: str | os.PathLike | BinaryIO) -> TraceFile:
    """Read a trace file (a path or a binary buffer); anything else raises TraceFileError, saying what is wrong."""
    name = os.fspath(file) if isinstance(file, str | os.PathLike) else getattr(file, "name", "the file")
    try:
        loaded = np.load(file, allow_pickle=False)  # an .npz gives an NpzFile, an .npy file one array
        if isinstance(loaded, NpzFile):
            with loaded:
                data = {key: loaded[key] for key in loaded.files}
    except UNREADABLE as err:
        raise TraceFileError(f"{name} is not a trace file: numpy cannot read it as one ({err}).") from err
    if not isinstance(loaded, NpzFile):
        raise TraceFileError(f"{name} holds one array, not a trace file (an .npz of named arrays).")
    return _contents(name, data)


def _contents(name: str, data: dict[str, np.ndarray]) -> TraceFile:
    """The TraceFile of a file's arrays, once they are checked against the keys above."""
    if str(data.get("format", "")) != FORMAT:
        found = ", ".join(sorted(data)[:6]) + (" …" if len(data) > 6 else "") or "nothing"
        raise TraceFileError(f"{name} is not a trace file: its 'format' is not {FORMAT!r} (it holds {found}).")
    missing = [k for k in (*META_KEYS, *TOKEN_KEYS) if k not in data and k != "token_type_ids"]
    if missing:
        raise TraceFileError(f"{name} is not a whole trace file: {', '.join(missing)} missing.")
    T = data["token_ids"].size
    shapes = {k: (T, 2) if k == "offsets" else (T,) for k in TOKEN_KEYS}
    bad = [k for k in TOKEN_KEYS if k in data and (data[k].dtype.kind != TOKEN_KEYS[k] or data[k].shape != shapes[k])]
    if bad:
        raise TraceFileError(f"{name}: {', '.join(bad)} are not the arrays of {T} tokens a trace file holds.")
    try:
        done = json.loads(str(data["interventions"]))
        iv = Interventions(
            temperature=float(done["temperature"]),
            head_temperature=tuple((int(lay), head, float(t)) for lay, head, t in done["head_temperature"]),
            causal=bool(done["causal"]),
            ablate=frozenset((int(lay), int(head)) for lay, head in done["ablate"]),
        )
    except (ValueError, KeyError, TypeError) as err:
        raise TraceFileError(f"{name}: its interventions cannot be read ({err}).") from err
    types = data.get("token_type_ids")
    enc = Encoding(
        text=str(data["text"]),
        ids=tuple(data["token_ids"].tolist()),
        tokens=tuple(data["tokens"].tolist()),
        offsets=tuple(map(tuple, data["offsets"].tolist())),
        labels=tuple(data["labels"].tolist()),
        type_ids=() if types is None else tuple(types.tolist()),
    )
    arrays = {k: v for k, v in data.items() if k not in META_KEYS and k not in TOKEN_KEYS}
    return TraceFile(str(data["model"]), iv, enc, arrays)
