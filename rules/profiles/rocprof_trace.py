"""rocprofv3 traces: kernel_trace.csv, memory_copy_trace.csv, hip_api_trace.csv (one row per interval).

Three generations of the kernel trace header are accepted, matched by column name: the older one
without ``Stream_Id``, the current one with it, and ROCm 7's database-to-CSV export with a leading
``Guid`` column. Timestamps are nanoseconds. Rows are streamed; only two integers per row are kept.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Literal

from worthit.rules.phase_names import kernel_kind
from worthit.rules.profiles._text import CsvRows, check_bytes, find_column, norm, off_the_clock, row_error
from worthit.rules.profiles.budget import held_events, held_names
from worthit.rules.profiles.collect import Collector
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.model import Activity, Breakdown, Kind, timed_breakdown
from worthit.rules.profiles.naming import api_kind, copy_name

if TYPE_CHECKING:
    import polars as pl

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
    """Read a rocprofv3 ``kernel_trace.csv``: one phase per kernel name, unions across queues and streams.

    A well-formed file is read by the columnar reader (`fast_kernel_trace`); anything it cannot take as it is
    goes through the streaming reader, which names the line and column at fault.
    """
    check_bytes(data, KERNEL_TRACE)
    fast = fast_kernel_trace(data)
    if fast is not None:
        return fast
    exact = _read_one(data, KERNEL_TRACE)
    if not columnar():
        exact.notes.append(NO_COLUMNAR_NOTE)
    return exact


NO_COLUMNAR_NOTE = (
    "Read by the exact (streaming) reader: the columnar one reads large kernel traces several times faster "
    "with the profiles extra: pip install 'worthit[profiles]'."
)


def columnar() -> bool:
    """Whether polars, the columnar engine of the profiles extra (`worthit[profiles]`), is installed."""
    try:
        import polars  # noqa: F401
    except ModuleNotFoundError:
        return False
    return True


def fast_kernel_trace(data: bytes) -> Breakdown | None:
    """The kernel trace read by polars' multithreaded CSV reader, or None when the file needs the exact reader.

    Only the kernel name (a categorical), start and end are kept, and the last column is read only to see that
    no row is short. The unions are computed on sorted starts and sorted ends (see `intervals`): per kernel in
    one sort of packed keys (`_kernel_unions`), over the whole trace in one more. A million rows in a quarter of
    a second, in less memory than the pandas script a performance engineer would write (`make bench`). The
    figures equal the streaming reader's.
    """
    # Here, not at the top: importing it costs every parse's worker a third of a second.
    try:
        import polars as pl
    except ModuleNotFoundError:  # the profiles extra is not installed: the exact reader reads every file too
        return None
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    first_line = body[: body.find(b"\n")] if b"\n" in body else body
    try:
        raw = next(csv.reader([first_line.decode("utf-8")]))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        return None
    names = [norm(c) for c in raw]
    if trace_format_of(names) != KERNEL_TRACE or len(set(names)) != len(names):
        return None
    name_col, start_col, end_col = (raw[names.index(c)] for c in ("kernel_name", "start_timestamp", "end_timestamp"))
    # The last column as a categorical: a handful of distinct values, 4 bytes a row (as text it would be 16).
    schema: dict[str, pl.DataType | type[pl.DataType]] = {raw[-1]: pl.Categorical}
    schema.update({name_col: pl.Categorical, start_col: pl.Int64, end_col: pl.Int64})
    try:
        frame = pl.read_csv(body, columns=list(schema), schema_overrides=schema, infer_schema=False)
    except Exception:
        return None
    rows = frame.height
    # A short (truncated) row leaves nulls in the last column; the exact reader then names its line.
    if not rows or any(frame.null_count().row(0)):
        return None
    start, end = pl.col(start_col), pl.col(end_col)
    # Timestamps in [0, 2**62): no difference of two can overflow 64 bits. Anything else is the exact reader's.
    if frame.select((end < start).any() | (start.min() < 0) | (end.max() >= _LIMIT)).item():
        return None
    # Counted before anything is built per name: polars holds a name in a few bytes, a phase costs hundreds.
    held_events(rows, KERNEL_TRACE)
    held_names(frame[name_col].n_unique(), KERNEL_TRACE)
    # The names stay categorical (one small dictionary) throughout: cast to strings they cost more than the file.
    frame = frame.select(pl.col(name_col).alias("name"), start.alias("s"), end.alias("e"))
    per_kernel = _kernel_unions(frame)
    kinds = {n: kernel_kind(n) for n in per_kernel["name"].to_list()}
    busy = _covered(frame["s"], frame["e"])
    comm_names = [n for n, k in kinds.items() if k == "comm"]
    if comm_names:
        is_comm = pl.col("name").cast(pl.String).is_in(comm_names)  # rare: collectives in a kernel trace
        compute_rows, comm_rows = frame.filter(~is_comm), frame.filter(is_comm)
        compute = _covered(compute_rows["s"], compute_rows["e"])
        comm = _covered(comm_rows["s"], comm_rows["e"])
        overlap = compute + comm - busy
    else:
        compute, comm, overlap = busy, 0, 0
    lo, hi = int(frame["s"].min()), int(frame["e"].max())  # type: ignore[arg-type]
    wall = hi - lo
    measured = [
        (n, kinds[n], int(total), int(calls), True)
        for n, total, calls in per_kernel.select("name", "total", "calls").iter_rows()
    ]
    notes = []
    if "agent_id" in names:
        notes.append("Device time is the union over all agents, queues and streams: concurrent work counts once.")
    return timed_breakdown(
        KERNEL_TRACE,
        measured,
        wall=wall,
        notes=notes,
        activity=Activity(
            span_ns=wall,
            busy_ns=busy,
            compute_ns=compute,
            comm_ns=comm,
            overlap_ns=overlap,
            copy_ns=0,
            idle_ns=wall - busy,
            kernels=rows,
        ),
    )


# Timestamps and packed keys stay below 2**62 (non-negative int64s), so the difference of any two fits.
_PACKED_BITS: Final = 62
_LIMIT: Final = 1 << _PACKED_BITS


def _kernel_unions(frame: pl.DataFrame) -> pl.DataFrame:
    """Per kernel name of `frame` (name, s, e): ``name`` (str), ``total`` (the union of its intervals), ``calls``.

    Each row's key packs its kernel (the categorical's code, rebased) above its time (rebased to the first
    start), so one sort of the start keys and one of the end keys give every kernel's sorted starts and sorted
    ends side by side in the same rows: a kernel's union is then its span less the gaps between its k-th end
    and (k+1)-th start, summed by a streaming group-by without gathering any group. Where the keys would not fit
    in 62 bits (a span of days times thousands of kernels), each kernel's intervals are grouped instead, which
    takes about twice the memory.
    """
    import polars as pl

    physical = pl.col("name").to_physical()
    bounds = frame.lazy().select(lo=pl.col("s").min(), hi=pl.col("e").max(), first=physical.min(), last=physical.max())
    lo, hi, first_code, last_code = bounds.collect(engine="streaming").row(0)
    code = physical.cast(pl.Int64)
    shift = (hi - lo).bit_length()
    if (last_code - first_code).bit_length() + shift > _PACKED_BITS:
        return _grouped_unions(frame)
    unit = 1 << shift

    def packed(times: str) -> pl.Series:
        keys = frame.lazy().select(k=(code - first_code) * unit + (pl.col(times) - lo)).collect(engine="streaming")
        return keys.to_series().sort(in_place=True)

    starts, ends = packed("s"), packed("e")
    kernel = pl.col("s") // unit
    spans = (
        pl.DataFrame({"s": starts, "e": ends})
        .lazy()
        .group_by(code=kernel)
        .agg(span=pl.col("e").max() - pl.col("s").min(), calls=pl.len())
    )
    # Row k's end against row k+1's start: a gap inside a kernel when both rows are that kernel's.
    pairs = pl.DataFrame({"s": starts.slice(1), "e": ends.slice(0, len(ends) - 1)}).lazy()
    gaps = pairs.filter(kernel == pl.col("e") // unit).group_by(code=kernel).agg(gaps=_gap().sum())
    names = frame.lazy().select(pl.col("name").unique()).select(code=code - first_code, name=pl.col("name"))
    return (
        spans.join(gaps, on="code", how="left")
        .join(names, on="code")
        .select(pl.col("name").cast(pl.String), total=pl.col("span") - pl.col("gaps").fill_null(0), calls="calls")
        .collect(engine="streaming")
    )


def _grouped_unions(frame: pl.DataFrame) -> pl.DataFrame:
    """`_kernel_unions` by grouping each kernel's intervals and sorting its starts and ends apart."""
    import polars as pl

    starts, ends = pl.col("s").sort(), pl.col("e").sort()
    total = ends.max() - starts.min() - (starts.shift(-1) - ends).clip(lower_bound=0).sum()
    return (
        frame.group_by("name").agg(total=total, calls=pl.len()).select(pl.col("name").cast(pl.String), "total", "calls")
    )


def _covered(starts: pl.Series, ends: pl.Series) -> int:
    """Covered length of the intervals (starts[i], ends[i]): span less the gaps between the k-th end and the
    (k+1)-th start once both are sorted."""
    import polars as pl

    if starts.is_empty():
        return 0
    starts, ends = starts.sort(), ends.sort()
    pairs = pl.DataFrame({"s": starts.slice(1), "e": ends.slice(0, len(ends) - 1)}).lazy()
    gaps = pairs.select(_gap().sum()).collect(engine="streaming").item()
    return int(ends[-1] - starts[0] - (gaps or 0))


def _gap() -> pl.Expr:
    """The idle time between an end (``e``) and the next start (``s``) in sorted order: none if they overlap."""
    import polars as pl

    return (pl.col("s") - pl.col("e")).clip(lower_bound=0)


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
        try:
            pair[0](start)
            pair[1](end)
        except OverflowError:
            raise off_the_clock(fmt, rows.line, start, end) from None
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
