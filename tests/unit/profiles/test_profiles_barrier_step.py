"""Behind a barrier the step is the latest arrival: a generated 8-rank run where rank 6 is the straggler (compute ×
1.3) and each rank runs its own GEMM variant (`gemm_v{rank % 4}`: gemm_v1 on ranks 1 and 5 only, gemm_v2 on ranks 2
and 6), or the one GEMM every rank runs. Every figure is computed here from the JSON: each rank's compute and target
time per measured step, and the step after the change as max over ranks of compute − target · (1 − 1/k)."""

from __future__ import annotations

import functools
import io
import json
import math
import random
import re

import msgspec
import pytest

from tests.kineto_traces import GEMM, Shape, write
from worthit.rules.engine import evaluate
from worthit.rules.model import Arrival, Evaluation, Proposal
from worthit.rules.policy import default_policy
from worthit.rules.profiles import combine
from worthit.rules.profiles.model import Breakdown
from worthit.rules.profiles.proposal import proposal_from_profile, setting_ranks
from worthit.rules.text import ms, pct

RANKS, STRAGGLER = 8, 6
TIGHT = 1e-9


def _trace(rank: int, *, variants: bool) -> bytes:
    out = io.StringIO()
    shape = Shape(
        rank=rank,
        world_size=RANKS,
        steps=5,
        layers=20,
        compute_scale=1.3 if rank == STRAGGLER else 1.0,
        lead_scale=1.3,
        training=True,
        correlation_stride=5,
        id_base=40_000,
    )
    write(out, shape)
    text = out.getvalue()
    if variants:
        text = re.sub(rf'"name": "{GEMM}"', f'"name": "gemm_v{rank % 4}"', text)
    return text.encode()


@functools.cache
def run(*, variants: bool) -> tuple[tuple[bytes, ...], Breakdown]:
    traces = tuple(_trace(r, variants=variants) for r in range(RANKS))
    return traces, combine(list(traces), names=[f"rank-{r}.json" for r in range(RANKS)])


def _ns(us: float) -> int:
    return round(us * 1000)


