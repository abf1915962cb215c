"""Nsight Systems ``nsys stats --format csv`` summary reports: cuda_gpu_kern_sum, cuda_gpu_mem_time_sum,
cuda_api_sum (and their pre-2022 names gpukernsum, gpumemtimesum, cudaapisum).

Like rocprofv3's stats, these sum durations per name: ``Time (%)`` is a share of summed time and counts
concurrent streams twice. Totals are kept, marked inclusive. Preamble lines printed before the header
(``Generating SQLite file…``, ``** CUDA GPU Kernel Summary``) are skipped.
"""

from __future__ import annotations

from typing import Final, Literal

from worthit.rules.phase_names import kernel_kind
from worthit.rules.profiles._text import CsvRows, check_bytes, find_column, to_count
from worthit.rules.profiles.collect import summed_breakdown
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.model import Breakdown, Kind
from worthit.rules.profiles.naming import api_kind, copy_name

KERN_SUM: Final = "nsys_cuda_gpu_kern_sum"
MEM_TIME_SUM: Final = "nsys_cuda_gpu_mem_time_sum"
API_SUM: Final = "nsys_cuda_api_sum"
# Advice for when no trace was given beside the summary; an nsys report's option, not worthit's.
RERUN: Final = "For unions over streams, export nsys's cuda_gpu_trace report and give worthit that trace."
SumFormat = Literal["nsys_cuda_gpu_kern_sum", "nsys_cuda_gpu_mem_time_sum", "nsys_cuda_api_sum"]

_TOTAL = "totaltime(ns)"


def sum_format_of(names: list[str]) -> SumFormat | None:
    """Which nsys summary report a normalised header belongs to, or None."""
    if _TOTAL not in names:
        return None
    if "operation" in names:
        return MEM_TIME_SUM
    if "name" not in names:
        return None
    if "instances" in names:
        return KERN_SUM
    if "numcalls" in names or "calls" in names:
        return API_SUM
    return None


def read_kern_sum(data: bytes) -> Breakdown:
    """Read ``cuda_gpu_kern_sum`` (kernels by summed time)."""
    return _read(data, KERN_SUM)


def read_mem_time_sum(data: bytes) -> Breakdown:
    """Read ``cuda_gpu_mem_time_sum`` (memcpy/memset operations by summed time)."""
    return _read(data, MEM_TIME_SUM)


def read_api_sum(data: bytes) -> Breakdown:
    """Read ``cuda_api_sum`` (CUDA API calls by summed host time; cudaMalloc/Free → alloc, cudaMemcpy → copy)."""
    return _read(data, API_SUM)


def _read(data: bytes, fmt: SumFormat) -> Breakdown:
    check_bytes(data, fmt)
    rows = CsvRows(data, fmt)
    label = "Operation" if fmt == MEM_TIME_SUM else "Name"
    names = rows.header(lambda n: sum_format_of(n) == fmt, f"columns Time (%), Total Time (ns), …, {label}")
    width = len(names)
    raw = rows.raw_header
    at_total = names.index(_TOTAL)
    at_name = names.index("operation" if fmt == MEM_TIME_SUM else "name")
    at_calls = find_column(names, "instances", "numcalls", "calls", "count", "operations")
    table: list[tuple[str, Kind, int, int]] = []
    for row in rows.records(width):
        total = to_count(row[at_total], fmt=fmt, line=rows.line, column=raw[at_total])
        calls = 0 if at_calls is None else to_count(row[at_calls], fmt=fmt, line=rows.line, column=raw[at_calls])
        name = row[at_name]
        table.append((*_classify(name, fmt), total, calls))
    if not table:
        raise ProfileError("the header is there but no rows follow", format_expected=fmt, line=rows.line)
    notes = [
        "Summed durations from an nsys summary: Time (%) is of summed time, concurrent streams count twice; "
        "shares overlap and must not be added.",
        RERUN,
    ]
    device = fmt != API_SUM
    if device:
        notes.append("device_busy_ns is the summed time, an upper bound on the time the GPU was busy.")
    return summed_breakdown(fmt, table, notes=notes, device_table=device)


def _classify(name: str, fmt: SumFormat) -> tuple[str, Kind]:
    if fmt == KERN_SUM:
        return name, kernel_kind(name)
    if fmt == MEM_TIME_SUM:
        return device_op(name)
    return name, api_kind(name)


def device_op(name: str) -> tuple[str, Kind]:
    """Name and kind of an nsys memory operation row: ``[CUDA memcpy HtoD]`` → ("H2D copy", copy)."""
    lowered = name.lower()
    if "memset" in lowered:
        return "memset", "other"
    if "memcpy" in lowered or "copy" in lowered:
        return copy_name(name), "copy"
    return name, "other"
