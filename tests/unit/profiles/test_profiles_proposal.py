"""A proposal built from a profile: its breakdown bounded at `MAX_PHASES` whichever path measured it (one rank, or a
distributed run's target rank), the target always kept and found by the name the report shows, every figure checked
against the test's own reading of the JSON."""

from __future__ import annotations

import functools
import io
import itertools
import json
import re
from typing import Literal

import msgspec
import pytest

from tests.kineto_traces import ELEMENTWISE, GEMM, Shape, write
from worthit.rules.engine import evaluate
from worthit.rules.errors import InvalidInput
from worthit.rules.model import Phase as ProposalPhase
from worthit.rules.model import Proposal
from worthit.rules.phase_names import REST_PREFIX
from worthit.rules.policy import default_policy
from worthit.rules.profiles import combine, read_any
from worthit.rules.profiles.fold import MAX_PHASES, fold_breakdown, fold_phases
from worthit.rules.profiles.model import Breakdown, Phase
from worthit.rules.profiles.naming import short_name
from worthit.rules.profiles.proposal import fold_proposal_phases, proposal_from_profile

from .conftest import fixtures_dir

RANKS = [fixtures_dir() / "real" / "pytorch" / f"trace_filter_sampled_rank-{i}.json.gz" for i in (0, 1)]
real = pytest.mark.skipif(not all(p.is_file() for p in RANKS), reason="the shared real fixtures are not checked out")


def distinct_kernels(shape: Shape) -> bytes:
    """`shape`'s trace with every GEMM launch its own kernel (``gemm_r<rank>_<n>``): each rank runs a kernel set of
    its own, thousands of names in all, as JIT-specialised kernels do."""
    out = io.StringIO()
    write(out, shape)
    counter = itertools.count()
    text = re.sub(rf'"name": "{GEMM}"', lambda _: f'"name": "gemm_r{shape.rank}_{next(counter)}"', out.getvalue())
    return text.encode()


def trace_of(shape: Shape) -> bytes:
    out = io.StringIO()
    write(out, shape)
    return out.getvalue().encode()


def ns(us: float) -> int:
    return round(us * 1000)


def test_a_distributed_proposals_breakdown_is_bounded_with_its_target_kept() -> None:
    """8 ranks × 3 steps × 300 layers (7,200 GEMM names, 900 per rank, none shared), rank 5 the straggler: the
    proposal on a small kernel of the straggler carries at most `MAX_PHASES` phases, the target among them, and its
    phases still add up to the straggler's step; the target's ms stand to the device phases' ms as its duration to
    the durations of the device work of the rank's measured steps (all but the last), read from the JSON here."""
    ranks, straggler, layers = 8, 5, 300
    traces = [
        distinct_kernels(
            Shape(
                rank=r,
                world_size=ranks,
                steps=3,
                layers=layers,
                compute_scale=1.25 if r == straggler else 1.0,
                lead_scale=1.25,
            )
        )
        for r in range(ranks)
    ]
    b = combine(traces, names=[f"rank-{r}.json" for r in range(ranks)])
    assert b.barrier is not None
    assert b.barrier.straggler == straggler
    doc = json.loads(traces[straggler])
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    # (start, duration) in ns: a float of epoch µs holds a timestamp to 0.25 µs, a duration exactly.
    steps = sorted((ns(e["ts"]), ns(e["dur"])) for e in events if e["name"].startswith("ProfilerStep#"))
    lo, hi = steps[0][0], steps[-2][0] + steps[-2][1]  # the last, incomplete step is left out
    launch = {e["args"]["correlation"]: ns(e["ts"]) for e in events if e["cat"] == "cuda_runtime"}
    device = [
        e
        for e in events
        if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset") and lo <= launch[e["args"]["correlation"]] < hi
    ]
    target = f"gemm_r{straggler}_{layers + 7}"  # one GEMM of the second step
    duration = next(ns(e["dur"]) for e in device if e["name"] == target)
    proposal = msgspec.convert({"target": target, "k": 2, "profile_id": "run", "cost_weeks": 1}, Proposal)
    resolved = proposal_from_profile(proposal, b)
    phases = resolved.breakdown or []
    assert len(phases) <= MAX_PHASES
    by_name = {p.name: p for p in phases}
    assert target in by_name
    assert resolved.target == target
    step_ms = sum(d for _, d in steps[:-1]) / (len(steps) - 1) / 1e6
    assert resolved.baseline_ms == pytest.approx(step_ms)
    assert sum(p.ms for p in phases) == pytest.approx(step_ms)
    # The GEMM runs once in the two measured steps: p is its time per step over the step.
    assert resolved.p == pytest.approx(duration / sum(d for _, d in steps[:-1]))
    # Every device phase (kernels, the collective, the copy, the memset, kind `other`) scaled alike.
    on_device = [p for p in phases if p.kind in ("kernel", "comm", "copy", "other")]
    scale = by_name[target].ms / (duration / 1e6)
    assert sum(p.ms for p in on_device) == pytest.approx(sum(ns(e["dur"]) for e in device) / 1e6 * scale)
    # The GEMMs not named are one "rest" phase: its count and its time are theirs.
    gemm_ns = next(ns(e["dur"]) for e in device if e["name"].startswith("gemm_"))
    named = [p for p in phases if p.name.startswith(f"gemm_r{straggler}_")]
    folded = [p for p in phases if p.name.startswith(REST_PREFIX)]
    assert [(p.name, p.kind) for p in folded] == [
        (f"{REST_PREFIX}{2 * layers - len(named):,} kernel phases)", "kernel")
    ]
    assert folded[0].ms == pytest.approx((2 * layers - len(named)) * gemm_ns / 1e6 * scale)


