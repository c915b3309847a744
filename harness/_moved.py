"""Modules that moved: their old names keep working, each import of a name warning where it lives now."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def moved(old: str, new: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the old module ``old``: each name is taken from ``new`` with a
    :class:`DeprecationWarning` saying where to import it from now."""

    def __getattr__(name: str) -> Any:
        try:
            value = getattr(importlib.import_module(new), name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None
        public = f"harness.{name}" if name in importlib.import_module("harness").__all__ else f"{new}.{name}"
        warnings.warn(f"{old}.{name} moved: import {public}", DeprecationWarning, stacklevel=2)
        return value

    return __getattr__
