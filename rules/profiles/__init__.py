"""Readers for real profiler output, each turning bytes into one `Breakdown` with honest denominators.

Time comes from the union of intervals wherever the format has intervals (so concurrent work on several
queues or streams counts once), never from summed inclusive percentages; summed tables are read too but
marked inclusive. Pure: bytes in, structs out, no file or network access.

Entry points: `read_any(data, format=None)`, `detect(data)`, `combine(files)`, `find_phase(b, pattern)`,
`render_table(b)`; per-format readers live in their modules (`rocprof_trace`, `rocprof_stats`,
`rocprof_summary`, `nsys_stats`, `nsys_trace`) and in the `kineto` package (PyTorch traces).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING

from worthit.rules.lazy import lazy_names

if TYPE_CHECKING:
    from worthit.rules.profiles.detect import FORMATS, READERS, combine, detect, read_any
    from worthit.rules.profiles.errors import PhaseNotFoundError, ProfileError
    from worthit.rules.profiles.intervals import union_length
    from worthit.rules.profiles.kineto import read_steps
    from worthit.rules.profiles.lookup import find_phase
    from worthit.rules.profiles.model import KINDS, Breakdown, Kind, Phase
    from worthit.rules.profiles.report import render_table

# Each name from the module that defines it, imported on first use: the engine reads `naming` for every proposal,
# and importing this package's readers with it (polars among them) cost `worthit review` half a second.
_HOMES = {
    "FORMATS": "detect",
    "READERS": "detect",
    "combine": "detect",
    "detect": "detect",
    "read_any": "detect",
    "PhaseNotFoundError": "errors",
    "ProfileError": "errors",
    "union_length": "intervals",
    "find_phase": "lookup",
    "KINDS": "model",
    "Breakdown": "model",
    "Kind": "model",
    "Phase": "model",
    "render_table": "report",
    "read_steps": "kineto",
}

__all__ = [
    "FORMATS",
    "KINDS",
    "READERS",
    "Breakdown",
    "Kind",
    "Phase",
    "PhaseNotFoundError",
    "ProfileError",
    "combine",
    "detect",
    "find_phase",
    "read_any",
    "read_steps",
    "render_table",
    "union_length",
]


__getattr__ = lazy_names(__name__, _HOMES)


class _Package(ModuleType):
    """This package, keeping `detect` the function: `detect` is also a submodule's name, and importing a submodule
    binds it on its package (the import system's own setattr), which would hide the function once imported lazily."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _HOMES and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
