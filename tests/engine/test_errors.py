"""One error hierarchy: every exception class of the engine, the lessons and the figures is defined in
transformer/errors.py and derives from AtlasError, so a page that catches AtlasError (or a branch) shows them all."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import figures
import lessons
import transformer
from transformer import errors
from transformer.errors import AtlasError, InputError, ModelLoadError

KNOWN = {  # the hierarchy's classes and their parents, as errors.py's docstring draws them
    "AtlasError": ValueError,
    "ModelLoadError": AtlasError,
    "FormatError": ModelLoadError,
    "InputError": AtlasError,
    **dict.fromkeys(["TraceInputError", "SourceInputError", "ScoreInputError", "TableError"], InputError),
    **dict.fromkeys(["NotOneToken", "WordNotFound", "TraceFileError"], InputError),
}


def every_module() -> list:
    """Every module of the three packages, imported (not transformer.__main__, which runs the command line)."""
    found = []
    for package in (transformer, lessons, figures):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith("__main__"):
                found.append(importlib.import_module(info.name))
    return [transformer, lessons, figures, *found]


def exception_classes() -> dict[str, type]:
    """module.Class → every exception class a module defines (not the ones it imports)."""
    return {
        f"{module.__name__}.{name}": cls
        for module in every_module()
        for name, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, BaseException) and cls.__module__ == module.__name__
    }


def test_every_exception_class_is_in_the_one_hierarchy():
    found = exception_classes()
    assert {f"transformer.errors.{name}" for name in KNOWN} <= set(found)
    for where, cls in found.items():
        assert issubclass(cls, AtlasError) and cls.__module__ == "transformer.errors", where
    assert len(found) == len(KNOWN), sorted(found)


def test_the_hierarchy_is_drawn_as_documented():
    for name, parent in KNOWN.items():
        cls = getattr(errors, name)
        assert cls.__bases__ == (parent,), name
        assert name in errors.__doc__, name  # drawn in the module's tree


def test_the_modules_that_raise_them_use_the_one_class():
    """Names the pages reach through a lesson module are the hierarchy's own classes, not copies."""
    from lessons import context, embedding_space, lecture, softmax_lab

    assert context.WordNotFound is errors.WordNotFound and embedding_space.NotOneToken is errors.NotOneToken
    assert lecture.TableError is errors.TableError and softmax_lab.ScoreInputError is errors.ScoreInputError
    from transformer.formats import FormatError

    assert FormatError is errors.FormatError
