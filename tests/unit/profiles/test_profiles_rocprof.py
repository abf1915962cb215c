"""rocprofv3 readers on the real samples, with figures recomputed independently in the tests."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from worthit.rules.profiles import combine, detect, find_phase, read_any
from worthit.rules.profiles.rocprof_trace import read_kernel_trace

KERNEL_TRACE = "rocprofv3_kernel_trace_v0.csv"
CURRENT_HEADER = (
    '"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id",'
    '"Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count",'
    '"Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"'
)


def rows_of(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode())))


def simple_union(pairs: list[tuple[int, int]]) -> int:
    """Textbook merge: sort by start, extend the current run while intervals overlap."""
    total = 0
    run: list[int] | None = None
    for start, end in sorted(pairs):
        if run is not None and start <= run[1]:
            run[1] = max(run[1], end)
            continue
        if run is not None:
            total += run[1] - run[0]
        run = [start, end]
    if run is not None:
        total += run[1] - run[0]
    return total


def test_kernel_trace_union_across_queues(fixture_bytes: Callable[[str], bytes]) -> None:
    """Busy time is the union over the four queues, less than the summed kernel time."""
    data = fixture_bytes(KERNEL_TRACE)
    rows = rows_of(data)
    pairs = [(int(r["Start_Timestamp"]), int(r["End_Timestamp"])) for r in rows]
    summed = sum(e - s for s, e in pairs)
    busy = simple_union(pairs)
    per_queue: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r, pair in zip(rows, pairs, strict=True):
        per_queue[r["Queue_Id"]].append(pair)

    b = read_kernel_trace(data)

    assert b.device_busy_ns == busy
    assert busy < summed  # the queues run concurrently: summing would double count
    assert len(per_queue) == 4
    assert b.wall_ns == max(e for _, e in pairs) - min(s for s, _ in pairs)
    assert b.inclusive is False
    assert sum(p.calls for p in b.phases) == len(rows)
    for name in {r["Kernel_Name"] for r in rows}:
        own = [pair for r, pair in zip(rows, pairs, strict=True) if r["Kernel_Name"] == name]
        phase = find_phase(b, name)
        assert phase.total_ns == simple_union(own)
        assert phase.share_of_device == pytest.approx(simple_union(own) / busy)
        assert phase.kind == "kernel"


def test_kernel_trace_current_and_rocm7_headers(fixture_bytes: Callable[[str], bytes]) -> None:
    """The same rows under the current header (Stream_Id) and ROCm 7's (leading Guid) give the same figures."""
    old = rows_of(fixture_bytes(KERNEL_TRACE))
    current = [CURRENT_HEADER]
    rocm7 = ['"Guid",' + CURRENT_HEADER]
    cols = CURRENT_HEADER.replace('"', "").split(",")
    for i, r in enumerate(old):
        r = {
            **r,
            "Stream_Id": str(i % 2),
            "LDS_Block_Size": "0",
            "Scratch_Size": "0",
            "VGPR_Count": "8",
            "Accum_VGPR_Count": "0",
            "SGPR_Count": "16",
        }
        line = ",".join(f'"{r[c]}"' if c in ("Kind", "Kernel_Name") else r[c] for c in cols)
        current.append(line)
        rocm7.append(f'"b1946ac9-2c7e-4c1e-9c4d-{i:012d}",' + line)
    reference = read_kernel_trace(fixture_bytes(KERNEL_TRACE))
    for text in (current, rocm7):
        data = ("\n".join(text) + "\n").encode()
        assert detect(data) == "rocprofv3_kernel_trace"
        b = read_any(data)
        assert b.device_busy_ns == reference.device_busy_ns
        assert [(p.name, p.total_ns, p.calls) for p in b.phases] == [
            (p.name, p.total_ns, p.calls) for p in reference.phases
        ]


