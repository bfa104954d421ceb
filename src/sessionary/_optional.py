"""Importing the optional packages behind extras, with the install line when one is missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from sessionary.errors import BackendNotInstalled

__all__ = ["require"]


def require(*modules: str, extra: str, what: str) -> ModuleType:
    """Import `modules` and return the first one.

    Args:
        modules: Dotted module names, all needed.
        extra: The sessionary extra that installs them.
        what: What needs them, for the error ("the redis backend").

    Raises:
        BackendNotInstalled: If one is missing; the text gives the `pip install` line.
    """
    try:
        loaded = [importlib.import_module(name) for name in modules]
    except ImportError as exc:
        raise BackendNotInstalled(
            f"{what} needs {', '.join(modules)} ({exc}): pip install 'sessionary[{extra}]'"
        ) from None
    return loaded[0]
