"""Detection from content, forcing a format, and the terminal table."""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Callable

import pytest

from worthit.rules.profiles import FORMATS, ProfileError, combine, detect, read_any, render_table
from worthit.rules.profiles.model import Breakdown, Phase

EXPECTED = {
    "nsys_cuda_gpu_kern_sum_trimmed.csv": "nsys_cuda_gpu_kern_sum",
    "rocprofv3_hip_api_stats.csv": "rocprofv3_stats",
    "rocprofv3_kernel_stats_jacobi.csv": "rocprofv3_stats",
    "rocprofv3_kernel_stats_pytorch_mpi.csv": "rocprofv3_stats",
    "rocprofv3_kernel_trace_v0.csv": "rocprofv3_kernel_trace",
    "rocprofv3_memory_copy_trace.csv": "rocprofv3_memory_copy_trace",
    "rocprofv3_summary_trimmed.txt": "rocprofv3_summary",
    "torch_trace_a100_simple_add.json.gz": "pytorch_trace",
    "torch_trace_mi250_kineto.json.gz": "pytorch_trace",
}


@pytest.mark.parametrize(("name", "fmt"), sorted(EXPECTED.items()))
def test_detect_every_fixture(fixture_bytes: Callable[[str], bytes], name: str, fmt: str) -> None:
    """Every shared sample is recognised from its content and reads under its detected and forced format."""
    data = fixture_bytes(name)
    assert detect(data) == fmt
    assert fmt in FORMATS
    assert read_any(data, fmt) == read_any(data)


def test_gzipped_csv(fixture_bytes: Callable[[str], bytes]) -> None:
    """A gzipped CSV is inflated transparently."""
    data = fixture_bytes("rocprofv3_kernel_trace_v0.csv")
    assert read_any(gzip.compress(data)) == read_any(data)


def test_combine_refuses_files_of_different_runs(fixture_bytes: Callable[[str], bytes]) -> None:
    """A kernel trace and a copy trace whose clocks do not overlap are not one run: refused, naming both ranges."""
    kernels = fixture_bytes("rocprofv3_kernel_trace_v0.csv")
    copies = fixture_bytes("rocprofv3_memory_copy_trace.csv")
    with pytest.raises(ProfileError) as err:
        combine([kernels, copies], names=["kernel_trace.csv", "memory_copy_trace.csv"])
    text = str(err.value)
    assert "do not overlap in time" in text
    # The ranges are the files' own first start and last end, read here from the CSV columns.
    for name, data in (("kernel_trace.csv", kernels), ("memory_copy_trace.csv", copies)):
        rows = list(csv.DictReader(io.StringIO(data.decode())))
        lo = min(int(r["Start_Timestamp"]) for r in rows)
        hi = max(int(r["End_Timestamp"]) for r in rows)
        assert f"{name}: {lo} to {hi} ns" in text


def phase(name: str, total: int) -> Phase:
    return Phase(name=name, kind="kernel", total_ns=total, calls=1, share_of_device=0.5, share_of_wall=0.25)


def test_render_largest_first_and_width() -> None:
    """Rows are largest first, no line exceeds the width, long names are cut with an ellipsis."""
    b = Breakdown(
        format="t",
        wall_ns=4_000_000,
        device_busy_ns=2_000_000,
        phases=[phase("small", 1_000), phase("x" * 300, 1_000_000), phase("mid", 500_000)],
        inclusive=False,
    )
    text = render_table(b, width=80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines if not line.startswith("note"))
    rows = [line for line in lines if line.rstrip().endswith("25.00%")]
    assert [r.split()[0][:5] for r in rows] == ["xxxxx", "mid", "small"]
    assert "…" in rows[0]
    assert "inclusive" not in text
    assert "50.00%" in rows[0]
    assert "1.000" in rows[0]


def test_render_marks_a_kernel_summary_for_its_denominator_not_as_inclusive() -> None:
    """A kernel summary's kernels do not nest; what is wrong with its shares is that they are of summed kernel time."""
    phases = [
        Phase(
            name=name, kind="kernel", total_ns=ns, calls=1, share_of_device=ns / 300, share_of_wall=None, inclusive=True
        )
        for name, ns in (("gemm", 200), ("softmax", 100))
    ]
    b = Breakdown(format="nsys_cuda_gpu_kern_sum", wall_ns=None, device_busy_ns=300, phases=phases, inclusive=True)
    text = render_table(b)
    assert "summed kernel time 0.000 ms" in text.splitlines()[1]
    assert "summed kernel time, not the step: shares leave out idle time, copies and host gaps" in text
    assert "inclusive" not in text
    assert "device busy" not in text


def test_render_marks_inclusive() -> None:
    """Summed tables carry the 'inclusive — do not sum' mark; unknown shares print as '-'."""
    b = Breakdown(
        format="s",
        wall_ns=None,
        device_busy_ns=None,
        phases=[
            Phase(
                name="hipMemcpy",
                kind="copy",
                total_ns=5,
                calls=2,
                share_of_device=None,
                share_of_wall=None,
                inclusive=True,
            )
        ],
        inclusive=True,
    )
    text = render_table(b)
    assert "inclusive — do not sum" in text
    row = next(line for line in text.splitlines() if line.startswith("hipMemcpy"))
    assert row.split()[-2:] == ["-", "-"]
