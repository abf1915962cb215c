"""Nsight Systems `nsys stats` CSV readers: the real kern_sum sample and reports built here."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

import pytest

from worthit.rules.profiles import detect, find_phase, read_any

NEW_TRACE_HEADER = (
    "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),"
    "Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name"
)
OLD_TRACE_HEADER = (
    "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),"
    "Throughput (MBps),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name"
)
PREAMBLE = (
    "Generating SQLite file report1.sqlite from report1.nsys-rep\n"
    "Processing [report1.sqlite] with [/opt/nvidia/nsight-systems/host-linux-x64/reports/cuda_gpu_trace.py]... \n"
    "\n ** CUDA GPU Trace (cuda_gpu_trace):\n\n"
)
# start, duration, stream, name: two kernels overlap on streams 7 and 13; one copy overlaps a kernel.
EVENTS = [
    (1_000, 500, 7, "[CUDA memcpy Host-to-Device]"),
    (1_400, 1_000, 7, '"void gemm_kernel<float>(float*, int)"'),
    (1_900, 800, 13, '"void gemm_kernel<float>(float*, int)"'),
    (3_000, 100, 7, "[CUDA memset]"),
    (3_500, 250, 7, "[CUDA memcpy Device-to-Host]"),
]


def trace_csv(header: str, preamble: str = "") -> bytes:
    width = header.count(",") + 1
    lines = [header]
    for start, dur, stream, name in EVENTS:
        cells = [str(start), str(dur)] + ["1"] * (width - 5) + ["0", str(stream), name]
        lines.append(",".join(cells))
    return (preamble + "\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("header", [NEW_TRACE_HEADER, OLD_TRACE_HEADER])
@pytest.mark.parametrize("preamble", ["", PREAMBLE])
def test_gpu_trace_unions(header: str, preamble: str) -> None:
    """cuda_gpu_trace: kernels merged across streams; copies by direction; memset is device work."""
    data = trace_csv(header, preamble)
    assert detect(data) == "nsys_cuda_gpu_trace"
    b = read_any(data)
    gemm = find_phase(b, "gemm_kernel")
    assert (gemm.total_ns, gemm.calls) == (2_700 - 1_400, 2)  # [1400,2400] ∪ [1900,2700]
    assert find_phase(b, "H2D copy").total_ns == 500
    assert find_phase(b, "D2H copy").total_ns == 250
    assert find_phase(b, "memset").kind == "other"
    # Union of all device work: [1000,2700] + [3000,3100] + [3500,3750]
    assert b.device_busy_ns == 1_700 + 100 + 250
    assert b.wall_ns == 3_750 - 1_000
    assert not b.inclusive


def test_kern_sum_fixture(fixture_bytes: Callable[[str], bytes]) -> None:
    """cuda_gpu_kern_sum: totals and instances as printed, inclusive, Time (%) = share of summed time."""
    data = fixture_bytes("nsys_cuda_gpu_kern_sum_trimmed.csv")
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    b = read_any(data)
    assert b.format == "nsys_cuda_gpu_kern_sum"
    assert b.inclusive
    assert len(b.phases) == len(rows)
    summed = sum(int(r["Total Time (ns)"]) for r in rows)
    for r in rows:
        phase = find_phase(b, r["Name"])
        assert phase.total_ns == int(r["Total Time (ns)"])
        assert phase.calls == int(r["Instances"])
        assert phase.share_of_sum == pytest.approx(int(r["Total Time (ns)"]) / summed)
    assert b.phases[0].name.startswith("std::enable_if<!T7, void>::type internal::gemvx::kernel")


def test_mem_time_sum_and_api_sum() -> None:
    """cuda_gpu_mem_time_sum → copy/memset phases; cuda_api_sum → alloc/copy/api by call name."""
    mem = (
        PREAMBLE + "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation\n"
        '80.0,8000,4,2000.0,2000.0,1000,3000,10.0,"[CUDA memcpy Host-to-Device]"\n'
        '15.0,1500,2,750.0,750.0,700,800,1.0,"[CUDA memcpy Device-to-Host]"\n'
        '5.0,500,5,100.0,100.0,90,110,1.0,"[CUDA memset]"\n'
    ).encode()
    b = read_any(mem)
    assert b.format == "nsys_cuda_gpu_mem_time_sum"
    assert [(p.name, p.kind, p.total_ns, p.calls) for p in b.phases] == [
        ("H2D copy", "copy", 8000, 4),
        ("D2H copy", "copy", 1500, 2),
        ("memset", "other", 500, 5),
    ]
    api = (
        b"Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        b"50.3,1709124966,195,8764743.4,2450.0,2450,1707272594,1.0,cudaMalloc\n"
        b"23.0,780254116,6,130042352.7,330.0,330,598464963,1.0,cudaFree\n"
        b"20.0,680000000,40,17000000.0,1.0,1,2,1.0,cudaMemcpy\n"
        b"6.7,227000000,900,252222.2,1.0,1,2,1.0,cudaLaunchKernel\n"
    )
    b = read_any(api)
    assert b.format == "nsys_cuda_api_sum"
    assert {p.name: p.kind for p in b.phases} == {
        "cudaMalloc": "alloc",
        "cudaFree": "alloc",
        "cudaMemcpy": "copy",
        "cudaLaunchKernel": "api",
    }
    assert b.device_busy_ns is None
    assert b.inclusive
