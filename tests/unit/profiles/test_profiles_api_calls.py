"""A runtime API call's total is host time in the runtime, not a phase to speed up (the README's profile example)."""

from __future__ import annotations

from pathlib import Path

from worthit.rules.engine import evaluate
from worthit.rules.model import Proposal
from worthit.rules.policy import default_policy
from worthit.rules.profiles import combine
from worthit.rules.profiles.proposal import proposal_from_profile
from worthit.service.present import render


def _seed_review(data_dir: Path) -> tuple[Proposal, str, list[str]]:
    names = ("kernel_trace.csv", "memory_copy_trace.csv", "hip_api_stats.csv")
    breakdown = combine([(data_dir / "seed_part2" / name).read_bytes() for name in names])
    proposal = proposal_from_profile(Proposal(target="vector_add", k=10, profile_id="seed_part2"), breakdown)
    evaluation = evaluate(proposal, default_policy())
    return proposal, render.terminal(evaluation), [finding.rule for finding in evaluation.findings]


def test_api_call_totals_are_one_rest_phase_no_check_proposes(data_dir: Path) -> None:
    """hipGetDeviceCount (30 ms, one call, summed in hip_api_stats.csv) was proposed by bigger_target as the larger
    target; the calls now count as one "rest" phase (their time kept), and the seed's sentence is unchanged."""
    proposal, text, rules = _seed_review(data_dir)
    assert proposal.breakdown is not None
    names = {phase.name: phase for phase in proposal.breakdown}
    assert "hipGetDeviceCount" not in " ".join(names)
    [calls] = [phase for name, phase in names.items() if "api phases" in name]
    # hipGetDeviceCount 30, hipDeviceSynchronize 9.6, hipStreamSynchronize 9.0, hipLaunchKernel 0.064
    assert calls.ms == 30 + 9.6 + 9.0 + 0.064
    assert calls.name == "(the rest: 4 api phases, summed)"
    assert "bigger_target" not in rules
    assert "hipGetDeviceCount" not in text
    assert "the 84.6% that is allocation and host↔device copy is where the week should go" in text


def test_the_time_row_shows_the_change(data_dir: Path) -> None:
    """3.607 ms less 39.8 µs: written `3.61 ms → 3.57 ms`, not `3.6 ms → 3.6 ms`, in the figures and the sentence."""
    _, text, _ = _seed_review(data_dir)
    assert "  time               3.61 ms → 3.57 ms\n" in text
    assert "from 3.61 ms to 3.57 ms (1.011×)" in text
