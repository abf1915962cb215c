"""Format detection from content, and one entry point that reads any supported file.

Detection looks only at the start of the file (the first 64 KB, after inflating gzip): a JSON object or
array → PyTorch trace; a ``ROCPROFV3 … SUMMARY`` banner → rocprofv3 summary; otherwise the first CSV
header among the first lines decides. Names in `FORMATS` can be passed to force a format.
"""

from __future__ import annotations

import csv
import io
import zlib
from collections.abc import Callable, Sequence

from worthit.rules.profiles import kineto, nsys_stats, nsys_trace, rocprof_stats, rocprof_summary, rocprof_trace
from worthit.rules.profiles._text import MAX_PREAMBLE_LINES, check_bytes, head_text, norm
from worthit.rules.profiles.collect import Collector
from worthit.rules.profiles.compression import gunzip, is_gzip
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto import StepRange, summary
from worthit.rules.profiles.model import Breakdown

Reader = Callable[[bytes], Breakdown]

#: Every format name `read_any` accepts, with its reader. Names are stable: the API and CLI expose them.
READERS: dict[str, Reader] = {
    rocprof_trace.KERNEL_TRACE: rocprof_trace.read_kernel_trace,
    rocprof_trace.MEMORY_COPY_TRACE: rocprof_trace.read_memory_copy_trace,
    rocprof_trace.API_TRACE: rocprof_trace.read_api_trace,
    rocprof_stats.FORMAT: rocprof_stats.read,
    rocprof_summary.FORMAT: rocprof_summary.read,
    nsys_stats.KERN_SUM: nsys_stats.read_kern_sum,
    nsys_stats.MEM_TIME_SUM: nsys_stats.read_mem_time_sum,
    nsys_stats.API_SUM: nsys_stats.read_api_sum,
    nsys_trace.FORMAT: nsys_trace.read,
    kineto.FORMAT: kineto.read,
    summary.SUMMARY_FORMAT: lambda data: summary.combine_summaries([summary.decode_summary(data)]),
}
FORMATS: tuple[str, ...] = tuple(READERS)

_EXPECTED = (
    "a rocprofv3 kernel/memory-copy/API trace or *_stats.csv, a rocprofv3 --summary table, an nsys stats CSV "
    "(cuda_gpu_kern_sum, cuda_gpu_mem_time_sum, cuda_api_sum, cuda_gpu_trace), a PyTorch profiler trace JSON or a "
    "worthit rank summary"
)


def detect(data: bytes) -> str:
    """The name of the format of `data` (one of `FORMATS`); ProfileError when none matches."""
    if is_gzip(data):
        # Inflating only a prefix is enough to sniff and keeps detection cheap on big uploads.
        data = _gunzip_head(data)
    check_bytes(data, None)
    if summary.looks_like_summary(data):
        return summary.SUMMARY_FORMAT
    if kineto.looks_like(data):
        return kineto.FORMAT
    if rocprof_summary.looks_like(data):
        return rocprof_summary.FORMAT
    first: str | None = None
    text = head_text(data)
    lines = text.splitlines()[:MAX_PREAMBLE_LINES]
    for row in csv.reader(io.StringIO("\n".join(lines))):
        if not any(cell.strip() for cell in row):
            continue
        names = [norm(cell) for cell in row]
        first = first or ",".join(row)[:120]
        found = _csv_format(names)
        if found is not None:
            return found
    raise ProfileError(f"unknown format; expected {_EXPECTED}; the file starts with {first!r}", line=1)


def read_any(data: bytes, format: str | None = None, steps: StepRange | None = None) -> Breakdown:
    """Read `data` in the given format, or in the detected one; gzip is inflated transparently.

    `steps` chooses a range of ``ProfilerStep#N`` of a PyTorch trace; other formats mark no steps.
    """
    if format is not None and format not in READERS:
        raise ProfileError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    fmt = format or detect(data)
    if fmt == kineto.FORMAT:
        return kineto.read(data, steps)
    if fmt == summary.SUMMARY_FORMAT:
        return summary.combine_summaries([summary.decode_summary(gunzip(data) if is_gzip(data) else data)], steps)
    _no_steps(fmt, steps)
    if is_gzip(data):
        data = gunzip(data, fmt)
    return READERS[fmt](data)