def per_rank(trace: bytes, target: str) -> tuple[float, float, float]:
    """One rank's mean over its measured steps (all but the last), in ms: the step's wall, the compute launched in it
    (kernels other than NCCL's, which never overlap on their stream), and the target's part of that compute."""
    events = [e for e in json.loads(trace)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((_ns(e["ts"]), _ns(e["dur"])) for e in events if e["name"].startswith("ProfilerStep#"))[:-1]
    launch = {e["args"]["correlation"]: _ns(e["ts"]) for e in events if e["cat"] == "cuda_runtime"}
    walls, computes, targets = [], [], []
    for start, wall in steps:
        kernels = [
            e for e in events if e["cat"] == "kernel" and start <= launch[e["args"]["correlation"]] < start + wall
        ]
        walls.append(wall)
        computes.append(sum(_ns(e["dur"]) for e in kernels if not e["name"].startswith("nccl")))
        targets.append(sum(_ns(e["dur"]) for e in kernels if e["name"] == target))
    n = len(steps) * 1e6
    return sum(walls) / n, sum(computes) / n, sum(targets) / n


def expected(traces: tuple[bytes, ...], target: str, k: float) -> dict[str, float]:
    """The figures from their definitions: p on the rank that runs the target (the straggler first), the step every
    rank waits for, and the step after the change, set by the latest arrival."""
    ranks = {r: per_rank(t, target) for r, t in enumerate(traces)}
    mine = STRAGGLER if ranks[STRAGGLER][2] > 0 else min(r for r, f in ranks.items() if f[2] > 0)
    step, _, own = ranks[mine]
    cut = 1.0 if math.isinf(k) else 1 - 1 / k
    before = max(c for _, c, _ in ranks.values())
    after = max(c - t * cut for _, c, t in ranks.values())
    floor = max(c - t for _, c, t in ranks.values())
    return {
        "rank": mine,
        "p": own / step,
        "step": step,
        "own": own,
        "new_ms": step - (before - after),
        "floor_ms": step - (before - floor),
        "plain_new_ms": step * (1 - own / step * cut),
        "after": after,
        "setter": min(r for r, (_, c, t) in ranks.items() if c - t * cut == after),
        "straggler_compute": before,
    }


def review(target: str, k: float | str, *, variants: bool = True) -> Evaluation:
    _, b = run(variants=variants)
    raw = {"target": target, "k": k, "profile_id": "run", "cost_weeks": 2}
    resolved = proposal_from_profile(msgspec.convert(raw, Proposal), b)
    return evaluate(resolved, default_policy())


def test_a_kernel_off_the_straggler_saves_the_step_nothing() -> None:
    """gemm_v1 runs on ranks 1 and 5, rank 6 sets the step: 2× faster, rank 1 only waits longer at the all-reduce.
    Before: fund, "3.4 ms → 2.2 ms" (70.4% of rank 1's step at 2×). Now the step's saving is 0 and the answer is a
    redirect to the straggler's compute, saying how much longer rank 1 would wait."""
    traces, _ = run(variants=True)
    want = expected(traces, "gemm_v1", 2)
    assert want["rank"] == 1
    assert want["new_ms"] == want["step"]  # max over ranks: rank 6's arrival is unchanged
    evaluation = review("gemm_v1", 2)
    a = evaluation.amdahl
    assert a.baseline_ms == pytest.approx(want["step"], rel=TIGHT)
    assert a.new_ms == pytest.approx(want["new_ms"], rel=TIGHT)
    assert a.saving_ms == 0
    assert a.ceiling_speedup == 1
    assert evaluation.verdict == "redirect"
    assert evaluation.deciding_rule == "barrier_denominator"
    figures = next(f for f in evaluation.findings if f.rule == "barrier_denominator").figures
    longer = want["own"] / 2
    assert figures["longer_wait_ms"] == pytest.approx(longer, rel=TIGHT)
    assert (figures["rank"], figures["step_setter"]) == (1, STRAGGLER)
    assert f"rank 1 waits {ms(longer)} more" in evaluation.statement  # 1.2 ms
    compute = want["straggler_compute"]
    assert f"rank 6's compute at {pct(compute / want['step'])} ({ms(compute)})" in evaluation.statement
    assert "saves nothing" in evaluation.statement
    answers = {stage.stage: stage for stage in evaluation.reasoning or ()}
    assert answers["alternative"].answer.startswith("Yes: rank 6's compute")
    assert answers["alternative"].figures["alternative_ms"] == pytest.approx(compute, rel=TIGHT)


def test_a_slower_kernel_off_the_straggler_costs_the_step_only_past_the_straggler() -> None:
    """At 0.5×, rank 1's 2.4 ms of gemm_v1 become 4.8 ms: rank 1 then arrives last, and the step grows by what its
    arrival passes rank 6's, not by the whole 2.4 ms."""
    traces, _ = run(variants=True)
    for k in (0.5, 0.9):
        want = expected(traces, "gemm_v1", k)
        a = review("gemm_v1", k).amdahl
        assert a.new_ms == pytest.approx(want["new_ms"], rel=TIGHT)
    assert expected(traces, "gemm_v1", 0.9)["new_ms"] == expected(traces, "gemm_v1", 0.9)["step"]  # absorbed


def test_a_kernel_on_the_straggler_is_capped_by_the_next_slowest_rank() -> None:
    """gemm_v2 is 3.12 ms of rank 6's 3.276 ms of compute. 2× faster, rank 6 arrives at 1.716 ms, before the other
    ranks' 2.52 ms: the step reaches 2.651 ms, not the 1.847 ms the straggler's own Amdahl claimed, and the statement
    says which rank then sets it. At zero the floor is the same 2.651 ms (ceiling 1.285×)."""
    traces, _ = run(variants=True)
    want = expected(traces, "gemm_v2", 2)
    assert (want["rank"], want["setter"]) == (STRAGGLER, 0)
    assert want["new_ms"] > want["plain_new_ms"]
    evaluation = review("gemm_v2", 2)
    a = evaluation.amdahl
    assert a.new_ms == pytest.approx(want["new_ms"], rel=TIGHT)  # 2.651
    assert a.saving_ms == pytest.approx(want["step"] - want["new_ms"], rel=TIGHT)
    assert a.ceiling_speedup == pytest.approx(want["step"] / want["floor_ms"], rel=TIGHT)
    assert a.remaining_ms == pytest.approx(want["new_ms"] - want["floor_ms"], abs=1e-12)
    assert evaluation.verdict == "fund"
    assert f"not {ms(want['plain_new_ms'])}" in evaluation.statement  # 1.8 ms
    assert f"rank 0's {ms(want['after'])} of compute then sets it" in evaluation.statement
    amdahl_figures = next(f for f in evaluation.findings if f.rule == "amdahl").figures
    assert amdahl_figures["target_p"] == pytest.approx(want["p"], rel=TIGHT)
    assert amdahl_figures["uncapped_new_ms"] == pytest.approx(want["plain_new_ms"], rel=TIGHT)


@pytest.mark.parametrize("k", [1.2, 4, "inf"])
def test_the_straggler_saves_in_full_until_the_next_slowest_rank_sets_the_step(k: float | str) -> None:
    """At 1.2× rank 6 still arrives last (2.756 ms): the saving is the target's own, but the ceiling is still the
    next-slowest rank's; at 4× and removed, the cap."""
    traces, _ = run(variants=True)
    kk = math.inf if k == "inf" else float(k)
    want = expected(traces, "gemm_v2", kk)
    a = review("gemm_v2", k).amdahl
    assert a.new_ms == pytest.approx(want["new_ms"], rel=TIGHT)
    assert a.ceiling_speedup == pytest.approx(want["step"] / want["floor_ms"], rel=TIGHT)
    if k == 1.2:
        assert want["new_ms"] == pytest.approx(want["plain_new_ms"], rel=TIGHT)


def test_a_kernel_on_every_rank_saves_in_full() -> None:
    """The GEMM every rank runs, the straggler's 1.3× longer: every arrival moves, the straggler's most, so it stays
    last and the step saves the straggler's own Amdahl figure, which is also the max over ranks."""
    traces, _ = run(variants=False)
    want = expected(traces, GEMM, 2)
    assert want["rank"] == STRAGGLER
    assert want["new_ms"] == pytest.approx(want["plain_new_ms"], rel=TIGHT)
    evaluation = review(GEMM, 2, variants=False)
    a = evaluation.amdahl
    assert (a.p, a.k) == (pytest.approx(want["p"], rel=TIGHT), 2.0)
    assert a.new_ms == pytest.approx(want["new_ms"], rel=TIGHT)
    assert a.ceiling_speedup == pytest.approx(1 / (1 - want["p"]), rel=TIGHT)
    assert evaluation.verdict == "fund"
    assert "sets it" not in evaluation.statement


def test_the_arrivals_a_proposal_carries_are_the_ranks_that_can_set_the_step() -> None:
    """Of eight ranks, gemm_v2's proposal carries rank 6 (last for a small k) and rank 0 (last past 1.32×, the lowest
    of the six equal ranks): rank 2, which also runs gemm_v2, never arrives last."""
    _, b = run(variants=True)
    raw = {"target": "gemm_v2", "k": 2, "profile_id": "run"}
    barrier = proposal_from_profile(msgspec.convert(raw, Proposal), b).flags.barrier
    assert barrier is not None
    assert barrier.arrivals is not None
    assert [a.rank for a in barrier.arrivals] == [STRAGGLER, 0]
    assert (barrier.rank, barrier.critical_path) == (STRAGGLER, True)


def _latest(lines: list[Arrival], cut: float) -> float:
    return max(a.compute_ms - a.target_ms * cut for a in lines)


def test_setting_ranks_keeps_the_latest_arrival_at_every_k() -> None:
    """Random ranks: the envelope kept gives the same latest arrival as all ranks, for every k (cut 1 − 1/k ≤ 1);
    over a limit it never under-counts the step after a speedup (cut in [0, 1])."""
    rng = random.Random(7)
    for _ in range(200):
        lines = []
        for rank in range(rng.randint(1, 300)):
            compute = rng.uniform(1, 10)
            lines.append(Arrival(rank=rank, compute_ms=compute, target_ms=compute * rng.choice([0, rng.random()])))
        kept = setting_ranks(lines)
        assert len(kept) <= 64
        assert len({a.rank for a in kept}) == len(kept)
        for cut in [-3.0, -1.0, -0.25, 0.0, 0.1, 0.5, 0.9, 1.0]:
            assert _latest(kept, cut) == pytest.approx(_latest(lines, cut), rel=1e-12)
        small = setting_ranks(lines, limit=2)
        assert len(small) <= 2
        for cut in [0.0, 0.3, 0.7, 1.0]:
            assert _latest(small, cut) >= _latest(lines, cut) - 1e-12


def test_the_chart_draws_the_step_the_decision_states() -> None:
    """The page's before/after bars are the rank's breakdown; behind the barrier the after bar is the decision's new
    step (2.651 ms, not the 0.287 ms of gemm_v2 removed from rank 6's) and the ceiling the next-slowest rank's."""
    from worthit.service.present.charts import decision_bars, decision_chart

    _, b = run(variants=True)
    for target in ("gemm_v1", "gemm_v2"):
        raw = {"target": target, "k": 2, "profile_id": "run", "cost_weeks": 2}
        resolved = proposal_from_profile(msgspec.convert(raw, Proposal), b)
        a = evaluate(resolved, default_policy()).amdahl
        bars, marker, unit = decision_bars(resolved, a)
        assert unit == "ms"
        assert bars[1].total == pytest.approx(a.new_ms, rel=TIGHT)
        assert marker is not None
        assert a.ceiling_speedup is not None
        assert marker.value == pytest.approx(bars[0].total / a.ceiling_speedup, rel=TIGHT)
        assert f"making {target} 2× faster" in decision_chart(resolved, a)
