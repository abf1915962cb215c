"""rocprofv3 traces: kernel_trace.csv, memory_copy_trace.csv, hip_api_trace.csv (one row per interval).

Three generations of the kernel trace header are accepted, matched by column name: the older one
without ``Stream_Id``, the current one with it, and ROCm 7's database-to-CSV export with a leading
``Guid`` column. Timestamps are nanoseconds. Rows are streamed; only two integers per row are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal

from worthit.rules.profiles._text import CsvRows, check_bytes, find_column, row_error
from worthit.rules.profiles.collect import Collector
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.model import Breakdown, Kind
from worthit.rules.profiles.naming import api_kind, copy_name, kernel_kind

KERNEL_TRACE: Final = "rocprofv3_kernel_trace"
MEMORY_COPY_TRACE: Final = "rocprofv3_memory_copy_trace"
API_TRACE: Final = "rocprofv3_api_trace"

TraceFormat = Literal["rocprofv3_kernel_trace", "rocprofv3_memory_copy_trace", "rocprofv3_api_trace"]

_NAME_COLUMN: dict[str, str] = {KERNEL_TRACE: "kernel_name", MEMORY_COPY_TRACE: "direction", API_TRACE: "function"}


def trace_format_of(names: list[str]) -> TraceFormat | None:
    """Which rocprofv3 trace a normalised header belongs to, or None."""
    if "start_timestamp" not in names or "end_timestamp" not in names:
        return None
    if "kernel_name" in names:
        return KERNEL_TRACE
    if "direction" in names:
        return MEMORY_COPY_TRACE
    if "function" in names and "domain" in names:
        return API_TRACE
    return None


def read_kernel_trace(data: bytes) -> Breakdown:
    """Read a rocprofv3 ``kernel_trace.csv``: one phase per kernel name, unions across queues and streams."""
    return _read_one(data, KERNEL_TRACE)


def read_memory_copy_trace(data: bytes) -> Breakdown:
    """Read a rocprofv3 ``memory_copy_trace.csv``: one phase per direction ("H2D copy", "D2H copy", …)."""
    return _read_one(data, MEMORY_COPY_TRACE)


def read_api_trace(data: bytes) -> Breakdown:
    """Read a rocprofv3 ``hip_api_trace.csv`` (or hsa): host API intervals, alloc/copy/api by name."""
    return _read_one(data, API_TRACE)


def _read_one(data: bytes, fmt: TraceFormat) -> Breakdown:
    collector = Collector()
    collect(data, fmt, collector)
    return collector.finish(fmt)


def collect(data: bytes, fmt: TraceFormat, collector: Collector) -> None:
    """Stream the rows of one rocprofv3 trace into `collector` (used by `combine` to join files of a run)."""
    check_bytes(data, fmt)
    rows = CsvRows(data, fmt)
    wanted = _NAME_COLUMN[fmt]

    def accept(names: list[str]) -> bool:
        return trace_format_of(names) == fmt

    names = rows.header(accept, f"columns {wanted.title()}, Start_Timestamp, End_Timestamp")
    width = len(names)
    name_at = names.index(wanted)
    start_at = names.index("start_timestamp")
    end_at = names.index("end_timestamp")
    classify = _classifier(fmt)
    device = fmt != API_TRACE
    # One (starts.append, ends.append) pair per distinct name: the hot loop does a dict lookup and two
    # C-level appends per row, nothing else.
    appenders: dict[str, tuple[Callable[[int], None], Callable[[int], None]]] = {}
    count = 0
    for row in rows:
        try:
            label = row[name_at]
            start = int(row[start_at])
            end = int(row[end_at])
        except (IndexError, ValueError) as exc:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            raise _bad_row(fmt, rows.line, row, width, rows.raw_header, (start_at, end_at), exc) from None
        if len(row) != width:
            raise row_error(fmt, rows.line, row, width)
        if end < start:
            raise ProfileError(
                f"End_Timestamp {end} is before Start_Timestamp {start}", format_expected=fmt, line=rows.line
            )
        pair = appenders.get(label)
        if pair is None:
            name, kind = classify(label)
            slot = collector.slot(name, kind, device=device)
            pair = appenders[label] = (slot.starts.append, slot.ends.append)
        pair[0](start)
        pair[1](end)
        count += 1
    if count == 0:
        raise ProfileError("the header is there but no rows follow", format_expected=fmt, line=rows.line)
    collector.formats.append(fmt)
    agents = find_column(names, "agent_id")
    if agents is not None and fmt == KERNEL_TRACE:
        collector.note("Device time is the union over all agents, queues and streams: concurrent work counts once.")


def _classifier(fmt: TraceFormat) -> Callable[[str], tuple[str, Kind]]:
    if fmt == KERNEL_TRACE:
        return lambda label: (label, kernel_kind(label))
    if fmt == MEMORY_COPY_TRACE:
        return lambda label: (copy_name(label), "copy")
    return lambda label: (label, api_kind(label))


def _bad_row(
    fmt: str, line: int, row: list[str], width: int, names: list[str], numeric: tuple[int, ...], exc: Exception
) -> ProfileError:
    if len(row) != width:
        return row_error(fmt, line, row, width)
    for at in numeric:
        try:
            int(row[at])
        except ValueError:
            return ProfileError(
                f"expected an integer nanosecond timestamp in column {names[at]}, got {row[at]!r}",
                format_expected=fmt,
                line=line,
            )
    return row_error(fmt, line, row, width, exc)


def trace_format_of_name(fmt: str) -> TraceFormat | None:
    """`fmt` as a rocprofv3 trace format name, or None when it names another format."""
    if fmt == KERNEL_TRACE:
        return KERNEL_TRACE
    if fmt == MEMORY_COPY_TRACE:
        return MEMORY_COPY_TRACE
    if fmt == API_TRACE:
        return API_TRACE
    return None
