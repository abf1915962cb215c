"""Every real profiler file in ../shared/fixtures/real: read without a traceback, figures recomputed here.

The figures are computed independently in the test (a sweep-line interval union over the raw JSON/CSV), and the
two-rank set's per-rank compute, communication and idle time are pinned to HolisticTraceAnalysis's temporal
breakdown of the same files (HTA 0.5.0, `TraceAnalysis(...).get_temporal_breakdown()`, last step dropped:
rank 0 compute 106,252 µs, idle 321,378 µs, kernel span 600,058 µs; rank 1 135,548 / 328,671 / 600,674 µs;
with `include_last_profiler_step=True`: 210,320 / 675,191 and 271,973 / 651,136 µs).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec
import pytest

from worthit.rules.engine import evaluate
from worthit.rules.errors import InvalidInput
from worthit.rules.model import Proposal
from worthit.rules.policy import default_policy
from worthit.rules.profiles import ProfileError, combine, read_any, render_table
from worthit.rules.profiles.kineto import parse_steps
from worthit.rules.profiles.proposal import proposal_from_profile
from worthit.service.cli import main

from .conftest import fixtures_dir

REAL = fixtures_dir() / "real"
FILES = sorted(p for p in REAL.rglob("*") if p.is_file() and p.suffix != ".md") if REAL.is_dir() else []
RANKS = [REAL / "pytorch" / f"trace_filter_sampled_rank-{i}.json.gz" for i in (0, 1)]
NCCL = re.compile(r"^nccl.*Kernel")  # HTA's own test for a communication kernel
HTA = {  # rank: (compute µs, idle µs, kernel span µs), last step dropped / included
    "default": {0: (106_252, 321_378, 600_058), 1: (135_548, 328_671, 600_674)},
    "all": {0: (210_320, 675_191, 1_222_847), 1: (271_973, 651_136, 1_231_186)},
}

pytestmark = pytest.mark.skipif(not FILES, reason="the shared real fixtures are not checked out")


def events(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    return doc, [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def ns(us: float) -> int:
    """µs to ns; integers stay exact (epoch µs times 1000 is past a double's 53 bits)."""
    return us * 1000 if isinstance(us, int) else round(us * 1000)


def pair(e: dict[str, Any]) -> tuple[int, int]:
    return ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])


def covered(pairs: list[tuple[int, int]]) -> int:
    """Independent union: a sweep over sorted pairs, extending the current run or starting a new one."""
    total, run_start, run_end = 0, None, None
    for s, e in sorted(pairs):
        if run_end is None or s > run_end:
            if run_end is not None and run_start is not None:
                total += run_end - run_start
            run_start, run_end = s, e
        else:
            run_end = max(run_end, e)
    if run_end is not None and run_start is not None:
        total += run_end - run_start
    return total