@real
def test_the_two_real_ranks_proposal_is_bounded_and_still_sums_to_the_step() -> None:
    """The HTA two-rank set (187 device phases on the straggler, rank 1): a proposal on its smallest kernel
    carries at most `MAX_PHASES` phases (188 before), the target kept at its own ms, the whole still the step."""
    b = combine([p.read_bytes() for p in RANKS], names=[p.name for p in RANKS])
    assert b.barrier is not None
    straggler = next(r for r in b.ranks if r.rank == b.barrier.straggler)
    assert len(straggler.phases) == 187
    smallest = min((p for p in straggler.phases if p.kind == "kernel"), key=lambda p: (p.total_ns, p.name))
    proposal = msgspec.convert({"target": smallest.name, "k": 2, "profile_id": "run"}, Proposal)
    resolved = proposal_from_profile(proposal, b)
    phases = resolved.breakdown or []
    assert len(phases) <= MAX_PHASES
    assert resolved.target in {p.name for p in phases}
    assert resolved.baseline_ms is not None
    assert sum(p.ms for p in phases) == pytest.approx(resolved.baseline_ms)
    # Rank 1's two steps, #551 and #552, from the JSON: the breakdown is per step of the straggler.
    doc = json.loads(__import__("gzip").decompress(RANKS[1].read_bytes()))
    walls = sorted(
        (e["ts"], e["dur"]) for e in doc["traceEvents"] if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")
    )
    assert resolved.baseline_ms == pytest.approx(sum(ns(d) for _, d in walls[:-1]) / (len(walls) - 1) / 1e6)


def test_a_single_rank_proposal_is_bounded_too() -> None:
    """The same trace read alone (one rank, 900 GEMM names): the one-rank path keeps its bound as before."""
    data = distinct_kernels(Shape(rank=0, world_size=1, steps=3, layers=300))
    b = read_any(data)
    proposal = msgspec.convert({"target": "gemm_r0_307", "k": 2, "profile_id": "one"}, Proposal)
    phases = proposal_from_profile(proposal, b).breakdown or []
    assert len(phases) <= MAX_PHASES
    assert "gemm_r0_307" in {p.name for p in phases}


