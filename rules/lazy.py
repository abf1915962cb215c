"""A package's names imported from their modules on first use (PEP 562's module `__getattr__`).

A package that re-exports names from heavy modules (the gate's engine) binds this as its `__getattr__`, so importing
the package costs nothing until one of its names is read. Pure: it imports only the modules it is told, and only
when asked.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package` that reads each name of `homes` (name → submodule) from its submodule on first
    use and binds it on the package, so later reads are plain attribute lookups; any other name is an AttributeError.
    """

    def lookup(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{home}"), name)
        # Into the package's namespace directly, past any __setattr__ of its module's class.
        vars(sys.modules[package])[name] = value
        return value

    return lookup