def test_memory_copy_trace(fixture_bytes: Callable[[str], bytes]) -> None:
    """Copies are named by direction, kind copy; the two copies do not overlap, so busy = sum."""
    data = fixture_bytes("rocprofv3_memory_copy_trace.csv")
    rows = rows_of(data)
    b = read_any(data)
    assert b.format == "rocprofv3_memory_copy_trace"
    by_name = {p.name: p for p in b.phases}
    assert set(by_name) == {"H2D copy", "D2H copy"}
    h2d = next(r for r in rows if r["Direction"].endswith("HOST_TO_DEVICE"))
    assert by_name["H2D copy"].total_ns == int(h2d["End_Timestamp"]) - int(h2d["Start_Timestamp"])
    assert all(p.kind == "copy" for p in b.phases)
    assert b.device_busy_ns == sum(int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for r in rows)


@pytest.mark.parametrize(
    ("name", "fmt", "kind"),
    [
        ("rocprofv3_kernel_stats_jacobi.csv", "rocprofv3_kernel_stats", "kernel"),
        ("rocprofv3_kernel_stats_pytorch_mpi.csv", "rocprofv3_kernel_stats", "kernel"),
        ("rocprofv3_hip_api_stats.csv", "rocprofv3_api_stats", None),
    ],
)
def test_stats_keep_totals_and_are_inclusive(
    fixture_bytes: Callable[[str], bytes], name: str, fmt: str, kind: str | None
) -> None:
    """Stats tables: totals and calls as printed, marked inclusive, shares of summed time = Percentage."""
    data = fixture_bytes(name)
    rows = rows_of(data)
    b = read_any(data)
    assert b.format == fmt
    assert b.inclusive is True
    assert b.wall_ns is None
    summed = sum(int(r["TotalDurationNs"]) for r in rows)
    for r in rows:
        phase = find_phase(b, r["Name"])
        assert phase.total_ns == int(r["TotalDurationNs"])
        assert phase.calls == int(r["Calls"])
        assert phase.inclusive
        assert phase.share_of_sum == pytest.approx(int(r["TotalDurationNs"]) / summed)
        if kind:
            # RCCL's kernel (rccl_main_kernel) is communication, apart from compute.
            assert phase.kind == ("comm" if "rccl" in r["Name"].lower() else kind)
    if "jacobi" in name:
        # The jacobi table is complete, so our share of summed time is the profiler's own Percentage.
        for r in rows:
            assert find_phase(b, r["Name"]).share_of_sum == pytest.approx(float(r["Percentage"]) / 100, abs=6e-5)


def test_hip_api_stats_kinds(fixture_bytes: Callable[[str], bytes]) -> None:
    """HIP API: malloc/free calls → alloc, memcpy → copy, everything else → api."""
    b = read_any(fixture_bytes("rocprofv3_hip_api_stats.csv"))
    kinds = {p.name: p.kind for p in b.phases}
    assert kinds["hipFree"] == kinds["hipHostMalloc"] == kinds["hipMallocAsync"] == kinds["hipHostFree"] == "alloc"
    assert kinds["hipMemcpyAsync"] == "copy"
    assert kinds["hipStreamCreateWithFlags"] == kinds["hipLaunchKernel"] == "api"
    assert b.device_busy_ns is None


def test_mpi_kernel_stats_barrier_kernel(fixture_bytes: Callable[[str], bytes]) -> None:
    """The MPI table's rccl_main_kernel dominates summed kernel time (mostly barrier waiting)."""
    b = read_any(fixture_bytes("rocprofv3_kernel_stats_pytorch_mpi.csv"))
    top = b.phases[0]
    assert top.name.startswith("rccl_main_kernel")
    assert top.total_ns == 916_515_855


