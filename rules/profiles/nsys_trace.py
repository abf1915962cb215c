"""Nsight Systems ``nsys stats --report cuda_gpu_trace --format csv``: one row per kernel, memcpy, memset.

Header (current): ``Start (ns),Duration (ns),CorrId,…,Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,
GreenCtx,Strm,Name``; older releases print ``Throughput (MBps)`` and no ``GreenCtx``. Columns are found by
name. Rows whose name is bracketed (``[CUDA memcpy Host-to-Device]``, ``[CUDA memset]``) are memory
operations; the rest are kernels.
"""

from __future__ import annotations

from collections.abc import Callable

from worthit.rules.phase_names import kernel_kind
from worthit.rules.profiles._text import CsvRows, check_bytes, off_the_clock, to_int
from worthit.rules.profiles.collect import Collector
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.model import Breakdown, Kind
from worthit.rules.profiles.nsys_stats import device_op

FORMAT = "nsys_cuda_gpu_trace"


def is_trace_header(names: list[str]) -> bool:
    """True for the header of a cuda_gpu_trace CSV."""
    return "start(ns)" in names and "duration(ns)" in names and "name" in names


def read(data: bytes) -> Breakdown:
    """Read ``cuda_gpu_trace``: unions per kernel name and copy direction across streams and devices."""
    collector = Collector()
    collect(data, collector)
    return collector.finish(FORMAT)


def collect(data: bytes, collector: Collector) -> None:
    """Stream a cuda_gpu_trace CSV into `collector`."""
    check_bytes(data, FORMAT)
    rows = CsvRows(data, FORMAT)
    names = rows.header(is_trace_header, "columns Start (ns), Duration (ns), …, Name")
    width = len(names)
    raw = rows.raw_header
    at_start = names.index("start(ns)")
    at_dur = names.index("duration(ns)")
    at_name = names.index("name")
    appenders: dict[str, tuple[Callable[[int], None], Callable[[int], None]]] = {}
    count = 0
    for row in rows.records(width):
        try:
            start = int(row[at_start])
            duration = int(row[at_dur])
        except ValueError:
            start = to_int(row[at_start], fmt=FORMAT, line=rows.line, column=raw[at_start])
            duration = to_int(row[at_dur], fmt=FORMAT, line=rows.line, column=raw[at_dur])
        if duration < 0:
            raise ProfileError(f"Duration (ns) is negative: {duration}", format_expected=FORMAT, line=rows.line)
        label = row[at_name]
        pair = appenders.get(label)
        if pair is None:
            name, kind = _classify(label)
            slot = collector.slot(name, kind, device=True)
            pair = appenders[label] = (slot.starts.append, slot.ends.append)
        try:
            pair[0](start)
            pair[1](start + duration)
        except OverflowError:
            raise off_the_clock(FORMAT, rows.line, start, start + duration) from None
        count += 1
    if count == 0:
        raise ProfileError("the header is there but no rows follow", format_expected=FORMAT, line=rows.line)
    collector.formats.append(FORMAT)
    collector.note("Device time is the union over all devices and streams: concurrent work counts once.")


def _classify(label: str) -> tuple[str, Kind]:
    stripped = label.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        return device_op(stripped)
    return label, kernel_kind(label)
