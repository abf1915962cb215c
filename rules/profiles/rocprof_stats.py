"""rocprofv3 ``--stats`` tables: kernel_stats.csv, hip_api_stats.csv, memory_copy_stats.csv (and hsa/…).

A stats table has no timestamps: one row per name with the summed duration of its calls. Concurrent
calls on several queues are summed, so the printed Percentage is a share of *summed* time, not of wall
or device time. The breakdown keeps the totals and is marked inclusive.
"""

from __future__ import annotations

from worthit.rules.phase_names import kernel_kind
from worthit.rules.profiles._text import CsvRows, check_bytes, to_count
from worthit.rules.profiles.collect import summed_breakdown
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.model import Breakdown, Kind
from worthit.rules.profiles.naming import api_kind, copy_name

FORMAT = "rocprofv3_stats"
# Advice for when no trace was given beside the table (`combine` leaves it out when one was). Options of rocprofv3,
# not of worthit: said so, since it is printed by `worthit profile`.
RERUN = (
    "For the union of traced time, record with rocprofv3's own --kernel-trace and --memory-copy-trace options "
    "and give worthit those traces."
)
_REQUIRED = ("name", "calls", "totaldurationns")


def is_stats_header(names: list[str]) -> bool:
    """True for the header of a rocprofv3 *_stats.csv."""
    return all(column in names for column in _REQUIRED)


def read(data: bytes) -> Breakdown:
    """Read any rocprofv3 *_stats.csv; the table's domain is inferred from its names.

    Kernel tables → kind kernel; MEMORY_COPY_* rows → copy, named by direction ("H2D copy");
    host API tables (every name starts with hip/hsa/roctx/__hip) → api, except allocation and free calls
    → alloc and memcpy calls → copy, so "allocation and copy" can be totalled from the API side.
    """
    check_bytes(data, FORMAT)
    rows = CsvRows(data, FORMAT)
    names = rows.header(is_stats_header, "columns Name, Calls, TotalDurationNs, Percentage")
    width = len(names)
    at_name, at_calls, at_total = (names.index(c) for c in _REQUIRED)
    raw = rows.raw_header
    table: list[tuple[str, int, int]] = []
    for row in rows.records(width):
        calls = to_count(row[at_calls], fmt=FORMAT, line=rows.line, column=raw[at_calls])
        total = to_count(row[at_total], fmt=FORMAT, line=rows.line, column=raw[at_total])
        table.append((row[at_name], total, calls))
    if not table:
        raise ProfileError("the header is there but no rows follow", format_expected=FORMAT, line=rows.line)
    domain = _domain([name for name, _, _ in table])
    out: list[tuple[str, Kind, int, int]] = []
    for name, total, calls in table:
        label, kind = _classify(name, domain)
        out.append((label, kind, total, calls))
    notes = [
        "Summed durations from a stats table: Percentage is of summed time, concurrent calls count twice; "
        "shares overlap and must not be added.",
        RERUN,
    ]
    device = domain in ("kernel", "copy")
    if device:
        notes.append("device_busy_ns is the summed time, an upper bound on the time the device was busy.")
    fmt = f"rocprofv3_{domain}_stats"
    return summed_breakdown(fmt, out, notes=notes, device_table=device)


def _domain(names: list[str]) -> str:
    if all(n.upper().startswith("MEMORY_COPY") for n in names):
        return "copy"
    if all(n.upper().startswith("MEMORY_ALLOCATION") for n in names):
        return "alloc"
    if all(n.lower().startswith(("hip", "__hip", "hsa", "roctx", "rccl", "nccl", "marker")) for n in names):
        return "api"
    return "kernel"


def _classify(name: str, domain: str) -> tuple[str, Kind]:
    if domain == "copy":
        return copy_name(name), "copy"
    if domain == "alloc":
        return name, "alloc"
    if domain == "api":
        return name, api_kind(name)
    return name, kernel_kind(name)
