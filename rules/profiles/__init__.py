"""Readers for real profiler output, each turning bytes into one `Breakdown` with honest denominators.

Time comes from the union of intervals wherever the format has intervals (so concurrent work on several
queues or streams counts once), never from summed inclusive percentages; summed tables are read too but
marked inclusive. Pure: bytes in, structs out, no file or network access.

Entry points: `read_any(data, format=None)`, `detect(data)`, `combine(files)`, `find_phase(b, pattern)`,
`render_table(b)`; per-format readers live in their modules (`rocprof_trace`, `rocprof_stats`,
`rocprof_summary`, `nsys_stats`, `nsys_trace`) and in the `kineto` package (PyTorch traces).
"""

from __future__ import annotations

from worthit.rules.profiles.detect import FORMATS, READERS, combine, detect, read_any
from worthit.rules.profiles.errors import PhaseNotFoundError, ProfileError
from worthit.rules.profiles.intervals import union_length
from worthit.rules.profiles.kineto import read_steps
from worthit.rules.profiles.lookup import find_phase
from worthit.rules.profiles.model import KINDS, Breakdown, Kind, Phase
from worthit.rules.profiles.report import render_table

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