def _no_steps(fmt: str, steps: StepRange | None) -> None:
    if steps is not None:
        raise ProfileError(
            f"steps {steps} were asked for, but {fmt} marks no steps; expected a PyTorch trace with ProfilerStep#N",
            format_expected=fmt,
        )


def combine(
    files: Sequence[bytes],
    formats: Sequence[str | None] | None = None,
    names: Sequence[str] | None = None,
    steps: StepRange | None = None,
) -> Breakdown:
    """One breakdown of one run recorded in several files (kernel trace + copy trace + API stats, …).

    Traced intervals of all files are pooled, so `device_busy_ns` is the union over kernels *and* copies
    of every file and `wall_ns` spans them all. Summed tables (stats, summaries) add their phases as
    inclusive totals, with shares of that wall and no device share. PyTorch traces are the ranks of one distributed
    run (`kineto.read_run`). Traced files whose time ranges do not overlap are refused, naming the files
    (`names`, else their order) and their ranges: they are not one run.
    """
    if not files:
        raise ProfileError("no files given")
    forced = list(formats) if formats is not None else [None] * len(files)
    if len(forced) != len(files):
        raise ProfileError(f"got {len(files)} files but {len(forced)} formats")
    labels = list(names) if names is not None else [f"file {i + 1}" for i in range(len(files))]
    detected = [wanted or detect(data) for data, wanted in zip(files, forced, strict=True)]
    for fmt in detected:
        if fmt not in READERS:
            raise ProfileError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if all(fmt == kineto.FORMAT for fmt in detected):
        return kineto.read_run(list(zip(labels, files, strict=True)), steps)
    if all(fmt == summary.SUMMARY_FORMAT for fmt in detected):
        read = [summary.decode_summary(gunzip(d) if is_gzip(d) else d, n) for d, n in zip(files, labels, strict=True)]
        return summary.combine_summaries(read, steps)
    if summary.SUMMARY_FORMAT in detected:
        raise ProfileError(
            "expected either rank summaries or profiler files, got both: make a summary of each trace "
            "(worthit profile --summary) and combine the summaries",
            format_expected=summary.SUMMARY_FORMAT,
        )
    collector = Collector()
    fmts: list[str] = []
    ranges: list[tuple[str, int, int]] = []
    for data, fmt, label in zip(files, detected, labels, strict=True):
        if fmt != kineto.FORMAT:
            _no_steps(fmt, steps)
        if is_gzip(data) and fmt != kineto.FORMAT:
            data = gunzip(data, fmt)
        fmts.append(fmt)
        before = collector.bounds()
        trace = rocprof_trace.trace_format_of_name(fmt)
        if trace is not None:
            rocprof_trace.collect(data, trace, collector)
            ranges.append((label, *collector.bounds_since(before)))
        elif fmt == nsys_trace.FORMAT:
            nsys_trace.collect(data, collector)
            ranges.append((label, *collector.bounds_since(before)))
        else:
            part = READERS[fmt](data)
            if part.inclusive:
                collector.summed.extend(part.phases)
                collector.notes.extend(n for n in part.notes if n not in collector.notes)
            else:
                # A whole traced breakdown (PyTorch): its intervals are gone; join its phases as they are.
                raise ProfileError(
                    f"{fmt} cannot be combined with other files; read it on its own", format_expected=fmt
                )
    kineto.check_same_run(ranges)
    if ranges:  # a trace was given: the tables' advice to record one is moot
        collector.notes[:] = [n for n in collector.notes if n not in (rocprof_stats.RERUN, nsys_stats.RERUN)]
    result = collector.finish("+".join(fmts))
    if collector.summed and result.wall_ns is None:
        result.notes.append("No file had timestamps: there is no wall time to share against.")
    return result


def _csv_format(names: list[str]) -> str | None:
    trace = rocprof_trace.trace_format_of(names)
    if trace is not None:
        return trace
    if rocprof_stats.is_stats_header(names):
        return rocprof_stats.FORMAT
    if nsys_trace.is_trace_header(names):
        return nsys_trace.FORMAT
    return nsys_stats.sum_format_of(names)


def _gunzip_head(data: bytes, size: int = 1 << 16) -> bytes:
    inflater = zlib.decompressobj(wbits=31)
    try:
        return inflater.decompress(data, size)
    except zlib.error as exc:
        raise ProfileError(f"corrupt gzip stream ({exc})") from None


__all__ = ["FORMATS", "READERS", "combine", "detect", "gunzip", "read_any"]