@pytest.mark.parametrize("shown", [False, True], ids=["whole name", "display name"])
def test_a_kernel_of_a_run_is_named_in_full_though_its_signature_holds_glob_characters(shown: bool) -> None:
    """The elementwise kernel's signature (330 characters, ``char*``) over 8 ranks of 600 GEMM names each: its whole
    name, or the display name the report shows (``… [digest]``), finds it on the straggler. Both were refused as
    globs over more names than the glob budget allows; p is its time per measured step over the step, here."""
    ranks, straggler = 8, 3
    traces = [
        distinct_kernels(
            Shape(
                rank=r,
                world_size=ranks,
                steps=3,
                layers=300,
                compute_scale=1.25 if r == straggler else 1.0,
                lead_scale=1.25,
            )
        )
        for r in range(ranks)
    ]
    b = combine(traces, names=[f"rank-{r}.json" for r in range(ranks)])
    assert len(ELEMENTWISE) > 200
    assert "*" in ELEMENTWISE
    name = short_name(ELEMENTWISE) if shown else ELEMENTWISE
    assert "[" in short_name(ELEMENTWISE)
    resolved = proposal_from_profile(msgspec.convert({"target": name, "k": 2, "profile_id": "run"}, Proposal), b)
    events = [e for e in json.loads(traces[straggler])["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((ns(e["ts"]), ns(e["dur"])) for e in events if e["name"].startswith("ProfilerStep#"))[:-1]
    launch = {e["args"]["correlation"]: ns(e["ts"]) for e in events if e["cat"] == "cuda_runtime"}
    elementwise = [
        ns(e["dur"])
        for e in events
        if e["name"] == ELEMENTWISE and steps[0][0] <= launch[e["args"]["correlation"]] < sum(steps[-1])
    ]
    assert len(elementwise) == 2 * 300
    assert resolved.target == short_name(ELEMENTWISE)
    assert resolved.p == pytest.approx(sum(elementwise) / sum(d for _, d in steps))
    assert resolved.flags.barrier is not None
    assert resolved.flags.barrier.critical_path  # a compute kernel on the straggler


@real
def test_every_device_phase_of_the_two_real_ranks_is_named_by_its_whole_and_its_display_name() -> None:
    """The 198 device phase names of the HTA two-rank set (95 whole names and 133 display names hold `*`, `?` or
    `[`): each found by its whole name and by its display name, as the phase of that name (before: 92 and 130 of
    them refused as globs over the ranks' 120,418 characters of names)."""
    b = combine([p.read_bytes() for p in RANKS], names=[p.name for p in RANKS])
    names = {p.name for r in b.ranks for p in r.phases}
    assert len(names) == 198
    refused = []
    for name in sorted(names):
        for given in (name, short_name(name)):
            proposal = msgspec.convert({"target": given, "k": 2, "profile_id": "run"}, Proposal)
            try:
                resolved = proposal_from_profile(proposal, b)
            except InvalidInput as exc:
                refused.append((given, exc))
                continue
            assert resolved.target == short_name(name)
    assert refused == []


def test_a_kind_with_one_phase_beyond_the_largest_keeps_its_name_when_folded() -> None:
    """100 kernels of 1,000 ns down to 901 ns, an 800 ns copy and a 700 ns memset folded to `MAX_PHASES`: the 39
    kernels beyond the largest 61 (61 + 1 rest + 2 single phases = 64) are one "rest" phase of their summed time,
    and the copy and the memset stay by name (before: "(the rest: 1 copy phases)", "(the rest: 1 other phases)"),
    in a stored profile's fold as in a proposal's."""
    kernels: list[tuple[str, Literal["kernel", "copy", "other"], int]] = [
        (f"k{i:03d}", "kernel", 1_000 - i) for i in range(100)
    ]
    rows = [*kernels, ("H2D copy", "copy", 800), ("Memset (Device)", "other", 700)]
    phases = [Phase(name=n, kind=k, total_ns=t, calls=1, share_of_device=None, share_of_wall=None) for n, k, t in rows]
    proposal = [ProposalPhase(name=n, ms=t / 1e6, kind=k) for n, k, t in rows]
    for folded in (
        [(p.name, p.kind, p.total_ns / 1e6) for p in fold_phases(phases, MAX_PHASES)],
        [(p.name, p.kind, p.ms) for p in fold_proposal_phases(proposal, MAX_PHASES)],
    ):
        assert len(folded) == MAX_PHASES
        assert folded[:61] == [(n, k, t / 1e6) for n, k, t in kernels[:61]]
        assert folded[61:] == [
            (f"{REST_PREFIX}39 kernel phases)", "kernel", pytest.approx(sum(t for _, _, t in kernels[61:]) / 1e6)),
            ("H2D copy", "copy", 800 / 1e6),
            ("Memset (Device)", "other", 700 / 1e6),
        ]


def per_step(trace: bytes) -> dict[int, tuple[int, int, int, int]]:
    """Per measured step (all but the last) of one rank, from the JSON: (wall, compute, collective, GEMM) in ns,
    each the durations of the kernels launched in the step (none overlap on their stream)."""
    events = [e for e in json.loads(trace)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted(
        (ns(e["ts"]), ns(e["dur"]), int(e["name"].split("#")[1]))
        for e in events
        if e["name"].startswith("ProfilerStep#")
    )[:-1]
    launch = {e["args"]["correlation"]: ns(e["ts"]) for e in events if e["cat"] == "cuda_runtime"}
    out = {}
    for start, wall, number in steps:
        kernels = [
            e for e in events if e["cat"] == "kernel" and start <= launch[e["args"]["correlation"]] < start + wall
        ]
        compute = sum(ns(e["dur"]) for e in kernels if not e["name"].startswith("nccl"))
        comm = sum(ns(e["dur"]) for e in kernels if e["name"].startswith("nccl"))
        out[number] = (wall, compute, comm, sum(ns(e["dur"]) for e in kernels if e["name"] == GEMM))
    return out


@functools.cache
def run_of_64() -> tuple[list[bytes], Breakdown]:
    """64 ranks × 10 steps of one layer (0.7 ms), rank 60 the straggler (compute × 1.3), read as one run."""
    traces = [
        trace_of(
            Shape(rank=r, world_size=64, steps=10, layers=1, compute_scale=1.3 if r == 60 else 1.0, lead_scale=1.3)
        )
        for r in range(64)
    ]
    return traces, combine(traces, names=[f"rank-{r:02d}.json" for r in range(64)])


def test_a_run_of_more_step_figures_than_kept_keeps_every_ranks_steps_so_the_straggler_is_measured() -> None:
    """64 ranks × 9 measured steps is 576 step figures, past the 512 kept: rank 60, the straggler, kept none, so a
    proposal on its GEMM took the whole 9-step window for its step (baseline 1.169 ms, not 0.113; p 0.400, not 0.461)
    and steps 1:8 re-read the barrier over the 57 ranks kept (straggler 0, no wait, not 60 and 12.0%). Every rank now
    keeps the same first 8 steps: the straggler's GEMM is measured per step, and the range's barrier over all 64
    ranks is the one computed here."""
    ranks, straggler = 64, 60
    traces, b = run_of_64()
    assert b.barrier is not None
    assert (b.barrier.straggler, b.barrier.steps) == (straggler, 9)
    assert len(b.step_figures) == ranks * 8
    assert {(s.rank, s.number) for s in b.step_figures} == {(r, n) for r in range(ranks) for n in range(1, 9)}
    figures = [per_step(t) for t in traces]
    mine = figures[straggler]
    kept = range(1, 9)
    resolved = proposal_from_profile(msgspec.convert({"target": GEMM, "k": 2, "profile_id": "run"}, Proposal), b)
    assert resolved.p == pytest.approx(sum(mine[n][3] for n in kept) / sum(mine[n][0] for n in kept))
    assert resolved.baseline_ms == pytest.approx(sum(mine[n][0] for n in kept) / 8 / 1e6)
    # Steps 1:8 re-read from the kept figures: the barrier of all 64 ranks over those steps, from its definition.
    ranged = proposal_from_profile(
        msgspec.convert({"target": GEMM, "k": 2, "profile_id": "run", "steps": "1:8"}, Proposal), b
    )
    barrier = ranged.flags.barrier
    assert barrier is not None
    lead = {n: max(f[n][1] for f in figures) for n in kept}
    waits = sum(min(f[n][2], lead[n] - f[n][1]) for f in figures for n in kept)
    walls = sum(f[n][0] for f in figures for n in kept)
    assert (barrier.ranks, barrier.straggler) == (ranks, straggler)
    assert barrier.wait_fraction == pytest.approx(waits / walls)
    assert ranged.p == pytest.approx(resolved.p)


def test_a_distributed_proposals_breakdown_is_of_the_steps_its_p_is_of() -> None:
    """The 64-rank run's straggler GEMM: p is measured on the rank's steps, and so is the breakdown, so the target's ms
    in it over the step are p, the phases add up to the step, and `consistency` has nothing to doubt (before, the
    breakdown was the rank's whole window scaled to a step: 40.0% against p 46.1%)."""
    _, b = run_of_64()
    resolved = proposal_from_profile(
        msgspec.convert({"target": GEMM, "k": 2, "profile_id": "run", "cost_weeks": 1}, Proposal), b
    )
    phases = {p.name: p for p in resolved.breakdown or []}
    assert resolved.baseline_ms is not None
    assert phases[GEMM].ms / resolved.baseline_ms == pytest.approx(resolved.p)
    assert sum(p.ms for p in phases.values()) == pytest.approx(resolved.baseline_ms)
    evaluation = evaluate(resolved, default_policy())
    assert [f.rule for f in evaluation.findings if f.effect == "remeasure"] == []
    assert evaluation.verdict == "fund"


def test_a_kernel_folded_elsewhere_but_named_on_its_rank_keeps_its_step_times_when_stored() -> None:
    """Rank 0 runs 20 GEMMs and 20 small kernels of its own names, rank 1 (the straggler) the usual two, one of its
    small kernels named `e_5` as one of rank 0's. Stored with 16 phases kept, `e_5` is folded in the run's sum and on
    rank 0 but kept by name on rank 1: its step times there were renamed into a "rest" rank 1 does not hold, and a
    proposal on it was refused ("Expected `e_5` to run in the chosen steps on rank 1"). Every rank's step figures
    now name only that rank's own stored phases, and p of `e_5` is its one run over rank 1's two measured steps."""

    def trace(rank: int) -> bytes:
        text = trace_of(
            Shape(rank=rank, world_size=2, steps=3, layers=10, compute_scale=1.5 if rank else 1.0, lead_scale=1.5)
        ).decode()
        gemms, smalls = itertools.count(), itertools.count()
        if rank == 0:
            text = re.sub(f'"name": "{GEMM}"', lambda _: f'"name": "g_{next(gemms)}"', text)
            return re.sub(re.escape(f'"name": "{ELEMENTWISE}"'), lambda _: f'"name": "e_{next(smalls)}"', text).encode()
        first = re.escape(f'"name": "{ELEMENTWISE}"')
        return re.sub(first, lambda m: '"name": "e_5"' if next(smalls) == 0 else m.group(0), text).encode()

    traces = [trace(0), trace(1)]
    b = combine(traces, names=["rank-0.json", "rank-1.json"])
    stored = fold_breakdown(b, limit=16)
    assert "e_5" not in {p.name for p in stored.phases}
    assert "e_5" not in {p.name for p in stored.ranks[0].phases}
    assert "e_5" in {p.name for p in stored.ranks[1].phases}
    for rank in stored.ranks:
        names = {p.name for p in rank.phases}
        assert all(set(s.phases) <= names for s in stored.step_figures if s.rank == rank.rank)
    steps = per_step(traces[1])
    events = [e for e in json.loads(traces[1])["traceEvents"] if e.get("ph") == "X"]
    e_5 = next(ns(e["dur"]) for e in events if e["name"] == "e_5")
    proposal = msgspec.convert({"target": "e_5", "k": 2, "profile_id": "run"}, Proposal)
    for breakdown in (b, stored):
        resolved = proposal_from_profile(proposal, breakdown)
        assert resolved.p == pytest.approx(e_5 / sum(wall for wall, _, _, _ in steps.values()))


def test_steps_a_rank_of_a_stored_run_does_not_hold_are_refused_not_measured_without_it() -> None:
    """Four ranks, rank 2's trace without its ProfilerStep#2 annotation (the profiler missed it): reading the traces
    with steps 2 refuses rank 2's file, and a proposal naming steps 2 of the stored run now does too, naming the rank
    and the steps it holds (before: the barrier of ranks 0, 1 and 3 alone, `ranks` 3 of 4). Steps 1:3 still measure
    all four ranks over the steps they share, 1 and 3, against the waits computed here."""

    def trace(rank: int) -> bytes:
        doc = json.loads(
            trace_of(
                Shape(
                    rank=rank, world_size=4, steps=4, layers=2, compute_scale=1.5 if rank == 1 else 1.0, lead_scale=1.5
                )
            )
        )
        if rank == 2:
            doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("name") != "ProfilerStep#2"]
        return json.dumps(doc).encode()

    traces = [trace(r) for r in range(4)]
    b = combine(traces, names=[f"rank-{r}.json" for r in range(4)])
    with pytest.raises(
        InvalidInput, match=r"no steps 2:2 on rank 2 \(rank-2.json\); it holds the figures of steps 1, 3"
    ):
        proposal_from_profile(msgspec.convert({"target": GEMM, "k": 2, "profile_id": "run", "steps": "2"}, Proposal), b)
    ranged = proposal_from_profile(
        msgspec.convert({"target": GEMM, "k": 2, "profile_id": "run", "steps": "1:3"}, Proposal), b
    )
    barrier = ranged.flags.barrier
    assert barrier is not None
    figures = [per_step(t) for t in traces]
    shared = (1, 3)
    lead = {n: max(f[n][1] for f in figures) for n in shared}
    waits = sum(min(f[n][2], lead[n] - f[n][1]) for f in figures for n in shared)
    assert (barrier.ranks, barrier.straggler) == (4, 1)
    assert barrier.wait_fraction == pytest.approx(waits / sum(f[n][0] for f in figures for n in shared))
