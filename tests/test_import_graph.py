"""The layers import only downward (docs/architecture.md), and each shared meaning has one definition."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["app.py", "pages", "ui", "figures", "lessons", "transformer", "bench", "scripts"]
NEVER = {
    "transformer": {"lessons", "figures", "ui", "streamlit", "plotly", "pages"},
    "lessons": {"figures", "ui", "streamlit", "plotly", "pages"},
    "figures": {"ui", "streamlit", "pages", "lessons"},
}


def python_files(*roots: str) -> list[Path]:
    files = []
    for r in roots:
        path = ROOT / r
        files += [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
    return files


def imported_top_levels(path: Path) -> set[str]:
    """The top-level packages a module imports (relative imports stay inside their package: not listed)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_layers_import_only_downward():
    bad = []
    for layer, forbidden in NEVER.items():
        for path in python_files(layer):
            bad += [f"{path.relative_to(ROOT)} imports {name}" for name in sorted(imported_top_levels(path) & forbidden)]
    assert not bad, "\n".join(bad)


def definitions(prefix: str) -> list[str]:
    """Every function or method whose name starts with `prefix`, as 'file:name'."""
    found = []
    for path in python_files(*SOURCES):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith(prefix):
                found.append(f"{path.relative_to(ROOT)}:{node.name}")
    return found


def test_one_softmax_and_one_entropy():
    assert [d for d in definitions("softmax") if d.endswith(":softmax")] == ["lessons/probability.py:softmax"]
    assert definitions("entropy") == ["lessons/probability.py:entropy_bits"]


def test_the_check_sees_a_forbidden_import(tmp_path):
    """The import parser catches both forms, so the first test can fail."""
    bad = tmp_path / "m.py"
    bad.write_text("import streamlit as st\nfrom plotly import graph_objects\nfrom . import sibling\n")
    assert imported_top_levels(bad) == {"streamlit", "plotly"}