def hta_view(path: Path, include_last: bool) -> dict[str, int]:
    """HTA's filter, redone here: GPU work launched (by correlation) before the last ProfilerStep starts."""
    _, evs = events(path)
    steps = sorted(e["ts"] for e in evs if e["name"].startswith("ProfilerStep#") and e["cat"] == "user_annotation")
    launch = {e["args"]["correlation"]: e["ts"] for e in evs if e["cat"] == "cuda_runtime" and "args" in e}
    cut = float("inf") if include_last else steps[-1]
    gpu = [e for e in evs if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    kept = [e for e in gpu if launch.get(e["args"]["correlation"], e["ts"]) < cut]
    pairs = [pair(e) for e in kept]
    compute = [p for e, p in zip(kept, pairs, strict=True) if e["cat"] == "kernel" and not NCCL.match(e["name"])]
    comm = [p for e, p in zip(kept, pairs, strict=True) if e["cat"] == "kernel" and NCCL.match(e["name"])]
    span = max(e for _, e in pairs) - min(s for s, _ in pairs)
    busy = covered(pairs)
    return {
        "compute": covered(compute),
        "comm": covered(comm),
        "either": covered(compute + comm),
        "busy": busy,
        "idle": span - busy,
        "span": span,
    }


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_real_file_is_read_and_reviewed(path: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`worthit profile` reads each file; `worthit review --profile` with its top device phase never tracebacks."""
    assert main(["profile", str(path)]) == 0
    report = capsys.readouterr().out
    b = read_any(path.read_bytes())
    assert b.format in report
    top = next((p for p in b.phases if p.share_of_device is not None), b.phases[0])
    proposal = tmp_path / "p.json"
    proposal.write_text(json.dumps({"target": top.name, "k": 2, "cost_weeks": 2}))
    code = main(["review", str(proposal), "--profile", str(path)])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    if b.device_timeline and top.share_of_device is not None:
        assert code in (0, 1), out.err  # a verdict, pass or fail
        assert out.out.startswith("verdict: ")
    else:
        assert code == 2
        assert out.err.startswith("worthit: Expected")


@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.parametrize("which", ["default", "all"])
def test_rank_figures_match_hta_and_an_independent_union(rank: int, which: str) -> None:
    """Per rank: compute, communication, busy and idle equal the union redone here and HTA's temporal breakdown."""
    path = RANKS[rank]
    b = read_any(path.read_bytes(), steps=parse_steps("all") if which == "all" else None)
    mine = hta_view(path, include_last=which == "all")
    assert b.activity is not None
    a = b.activity
    assert (a.compute_ns, a.comm_ns, a.busy_ns, a.idle_ns, a.span_ns) == (
        mine["compute"],
        mine["comm"],
        mine["busy"],
        mine["idle"],
        mine["span"],
    )
    compute_us, idle_us, span_us = HTA[which][rank]
    assert (a.compute_ns, a.idle_ns, a.span_ns) == (compute_us * 1000, idle_us * 1000, span_us * 1000)
    assert a.overlap_ns == mine["compute"] + mine["comm"] - mine["either"]


def test_two_ranks_read_as_one_run(capsys: pytest.CaptureFixture[str]) -> None:
    """Both ranks, per step compute/communication/idle, the straggler and the waits; --json carries the same."""
    b = combine([p.read_bytes() for p in RANKS], names=[p.name for p in RANKS], steps=parse_steps("551:552"))
    assert b.barrier is not None
    assert [r.rank for r in b.ranks] == [0, 1]
    figures = {(s.rank, s.number): s for s in b.step_figures}
    assert set(figures) == {(0, 551), (0, 552), (1, 551), (1, 552)}
    # Per step, per rank: the union of compute and of NCCL kernels launched in the step, recomputed here.
    for rank, path in enumerate(RANKS):
        _, evs = events(path)
        launch = {e["args"]["correlation"]: e["ts"] for e in evs if e["cat"] == "cuda_runtime" and "args" in e}
        for step in (e for e in evs if e["name"].startswith("ProfilerStep#") and e["cat"] == "user_annotation"):
            inside = [
                e
                for e in evs
                if e["cat"] == "kernel"
                and step["ts"] <= launch.get(e["args"]["correlation"], e["ts"]) < step["ts"] + step["dur"]
            ]
            pairs = {
                kind: [pair(e) for e in inside if bool(NCCL.match(e["name"])) == (kind == "comm")]
                for kind in ("compute", "comm")
            }
            got = figures[(rank, int(step["name"].split("#")[1]))]
            assert got.activity.compute_ns == covered(pairs["compute"])
            assert got.activity.comm_ns == covered(pairs["comm"])
            assert got.wall_ns == int(step["dur"] * 1000)
    # Pinned: rank 1 has more compute in both steps, so it is the straggler; rank 0 waits for it in collectives.
    assert b.barrier.straggler == 1
    assert (figures[(0, 551)].activity.compute_ns, figures[(1, 551)].activity.compute_ns) == (106_252_000, 135_548_000)
    assert (figures[(0, 552)].activity.compute_ns, figures[(1, 552)].activity.compute_ns) == (104_068_000, 136_425_000)
    assert (figures[(0, 551)].activity.comm_ns, figures[(1, 551)].activity.comm_ns) == (195_327_000, 168_027_000)
    assert figures[(0, 551)].wait_ns == 135_548_000 - 106_252_000
    assert figures[(0, 552)].wait_ns == 136_425_000 - 104_068_000
    assert figures[(1, 551)].wait_ns == figures[(1, 552)].wait_ns == 0
    walls = sum(s.wall_ns for s in b.step_figures)
    assert b.barrier.wait_fraction == pytest.approx((29_296_000 + 32_357_000) / walls)
    assert b.barrier.world_size == 128
    assert main(["profile", *map(str, RANKS), "--steps", "551:552"]) == 0
    text = capsys.readouterr().out
    assert "straggler rank 1" in text
    assert "ProfilerStep#552" in text
    assert main(["profile", *map(str, RANKS), "--steps", "551:552", "--json"]) == 0
    doc = msgspec.json.decode(capsys.readouterr().out)
    assert doc["barrier"]["straggler"] == 1
    assert len(doc["step_figures"]) == 4
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]


def test_proposal_on_the_straggler_gets_the_measured_barrier() -> None:
    """A compute kernel on the straggler: p over the step all ranks wait for, flags.barrier measured, a verdict."""
    b = combine([p.read_bytes() for p in RANKS], names=[p.name for p in RANKS])
    rank1 = next(r for r in b.ranks if r.rank == 1)
    kernel = next(p for p in rank1.phases if p.kind == "kernel")
    assert len(kernel.name) > 200  # a signature longer than the Name limit, named in full
    proposal = msgspec.convert({"target": kernel.name, "k": 2, "profile_id": "run", "cost_weeks": 2}, Proposal)
    resolved = proposal_from_profile(proposal, b)
    barrier = resolved.flags.barrier
    assert barrier is not None
    assert (barrier.ranks, barrier.straggler, barrier.critical_path) == (2, 1, True)
    step = next(s for s in b.step_figures if s.rank == 1)
    assert resolved.p == pytest.approx(step.phases[kernel.name] / step.wall_ns)
    assert barrier.wait_fraction == pytest.approx(b.barrier.wait_fraction if b.barrier else 0)
    evaluation = evaluate(resolved, default_policy())
    finding = next(f for f in evaluation.findings if f.rule == "barrier_denominator")
    assert finding.effect == "info"
    assert finding.figures["p_distributed"] == pytest.approx(resolved.p)
    assert finding.figures["rank_time_paid"] == pytest.approx(2 * resolved.p)
    assert evaluation.verdict != "remeasure"


def test_long_names_never_collide_in_a_proposal() -> None:
    """Kernel names that differ only past 200 characters stay distinct phases of the proposal's breakdown."""
    b = read_any(RANKS[0].read_bytes())
    long = [p.name for p in b.phases if len(p.name) > 200]
    assert len({n[:199] for n in long}) < len(long)  # cut alone, some would collide
    proposal = msgspec.convert({"target": long[0], "k": 2, "profile_id": "x"}, Proposal)
    # Without the profile no such name fits the API's 200 characters.
    with pytest.raises(msgspec.ValidationError, match="length <= 200"):
        msgspec.convert({"target": long[0], "k": 2, "p": 0.1}, Proposal)
    resolved = proposal_from_profile(proposal, b)
    names = [p.name for p in resolved.breakdown or []]
    assert len(names) == len(set(names))
    assert all(len(n) <= 200 for n in names)


def test_old_schema_reads_like_a_current_one() -> None:
    """PyTorch 1.8-era categories (Kernel, Memcpy, Memset, Operator): device busy and top kernel as recomputed."""
    path = REAL / "pytorch" / "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"
    _, evs = events(path)
    b = read_any(path.read_bytes(), steps=parse_steps("all"))
    device = [e for e in evs if e["cat"] in ("Kernel", "Memcpy", "Memset")]
    assert b.device_busy_ns == covered([pair(e) for e in device])
    per_kernel: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for e in device:
        if e["cat"] == "Kernel":
            per_kernel[e["name"]].append(pair(e))
    top_name = max(per_kernel, key=lambda n: covered(per_kernel[n]))
    top = next(p for p in b.phases if p.kind == "kernel")
    assert (top.name, top.total_ns) == (top_name, covered(per_kernel[top_name]))
    assert b.steps == len({e["name"] for e in evs if e["name"].startswith("ProfilerStep#")})
    assert b.device_timeline


def test_cupti_range_profile_has_no_device_timeline() -> None:
    """cuda_profiler_range spans are counters, not a timeline: said in the report and in the 422's detail."""
    path = REAL / "pytorch" / "cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz"
    b = read_any(path.read_bytes())
    assert not b.device_timeline
    assert b.device_busy_ns is None
    assert "no device timeline" in render_table(b)
    kernel = next(e["name"] for e in events(path)[1] if e["cat"] == "cuda_profiler_range")
    from worthit.rules.errors import InvalidInput

    proposal = msgspec.convert({"target": kernel[:40], "k": 2, "profile_id": "x"}, Proposal)
    with pytest.raises(InvalidInput, match="no device timeline"):
        proposal_from_profile(proposal, b)


def test_kernel_trace_union_and_top_phase() -> None:
    """rocprofv3 kernel trace over four queues: busy time is the union of the rows, recomputed from the CSV."""
    path = REAL / "rocprofv3" / "sdk_481f7ff_kernel_trace.csv"
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    pairs = [(int(r["Start_Timestamp"]), int(r["End_Timestamp"])) for r in rows]
    b = read_any(path.read_bytes())
    assert b.device_busy_ns == covered(pairs)
    per: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r, p in zip(rows, pairs, strict=True):
        per[r["Kernel_Name"]].append(p)
    top = max(per, key=lambda n: covered(per[n]))
    assert (b.phases[0].name, b.phases[0].total_ns) == (top, covered(per[top]))


def test_steps_range_errors_name_what_exists() -> None:
    """Asking for steps the trace lacks names the steps it has; a CSV has no steps at all."""
    with pytest.raises(ProfileError, match="the trace has steps 551, 552"):
        read_any(RANKS[0].read_bytes(), steps=parse_steps("3:5"))
    with pytest.raises(ProfileError, match="marks no steps"):
        read_any((REAL / "rocprofv3" / "sdk_481f7ff_kernel_trace.csv").read_bytes(), steps=parse_steps("1"))
    with pytest.raises(ProfileError, match="expected steps"):
        parse_steps("two")


def test_a_training_step_that_waits_on_its_dataloader_says_so() -> None:
    """ResNet-50 with ``num_workers=0``: the host's ``enumerate(DataLoader)`` ops hold the GPU idle. CPU ops run
    beside the device, so they are not parts of the run: the breakdown is the device's work plus its idle time,
    split into the wait on the input pipeline (idle inside DataLoader ops, recomputed here) and the wait on the
    host, and adds up to the recording's wall time instead of half as much again."""
    path = REAL / "pytorch" / "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"
    _, evs = events(path)
    device = [pair(e) for e in evs if e["cat"] in ("Kernel", "Memcpy", "Memset")]
    loading = [pair(e) for e in evs if e["name"].startswith("enumerate(DataLoader)")]
    waiting = covered(loading + device) - covered(device)
    assert 300e6 < waiting < covered(loading)  # most of the loading time, but not the part the GPU worked through
    b = read_any(path.read_bytes(), steps=parse_steps("all"))
    assert b.activity is not None
    assert b.activity.input_ns == waiting
    assert f"waiting on the input pipeline {waiting / 1e6:.3f} ms" in render_table(b)
    target = next(p for p in b.phases if p.kind == "kernel")
    raw = {"target": target.name, "k": 1.5, "cost_weeks": 3, "profile_id": "resnet"}
    resolved = proposal_from_profile(msgspec.convert(raw, Proposal), b)
    parts = {p.name: p for p in resolved.breakdown or []}
    assert not any("aten::" in name or "DataLoader" in name for name in parts)
    assert parts["device idle (input pipeline)"].kind == "input"
    assert parts["device idle (input pipeline)"].ms == pytest.approx(waiting / 1e6)
    assert parts["device idle (host)"].kind == "host"
    assert sum(p.ms for p in parts.values()) == pytest.approx((b.wall_ns or 0) / 1e6)
    evaluation = evaluate(resolved, default_policy())
    non_kernel = next(f for f in evaluation.findings if f.rule == "non_kernel_time")
    assert non_kernel.figures["input_ms"] == pytest.approx(waiting / 1e6)
    assert "input pipeline" in non_kernel.message
    assert "bigger_target" not in {f.rule for f in evaluation.findings}  # no kernel is larger than the target


def test_the_input_wait_of_chosen_steps_is_measured_within_them() -> None:
    """ProfilerStep#6..#8 of the ResNet-50 trace: each step's DataLoader time clipped to the step, less the time any
    device work ran (launched in whichever step), recomputed here; a proposal on those steps carries their sum."""
    path = REAL / "pytorch" / "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"
    _, evs = events(path)
    device = [pair(e) for e in evs if e["cat"] in ("Kernel", "Memcpy", "Memset")]
    spans = {int(e["name"].split("#")[1]): pair(e) for e in evs if e["name"].startswith("ProfilerStep#")}
    loading = [pair(e) for e in evs if e["name"].startswith("enumerate(DataLoader)")]
    expected = 0
    for number in (6, 7, 8):
        lo, hi = spans[number]
        inside = [(max(s, lo), min(e, hi)) for s, e in loading if s < hi and e > lo]
        expected += covered(inside + device) - covered(device)
    assert expected > 0
    b = read_any(path.read_bytes(), steps=parse_steps("all"))
    target = next(p for p in b.phases if p.kind == "kernel")
    raw = {"target": target.name, "k": 1.5, "cost_weeks": 3, "profile_id": "resnet", "steps": "6:8"}
    resolved = proposal_from_profile(msgspec.convert(raw, Proposal), b)
    parts = {p.name: p for p in resolved.breakdown or []}
    assert parts["device idle (input pipeline)"].ms == pytest.approx(expected / 1e6)


def test_a_kernel_family_named_by_its_start_is_ambiguous_not_its_smallest_member() -> None:
    """Rank 1 holds three split_embedding_backward kernels: 28.8 and 14.7 ms signatures that start with ``void ``,
    and a 0.5 ms one that does not. Typed as its start, the family used to resolve to the 0.5 ms kernel (the only
    literal prefix match): a p 50 times too small. It is ambiguous, with the largest listed first."""
    b = combine([p.read_bytes() for p in RANKS], names=[p.name for p in RANKS])
    needle = "split_embedding_backward_codegen_rowwise_adagrad"
    rank1 = next(r for r in b.ranks if r.rank == 1)
    family = sorted((p for p in rank1.phases if needle in p.name), key=lambda p: -p.total_ns)
    assert [p.name.startswith("void ") for p in family] == [True, True, False]
    proposal = msgspec.convert({"target": needle, "k": 2, "profile_id": "run"}, Proposal)
    with pytest.raises(InvalidInput, match="matches several") as raised:
        proposal_from_profile(proposal, b)
    assert raised.value.args[0].index("cta_per_row") < raised.value.args[0].index("find_long_segments")
    exact = msgspec.convert(
        {
            "target": "split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta",
            "k": 2,
            "profile_id": "run",
        },
        Proposal,
    )
    assert proposal_from_profile(exact, b).flags.barrier is not None  # the void-led signature found by its start


def test_a_kernel_summary_share_is_refused_for_its_denominator_not_called_inclusive() -> None:
    """nsys cuda_gpu_kern_sum: kernels do not nest, so flash_attention's Time (%) is not "inclusive"; it is of summed
    kernel time (50.07% as printed), and that is what the remeasure says."""
    path = REAL / "nsys" / "dotllm_prefill_cuda_gpu_kern_sum.csv"
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    named = next(r for r in rows if r["Name"] == "flash_attention_prefill_f16")
    b = read_any(path.read_bytes())
    raw = {"target": "flash_attention_prefill_f16", "k": 2, "cost_weeks": 2, "profile_id": "nsys"}
    evaluation = evaluate(proposal_from_profile(msgspec.convert(raw, Proposal), b), default_policy())
    assert evaluation.verdict == "remeasure"
    assert evaluation.deciding_rule == "inclusive_percentages"
    assert f"The {float(named['Time (%)']):.1f}% share" in evaluation.statement
    assert "summed kernel time" in evaluation.statement
    assert "inclusive percentage" not in evaluation.statement


def test_the_step_table_gives_each_steps_idle_time_of_the_step_and_its_input_wait() -> None:
    """ResNet-50, ProfilerStep#6: 174 ms of step, 98.6 ms of compute. Its idle time is the step less the union of
    the device work launched in it (about 73 ms, most of it the DataLoader's), not the gaps inside that work's own
    span (17 ms), which left 57 ms of every step unaccounted for in the table."""
    path = REAL / "pytorch" / "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"
    _, evs = events(path)
    lo, hi = next(pair(e) for e in evs if e["name"] == "ProfilerStep#6")
    launch = {
        e["args"]["correlation"]: ns(e["ts"]) for e in evs if e["cat"] == "Runtime" and "correlation" in e["args"]
    }
    device = [
        pair(e)
        for e in evs
        if e["cat"] in ("Kernel", "Memcpy", "Memset") and lo <= launch.get(e["args"].get("correlation"), -1) < hi
    ]
    idle = (hi - lo) - covered(device)
    b = read_any(path.read_bytes(), steps=parse_steps("all"))
    figures = next(s for s in b.step_figures if s.number == 6)
    assert figures.wall_ns - figures.activity.busy_ns == idle
    row = next(line for line in render_table(b).splitlines() if line.startswith("ProfilerStep#6"))
    cells = row.split()
    assert cells[5] == f"{idle / 1e6:,.3f}"
    assert cells[6] == f"{figures.activity.input_ns / 1e6:,.3f}"
    assert 0 < figures.activity.input_ns <= idle
    assert "idle ms    input ms     kernels" in render_table(b)


def _step_551(path: Path) -> int:
    """ProfilerStep#551's duration in ns, from the raw events: the step both ranks' proposals are measured on."""
    _, evs = events(path)
    return next(ns(e["dur"]) for e in evs if e["name"] == "ProfilerStep#551" and e["cat"] == "user_annotation")


@pytest.mark.parametrize("kind", ["comm", "kernel"])
def test_overlapped_communication_is_counted_once_and_the_idle_time_is_the_unions(kind: str) -> None:
    """Rank 1 of the two-rank run: 33.7 ms of its SendRecv run under compute. The breakdown counts the collective
    for its exposed 134.3 ms, not 168.0, and the device's idle time is the step less the union of its work (335.9
    ms, not the 301.7 left by subtracting summed parts); the parts sum to the step, and p agrees with them for a
    comm and a compute target alike."""
    from worthit.rules.model import HOST_WAIT

    b = combine([p.read_bytes() for p in RANKS], names=[p.name for p in RANKS])
    mine = hta_view(RANKS[1], include_last=False)
    step = _step_551(RANKS[1])
    exposed_comm = mine["either"] - mine["compute"]
    assert (step, mine["busy"], exposed_comm) == (607_904_000, 272_003_000, 134_336_000)
    rank1 = next(r for r in b.ranks if r.rank == 1)
    target = next(p for p in rank1.phases if p.kind == kind)
    proposal = msgspec.convert({"target": target.name, "k": 2, "profile_id": "run", "cost_weeks": 2}, Proposal)
    resolved = proposal_from_profile(proposal, b)
    parts = {p.name: p for p in resolved.breakdown or ()}
    assert parts[HOST_WAIT].ms == pytest.approx((step - mine["busy"]) / 1e6)
    assert sum(p.ms for p in parts.values()) == pytest.approx(step / 1e6)
    comm = next(p for p in parts.values() if p.kind == "comm")
    assert comm.ms == pytest.approx(exposed_comm / 1e6)
    own = exposed_comm if kind == "comm" else target.total_ns
    assert resolved.p == pytest.approx(own / step)
    assert parts[resolved.target or ""].ms == pytest.approx(own / 1e6)
    evaluation = evaluate(resolved, default_policy())
    assert "335.9 ms of host time" in evaluation.statement
    assert "overlap_double_count" not in {f.rule for f in evaluation.findings}


def test_one_ranks_breakdown_takes_its_idle_time_from_the_union_too() -> None:
    """Rank 1's trace alone, a compute target: the same 335.9 ms of idle beside parts that sum to the step."""
    from worthit.rules.model import HOST_WAIT

    b = read_any(RANKS[1].read_bytes())
    mine = hta_view(RANKS[1], include_last=False)
    step = _step_551(RANKS[1])
    kernel = next(p for p in b.phases if p.kind == "kernel")
    proposal = msgspec.convert({"target": kernel.name, "k": 2, "profile_id": "run", "cost_weeks": 2}, Proposal)
    resolved = proposal_from_profile(proposal, b)
    parts = {p.name: p for p in resolved.breakdown or ()}
    assert parts[HOST_WAIT].ms == pytest.approx((step - mine["busy"]) / 1e6)
    assert sum(p.ms for p in parts.values()) == pytest.approx(step / 1e6)
    assert resolved.p == pytest.approx(kernel.total_ns / mine["busy"])


NCCL_RUN = REAL / "pytorch" / "nccl_parser_config_nccl_data.json.gz"


@pytest.mark.parametrize("steps", [None, "4:5"])
def test_a_collective_in_one_ranks_trace_of_a_multi_rank_run_is_remeasured_across_ranks(steps: str | None) -> None:
    """Rank 0 of 2 (``distributedInfo``), target its AllReduce: its time on this rank holds the wait for the other
    rank, which one trace cannot split, so the barrier is stated (2 ranks, wait unmeasured) and barrier_denominator
    remeasures across all ranks, with p its exposed share of device activity (the 3.6 ms under compute left out)."""
    doc, _ = events(NCCL_RUN)
    world = doc["distributedInfo"]["world_size"]
    assert (doc["distributedInfo"]["rank"], world) == (0, 2)
    mine = hta_view(NCCL_RUN, include_last=False)
    b = read_any(NCCL_RUN.read_bytes())
    assert (b.rank, b.world_size, b.device_busy_ns) == (0, world, mine["busy"])
    allreduce = next(p for p in b.phases if p.kind == "comm" and "AllReduce" in p.name)
    raw: dict[str, Any] = {"target": allreduce.name, "k": 2, "profile_id": "one rank", "cost_weeks": 2}
    if steps is not None:
        raw["steps"] = steps
    resolved = proposal_from_profile(msgspec.convert(raw, Proposal), b)
    barrier = resolved.flags.barrier
    assert barrier is not None
    assert (barrier.ranks, barrier.critical_path, barrier.wait_fraction) == (world, True, None)
    if steps is None:
        exposed = allreduce.total_ns * (mine["either"] - mine["compute"]) / mine["comm"]
        assert mine["comm"] - (mine["either"] - mine["compute"]) == 3_585_679
        assert resolved.p == pytest.approx(exposed / mine["busy"])
    evaluation = evaluate(resolved, default_policy())
    assert (evaluation.verdict, evaluation.deciding_rule) == ("remeasure", "barrier_denominator")
    assert f"includes its wait for the slowest of {world} ranks" in evaluation.statement
    assert "trace the collective across all ranks" in evaluation.statement
    # A compute kernel of the same trace states no barrier (which rank is the straggler is not known here).
    kernel = next(p for p in b.phases if p.kind == "kernel")
    computed = proposal_from_profile(msgspec.convert({**raw, "target": kernel.name}, Proposal), b)
    assert computed.flags.barrier is None


def test_a_collective_with_every_rank_read_uses_the_measured_barrier_not_a_remeasure() -> None:
    """Both trace_filter ranks read as one run (world size 128, both ranks read): the SendRecv target gets the
    barrier measured from the traces — its own wait split out — and no re-measurement is asked for."""
    b = combine([p.read_bytes() for p in RANKS], names=[p.name for p in RANKS])
    comm = next(p for p in b.phases if p.kind == "comm")
    proposal = msgspec.convert({"target": comm.name, "k": 2, "profile_id": "run", "cost_weeks": 2}, Proposal)
    resolved = proposal_from_profile(proposal, b)
    barrier = resolved.flags.barrier
    assert barrier is not None
    assert b.barrier is not None
    assert (barrier.ranks, barrier.straggler) == (2, 1)
    assert barrier.wait_fraction == pytest.approx(b.barrier.wait_fraction)
    assert barrier.target_wait is not None
    assert evaluate(resolved, default_policy()).verdict != "remeasure"


def _clip(pairs: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    return [(max(s, lo), min(e, hi)) for s, e in pairs if s < hi and e > lo]


@pytest.mark.parametrize("spec", ["all", None])
def test_the_first_line_of_the_resnet_table_is_the_wait_on_the_input_pipeline(
    spec: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """ResNet-50 with ``num_workers=0``: the largest thing to act on is the GPU waiting on the DataLoader (more than
    any kernel, and most of the idle time), so the table opens with it, over the selected steps' own time: by
    default all but the last step, 306.7 ms of 884.7 ms (recomputed here from the raw events, step by step)."""
    path = REAL / "pytorch" / "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"
    _, evs = events(path)
    steps = sorted((int(e["name"].split("#")[1]), pair(e)) for e in evs if e["name"].startswith("ProfilerStep#"))
    selected = steps if spec == "all" else steps[:-1]
    device = [pair(e) for e in evs if e["cat"] in ("Kernel", "Memcpy", "Memset")]
    loading = [pair(e) for e in evs if e["name"].startswith("enumerate(DataLoader)")]
    waiting = sum(covered(_clip(loading + device, lo, hi)) - covered(_clip(device, lo, hi)) for _, (lo, hi) in selected)
    step_ns = sum(hi - lo for _, (lo, hi) in selected)
    largest_kernel = max(
        covered([pair(e) for e in evs if e["cat"] == "Kernel" and e["name"] == name])
        for name in {e["name"] for e in evs if e["cat"] == "Kernel"}
    )
    assert waiting > largest_kernel
    first = (
        f"waiting on the input pipeline {waiting / 1e6:,.1f} ms of the steps' {step_ns / 1e6:,.1f} ms "
        f"({waiting / step_ns * 100:.1f}%): look here first"
    )
    if spec is None:
        assert first == "waiting on the input pipeline 306.7 ms of the steps' 884.7 ms (34.7%): look here first"
        assert main(["profile", str(path)]) == 0
        text = capsys.readouterr().out
    else:
        text = render_table(read_any(path.read_bytes(), steps=parse_steps(spec)))
    assert text.splitlines()[0] == first


def test_kernels_come_before_cpu_ops_and_top_bounds_each(capsys: pytest.CaptureFixture[str]) -> None:
    """The two-rank trace: every device row (kernels, collectives, copies) before any CPU op, each side largest
    first and `--top N` rows at most, the rest counted; `--kind` keeps only the kinds asked for."""
    assert main(["profile", "--top", "5", *map(str, RANKS)]) == 0
    lines = capsys.readouterr().out.splitlines()
    b = combine([path.read_bytes() for path in RANKS], names=[path.name for path in RANKS])
    device = sorted((p for p in b.phases if p.kind in ("kernel", "comm", "copy")), key=lambda p: (-p.total_ns, p.name))
    host = sorted(
        (p for p in b.phases if p.kind not in ("kernel", "comm", "copy")), key=lambda p: (-p.total_ns, p.name)
    )
    start = lines.index(next(line for line in lines if line.startswith("name "))) + 2
    rows = lines[start : start + 5]
    assert [row.split()[-5] for row in rows] == [p.kind for p in device[:5]]
    assert [row.split()[-4] for row in rows] == [f"{p.total_ns / 1e6:,.3f}" for p in device[:5]]
    assert lines[start + 5] == f"… {len(device) - 5} more (--top 0 shows them all)"
    host_at = lines.index("host side: CPU ops, annotations and API calls (these nest inside each other; % of wall)")
    assert host_at > start + 5
    host_rows = lines[host_at + 1 : host_at + 6]
    assert [row.split()[-4] for row in host_rows] == [f"{p.total_ns / 1e6:,.3f}" for p in host[:5]]
    assert lines[host_at + 6] == f"… {len(host) - 5} more (--top 0 shows them all)"
    assert main(["profile", "--top", "0", "--kind", "cpu_op", *map(str, RANKS)]) == 0
    only = capsys.readouterr().out.splitlines()
    start = only.index(next(line for line in only if line.startswith("name "))) + 2
    cpu = [p for p in host if p.kind == "cpu_op"]
    assert [line.split()[-5] for line in only[start : start + len(cpu)]] == ["cpu_op"] * len(cpu)
    assert not any(" kernel " in line or line.startswith("…") for line in only[start:])


def test_device_rows_that_overlap_say_so() -> None:
    """Ranks' kernels counted in one table: their % device adds past 100%, by as much as the table says."""
    b = combine([path.read_bytes() for path in RANKS], names=[path.name for path in RANKS])
    total = sum(p.total_ns for p in b.phases if p.kind in ("kernel", "comm", "copy"))
    assert b.device_busy_ns is not None
    assert total > b.device_busy_ns
    line = next(line for line in render_table(b).splitlines() if line.startswith("rows overlap"))
    assert line.startswith(f"rows overlap: their % device adds to {total / b.device_busy_ns * 100:.0f}% ")
