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
# Inside the layers: modules (or folders) and the modules they never import, by dotted name (a prefix covers its
# submodules; `from transformer import GPT` counts as transformer.GPT).
NEVER_INSIDE = {
    # traces and lessons read a model through transformer/protocol.py, never through a family's class
    "transformer/trace.py": {"transformer.families", "transformer.GPT"},
    "lessons": {"transformer.GPT", *(f"transformer.families.{family}" for family in ("gpt", "bert", "llama"))},
    "transformer/protocol.py": {"transformer.families", "transformer.trace", "transformer.loading"},
    # a model knows nothing of how it is decoded, trained or loaded; the vocabulary reads text, never a model
    "transformer/families": {"transformer.decoding", "transformer.train_translator", "transformer.loading"},
    "transformer/vocabulary.py": {"torch", "transformer.families", "transformer.decoding"},
    # the pages' caches: one module per page group, none reaching into another's; the registry never reads them
    "ui/caches": {"ui.caches"},
    "ui/models.py": {"ui.caches"},
    # the live class's store, rules and questions run without a page (the store tests, the load bench)
    **{f"ui/live/{m}.py": {"streamlit", "ui.live.panel"} for m in ("store", "redis_store", "classroom", "questions")},
    # waking the pages reads Streamlit's sessions, never the class's pages or store
    "ui/live/wake.py": {"ui.live.panel", "ui.live.store", "ui.live.redis_store"},
    # minimal pairs: the lesson compares the traces it is given (loads and runs no model); the shared section reads
    # its own cache module, never a page group's
    "lessons/pairs.py": {"torch", "transformer.loading", "transformer.run_trace", "transformer.trace"},
    "ui/pairs.py": {f"ui.caches.{p.stem}" for p in (ROOT / "ui" / "caches").glob("*.py") if p.stem != "pairs"},
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


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """The dotted names a module imports, relative imports resolved against its package under `root`; for
    `from m import x`, both m and m.x (x may be a module)."""
    package = path.relative_to(root).parent.parts
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join((*base, *([node.module] if node.module else [])))
            names |= {module, *(f"{module}.{alias.name}" for alias in node.names)}
    return names


def forbidden_among(names: set[str], never: set[str]) -> list[str]:
    """The names among `names` that `never` forbids: one of its names, or a name under one."""
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in never))


def test_layers_import_only_downward():
    bad = []
    for layer, forbidden in NEVER.items():
        for path in python_files(layer):
            bad += [
                f"{path.relative_to(ROOT)} imports {name}" for name in sorted(imported_top_levels(path) & forbidden)
            ]
    assert not bad, "\n".join(bad)


def test_modules_inside_a_layer_keep_their_rules():
    bad = []
    for where, never in NEVER_INSIDE.items():
        paths = python_files(where)
        assert paths and all(path.is_file() for path in paths), f"{where}: nothing to check (moved or renamed?)"
        for path in paths:
            bad += [
                f"{path.relative_to(ROOT)} imports {name}" for name in forbidden_among(imported_modules(path), never)
            ]
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


def test_one_escaper_per_format():
    """User text is escaped in one place per format: for markdown in lessons/words.py (md, and quote built on it), for
    plotly labels, which read HTML, in figures/common.py (figures cannot import lessons)."""
    assert definitions("md") == ["lessons/words.py:md"]
    assert definitions("quote") == ["lessons/words.py:quote"]
    assert definitions("esc") == ["figures/common.py:esc"]


def test_the_pages_caches_live_in_ui_caches():
    """No page file defines a cached function (it would be made anew on every run): they live in ui/caches/, one
    module per page group, and no catch-all ui/cached*.py is left."""
    pages = [*python_files("pages"), ROOT / "home.py", ROOT / "app.py"]
    assert len(pages) > 10 and not [p.name for p in pages if "st.cache_" in p.read_text()]
    assert sorted((ROOT / "ui" / "caches").glob("*.py")) and not sorted((ROOT / "ui").glob("cached*.py"))


def test_the_check_sees_a_forbidden_import(tmp_path):
    """The import parser catches both forms, so the first test can fail."""
    bad = tmp_path / "m.py"
    bad.write_text("import streamlit as st\nfrom plotly import graph_objects\nfrom . import sibling\n")
    assert imported_top_levels(bad) == {"streamlit", "plotly"}


def test_the_check_resolves_relative_imports(tmp_path):
    """A family's class reached by a relative import, or through the package, is caught, so the rules inside the
    layers can fail."""
    trace = tmp_path / "transformer" / "trace.py"
    trace.parent.mkdir()
    trace.write_text("from .families.gpt import GPT\nfrom . import protocol\nfrom transformer import GPT, Trace\n")
    names = imported_modules(trace, tmp_path)
    assert {"transformer.families.gpt", "transformer.protocol", "transformer.GPT"} <= names
    caught = ["transformer.GPT", "transformer.families.gpt", "transformer.families.gpt.GPT"]
    assert forbidden_among(names, NEVER_INSIDE["transformer/trace.py"]) == caught