def test_summary_is_inclusive(fixture_bytes: Callable[[str], bytes]) -> None:
    """The --summary table: every row of every domain section, inclusive, kernel rows match the file."""
    data = fixture_bytes("rocprofv3_summary_trimmed.txt")
    b = read_any(data)
    assert b.format == "rocprofv3_summary"
    assert b.inclusive is True
    assert any("inclusive" in n for n in b.notes)
    table_rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in data.decode().splitlines()
        if line.startswith("|") and not line.startswith("|-") and "NAME" not in line
    ]
    assert len(b.phases) == len(table_rows)
    summed = sum(int(r[3]) for r in table_rows)
    kernels = {r[0]: int(r[3]) for r in table_rows if r[1] == "KERNEL_DISPATCH"}
    for name, total in kernels.items():
        phase = find_phase(b, name)
        assert (phase.kind, phase.total_ns) == ("kernel", total)
        assert phase.share_of_sum == pytest.approx(total / summed)
    kernel_sum = sum(kernels.values())
    pct = {r[0]: float(r[5]) for r in table_rows if r[1] == "KERNEL_DISPATCH"}
    for name, total in kernels.items():
        assert total / kernel_sum == pytest.approx(pct[name] / 100, abs=1e-6)  # the file's own PERCENT (INC)
    assert find_phase(b, "H2D copy").total_ns == 3_691_929
    assert find_phase(b, "MEMORY_ALLOCATION_ALLOCATE").kind == "alloc"


def test_seed_part2_files_are_current(seed_part2: ModuleType, data_dir: Path) -> None:
    """The committed seed_part2/ files are what make_seed_part2.build() writes."""
    for name, data in seed_part2.build().items():
        assert (data_dir / "seed_part2" / name).read_bytes() == data


def test_seed_part2_p_of_device_and_of_run(seed_part2: ModuleType) -> None:
    """Seed Part 2: the 44,242 ns kernel is 1.2267 % of 3,606,501 ns of device activity and 0.014 % of the run."""
    files = seed_part2.build()
    b = combine([files["kernel_trace.csv"], files["memory_copy_trace.csv"], files["hip_api_stats.csv"]])
    kernel = find_phase(b, "vector_add")
    assert kernel.total_ns == 44_242
    assert b.device_busy_ns == 3_606_501
    assert kernel.share_of_device is not None
    assert kernel.share_of_wall is not None
    assert kernel.share_of_device == pytest.approx(44_242 / 3_606_501)
    assert round(kernel.share_of_device * 100, 1) == 1.2
    assert b.wall_ns == 316_000_000
    assert round(kernel.share_of_wall * 100, 3) == 0.014
    assert not kernel.inclusive
    assert not b.inclusive
    # Allocation and host↔device copy, from the API side: hipMemcpy 62.6 % + hipMalloc 22.0 % ≈ 85 %.
    alloc_copy = sum(p.share_of_wall or 0 for p in b.phases if p.inclusive and p.kind in ("alloc", "copy"))
    assert alloc_copy == pytest.approx(0.846)
    assert find_phase(b, "hipMalloc").kind == "alloc"
    assert find_phase(b, "hipMemcpy").kind == "copy"
    device_copies = sum(p.total_ns for p in b.phases if p.kind == "copy" and not p.inclusive)
    assert device_copies == 3_606_501 - 44_242


def test_a_stats_table_listing_a_kernel_twice_or_unnamed_still_makes_a_proposal() -> None:
    """Three rows named alike (concatenated tables) and a row with no name: the proposal's breakdown names stay
    unique ("k (kernel)", "k (kernel 2)", "(unnamed)") instead of failing with "Expected unique phase names"."""
    from worthit.rules.engine import evaluate
    from worthit.rules.model import Proposal
    from worthit.rules.policy import default_policy
    from worthit.rules.profiles.proposal import proposal_from_profile

    data = (
        b'"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n'
        b'"k(float*)",10,600,60,50.0,50,70,1\n'
        b'"k(float*)",10,300,30,25.0,20,40,1\n'
        b'"k(float*)",10,100,30,25.0,20,40,1\n'
        b'"",10,300,30,25.0,20,40,1\n'
    )
    b = read_any(data)
    proposal = proposal_from_profile(Proposal(target="(unnamed)", k=2, cost_weeks=1, profile_id="t"), b)
    names = [phase.name for phase in proposal.breakdown or []]
    assert sorted(names) == ["(unnamed)", "k(float*)", "k(float*) (kernel 2)", "k(float*) (kernel)"]
    assert proposal.target == "(unnamed)"
    assert proposal.p == pytest.approx(300 / 1300)
    assert evaluate(proposal, default_policy()).verdict == "remeasure"  # a summary's share, as for any target
