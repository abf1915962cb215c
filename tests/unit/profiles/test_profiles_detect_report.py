"""Detection from content, forcing a format, and the terminal table."""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from worthit.rules.profiles import FORMATS, ProfileError, combine, detect, read_any, render_table
from worthit.rules.profiles.model import Breakdown, Phase
from worthit.rules.profiles.report import headline

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
    assert text.splitlines()[0] == "the largest kernel, gemm: 0.000 ms (66.67% of device time): look here first"
    assert "summed kernel time 0.000 ms" in text.splitlines()[2]
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


SEED = Path(__file__).resolve().parents[2] / "data" / "profiles" / "seed_part2"
KERNEL_TRACE_HEADER = (
    '"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id",'
    '"Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count",'
    '"Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"'
)


def _kernel_trace(rows: list[tuple[str, int, int, int]]) -> bytes:
    """A rocprofv3 kernel trace: (name, queue, start ns, end ns) per dispatch."""
    lines = [KERNEL_TRACE_HEADER]
    for i, (name, queue, start, end) in enumerate(rows, 1):
        lines.append(
            f'"KERNEL_DISPATCH",1,{queue},{queue},7,{i},{i},"{name}",{i},{start},{end},0,0,8,0,16,64,1,1,64,1,1'
        )
    return ("\n".join(lines) + "\n").encode()


def test_a_trace_whose_kernels_run_at_once_says_its_rows_overlap() -> None:
    """Three kernels of 1 µs on three queues, two at once and one half over them: the device is busy 1.5 µs, each
    row is 1 µs of it (66.67%), and the rows add to 200%: the table says they overlap, by that much."""
    base = 1_732_000_000_000_000
    data = _kernel_trace(
        [("gemm", 1, base, base + 1000), ("softmax", 2, base, base + 1000), ("norm", 3, base + 500, base + 1500)]
    )
    b = read_any(data)
    assert b.device_busy_ns == 1500
    assert [p.share_of_device for p in b.phases] == [pytest.approx(1000 / 1500)] * 3
    text = render_table(b)
    assert "rows overlap: their % device adds to 200% " in text
    serial = read_any(_kernel_trace([("gemm", 1, base, base + 1000), ("softmax", 1, base + 1000, base + 1500)]))
    assert "rows overlap" not in render_table(serial)


def test_the_advice_to_record_a_trace_is_given_only_without_one() -> None:
    """A stats table alone: record a trace, with rocprofv3's own options (not worthit's); beside the traces it
    summarises, the advice is moot and left out."""
    stats = (SEED / "hip_api_stats.csv").read_bytes()
    alone = render_table(read_any(stats))
    assert "note: For the union of traced time, record with rocprofv3's own --kernel-trace and --memory-copy-trace" in (
        alone
    )
    with_traces = combine(
        [(SEED / name).read_bytes() for name in ("kernel_trace.csv", "memory_copy_trace.csv")] + [stats]
    )
    assert "--kernel-trace" not in render_table(with_traces)
    assert "rocprofv3's own" not in " ".join(with_traces.notes)


def test_the_headline_names_the_largest_finding() -> None:
    """Without a timeline, the largest phase and its share open the table; with no phase, nothing does."""
    phases = [
        Phase(
            name=n, kind="kernel", total_ns=t, calls=1, share_of_device=t / 300_000, share_of_wall=None, inclusive=True
        )
        for n, t in (("gemm", 200_000), ("softmax", 100_000))
    ]
    b = Breakdown(format="nsys_cuda_gpu_kern_sum", wall_ns=None, device_busy_ns=300_000, phases=phases, inclusive=True)
    assert headline(b) == "the largest kernel, gemm: 0.2 ms (66.67% of device time): look here first"
    assert headline(Breakdown(format="x", wall_ns=None, device_busy_ns=None, phases=[], inclusive=False)) is None
