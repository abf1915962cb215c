"""The columnar reader of rocprofv3 kernel traces against a textbook union and the streaming reader.

`fast_kernel_trace` packs each row's kernel and time into one 62-bit key to sort every kernel's starts and ends
in one pass; these tests generate traces whose timestamps reach both ends of that range, whose kernel codes are
neither dense nor zero-based, and whose spans force the grouped fallback, and require the exact figures.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from worthit.rules.profiles.collect import Collector
from worthit.rules.profiles.model import Breakdown
from worthit.rules.profiles.rocprof_trace import (
    KERNEL_TRACE,
    _grouped_unions,
    _kernel_unions,
    collect,
    fast_kernel_trace,
    read_kernel_trace,
)

from .test_profiles_rocprof import CURRENT_HEADER, simple_union

LIMIT = 1 << 62
NAMES = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
    "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
    'Cijk_Alik_Bljk_SB_MT64x16x32 "quoted"',
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "rccl_ReduceScatter_kernel",
    "subtract_kernel(float*, float const*, float const*, int, int)",
    "k",
)

Row = tuple[str, int, int]


def trace(rows: list[Row]) -> bytes:
    """A kernel_trace.csv under the current header, kernel names quoted as rocprofv3 writes them."""
    out = io.StringIO()
    out.write(CURRENT_HEADER + "\n")
    writer = csv.writer(out, lineterminator="\n")
    for i, (name, start, end) in enumerate(rows):
        identity = ["KERNEL_DISPATCH", 1, i % 4, i % 2, 69, i + 1, 16]
        writer.writerow([*identity, name, i, start, end, 0, 0, 8, 0, 16, 64, 1, 1, 1024, 1, 1])
    return out.getvalue().encode()


def exact(data: bytes) -> Breakdown:
    """The streaming reader's breakdown, the one `combine` uses."""
    collector = Collector()
    collect(data, KERNEL_TRACE, collector)
    return collector.finish(KERNEL_TRACE)


def per_name(rows: list[Row]) -> dict[str, tuple[int, int]]:
    """Each kernel's union and calls, computed by the textbook merge."""
    grouped: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for name, start, end in rows:
        grouped[name].append((start, end))
    return {name: (simple_union(pairs), len(pairs)) for name, pairs in grouped.items()}


# Times that reach both ends of the packed range: near 0, near 2**62 and (for the grouped fallback) spans of
# 2**61 and more, with durations from zero to hours.
starts = st.one_of(
    st.integers(0, 10_000),
    st.integers(8_819_330_200_067_564, 8_819_330_200_067_564 + 10**9),
    st.integers(0, LIMIT - 2**40),
    st.just(LIMIT - 2**33),
)
durations = st.one_of(st.integers(0, 5_000), st.integers(0, 2**32), st.just(0))
rows_strategy = st.lists(
    st.tuples(st.sampled_from(NAMES), starts, durations).map(lambda r: (r[0], r[1], r[1] + r[2])),
    min_size=1,
    max_size=60,
)


@given(rows_strategy, st.lists(st.sampled_from(NAMES) | st.text(min_size=1, max_size=8), max_size=20))
def test_columnar_reader_equals_the_textbook_union_and_the_streaming_reader(
    rows: list[Row], other_names: list[str]
) -> None:
    """Busy time, every kernel's union and calls, and the whole breakdown equal the exact figures.

    `other_names` live in another categorical while the trace is read, as a concurrent read's would: the
    trace's kernel codes are then shared, not dense and not zero-based.
    """
    keepalive = pl.Series(other_names, dtype=pl.Categorical)
    data = trace(rows)
    fast = fast_kernel_trace(data)
    in_range = max(end for _, _, end in rows) < LIMIT
    assert (fast is not None) == in_range
    b = read_kernel_trace(data)
    assert b.device_busy_ns == simple_union([(s, e) for _, s, e in rows])
    assert {p.name: (p.total_ns, p.calls) for p in b.phases} == per_name(rows)
    assert b == exact(data)
    comm = [(s, e) for name, s, e in rows if name.startswith(("nccl", "rccl"))]
    assert b.activity is not None
    assert b.activity.comm_ns == simple_union(comm)
    assert b.activity.compute_ns == simple_union(
        [(s, e) for name, s, e in rows if not name.startswith(("nccl", "rccl"))]
    )
    assert len(keepalive) == len(other_names)


def frame_of(rows: list[Row]) -> pl.DataFrame:
    return pl.DataFrame(
        {"name": [r[0] for r in rows], "s": [r[1] for r in rows], "e": [r[2] for r in rows]},
        schema={"name": pl.Categorical, "s": pl.Int64, "e": pl.Int64},
    )


def unions(frame: pl.DataFrame) -> dict[str, tuple[int, int]]:
    return {name: (total, calls) for name, total, calls in _kernel_unions(frame).iter_rows()}


def test_packed_and_grouped_unions_agree_where_the_keys_fit() -> None:
    """Three kernels over a 2**58 ns span: the packed keys fit (2 + 58 bits), and give the grouped figures."""
    rows = [("a", 0, 10), ("b", 5, 2**58), ("a", 8, 30), ("c", 2**57, 2**57 + 1), ("a", 40, 41)]
    frame = frame_of(rows)
    grouped = {name: (total, calls) for name, total, calls in _grouped_unions(frame).iter_rows()}
    assert unions(frame) == grouped == {"a": (31, 3), "b": (2**58 - 5, 1), "c": (1, 1)}


def test_a_span_too_long_to_pack_is_grouped_instead() -> None:
    """A 2**61 ns span with three kernels needs 63 bits packed: the grouped union gives the figures."""
    rows = [("a", 0, 2**61), ("b", 1, 2), ("c", 2**61 - 7, 2**61), ("a", 3, 4)]
    assert unions(frame_of(rows)) == {"a": (2**61, 2), "b": (1, 1), "c": (7, 1)}


def test_timestamps_beyond_two_to_the_62_go_to_the_exact_reader() -> None:
    """Int64 timestamps near 2**63 parse, but their differences could overflow: the exact reader takes them."""
    top = 2**63 - 1
    rows = [("a", 0, 5), ("a", top - 10, top), ("b", top - 20, top - 15)]
    data = trace(rows)
    assert fast_kernel_trace(data) is None
    b = read_kernel_trace(data)
    assert b.device_busy_ns == 20
    assert b.wall_ns == top
    assert {p.name: p.total_ns for p in b.phases} == {"a": 15, "b": 5}


@pytest.mark.parametrize("cut", [-3, -30])
def test_a_short_last_row_is_left_to_the_exact_reader(cut: int) -> None:
    """A file cut mid-row: the columnar reader declines, so the streaming reader names the line."""
    data = trace([("a", 0, 5), ("b", 3, 9)])
    truncated = data[: len(data) - 1 + cut] + b"\n"
    assert fast_kernel_trace(truncated) is None
