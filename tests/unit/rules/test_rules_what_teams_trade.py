"""Proposals whose value or cost is not "time saved on GPUs we pay for, bought with engineer-weeks": a change that
pushes memory past the device, shares that contradict each other, costs in GPU-hours and people, a slowdown that
buys an SLO or capacity, devices the company does not own, a kernel near its roofline, and sentences that fit.

Figures are derived here from the policy's prices and the rules' docstrings, not read back from the engine.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, review
from worthit.service.cli import parser
from worthit.service.gate.command import run as gate_run

GPU_HOUR = 2.0
WEEK_USD = 5000.0

# --- memory read both ways --------------------------------------------------------------------------------------------


def test_turning_off_activation_recompute_past_the_device_is_declined_whatever_its_speed() -> None:
    """Recompute off: 48 GB → 86 GB on an 80 GB device with 10 GB kept free; a quarter of a 1.2 s step removed on
    512 GPUs would be $2.2M a year, but 86 GB is 16 GB over the 70 GB usable: it does not run."""
    evaluation = review(
        {
            "target": "recompute_forward",
            "p": 0.25,
            "k": "inf",
            "baseline_ms": 1200,
            "cost_weeks": 1,
            "flags": {"fleet_gpus": 512},
            "goal": {"memory_required_gb": 48, "memory_after_gb": 86, "device_memory_gb": 80, "memory_headroom_gb": 10},
        }
    )
    assert evaluation.verdict == "decline"
    assert evaluation.deciding_rule == "memory_fit"
    usable = 80 - 10
    figures = finding(evaluation, "memory_fit").figures
    assert figures["memory_over_gb"] == pytest.approx(86 - usable)
    assert (figures["gpus_before"], figures["gpus_after"]) == (1, 2)
    assert "48 GB to 86 GB, 16 GB over the 70 GB a device can use, so it does not run" in evaluation.statement
    assert "smaller micro-batch" in evaluation.statement
    assert_one_sentence(evaluation.statement)
    # the capacity it would free is said to be moot, never a reason to fund
    assert finding(evaluation, "fleet_multiplication").effect == "info"
    assert evaluation.reasoning is not None
    assert evaluation.reasoning[1].rules[0] == "memory_fit"


def test_a_doubled_batch_that_needs_a_third_gpu_per_replica_does_not_run_on_two() -> None:
    """A replica on 2 × 141 GB GPUs (180 GB needed) doubles its batch to 300 GB: over the 282 GB its two can hold."""
    evaluation = review(
        {
            "target": "decode",
            "p": 0.6,
            "k": 1.4,
            "cost_weeks": 2,
            "goal": {"memory_required_gb": 180, "memory_after_gb": 300, "device_memory_gb": 141},
        }
    )
    assert evaluation.verdict == "decline"
    figures = finding(evaluation, "memory_fit").figures
    assert figures["memory_room_gb"] == pytest.approx(2 * 141)
    assert figures["memory_over_gb"] == pytest.approx(300 - 282)
    assert "the 282 GB the replica's 2 GPUs can use" in evaluation.statement


def test_a_larger_need_that_still_fits_is_judged_on_its_time() -> None:
    """48 GB → 62 GB on a 70 GB-usable device still fits: the speed decides, as before."""
    evaluation = review(
        {
            "target": "recompute_forward",
            "p": 0.25,
            "k": "inf",
            "baseline_ms": 1200,
            "cost_weeks": 1,
            "goal": {"memory_required_gb": 48, "memory_after_gb": 62, "device_memory_gb": 80, "memory_headroom_gb": 10},
        }
    )
    assert evaluation.verdict == "fund"
    assert finding(evaluation, "memory_fit").effect == "info"


# --- inconsistent shares are decisions -------------------------------------------------------------------------------

_INCLUSIVE = {
    "target": "attention",
    "p": 0.41,
    "k": 1.5,
    "baseline_ms": 80,
    "cost_weeks": 6,
    "more_targets": [{"name": "mlp", "p": 0.52, "k": 1.3}, {"name": "norm", "p": 0.31, "k": 2}],
}


def test_targets_whose_shares_add_up_past_the_step_are_a_remeasure_naming_the_sum_and_the_step() -> None:
    """41% + 52% + 31% of an 80 ms step (inclusive shares from a summary table): 124%, 99.2 ms of 80 ms."""
    evaluation = review(_INCLUSIVE)
    assert evaluation.verdict == "remeasure"
    assert evaluation.deciding_rule == "consistency"
    total = 0.41 + 0.52 + 0.31
    assert finding(evaluation, "consistency").figures["targets_share"] == pytest.approx(total)
    assert f"add up to 124% of the step ({total * 80:.1f} ms of 80 ms)" in evaluation.statement
    assert_one_sentence(evaluation.statement)
    assert evaluation.reasoning is not None
    assert evaluation.reasoning[0].rules == ["consistency"]


def test_the_gate_fails_inconsistent_shares_as_a_decision_not_as_a_gate_that_cannot_run(tmp_path: Path) -> None:
    """The gate exits 1 (the remeasure verdict fails it), never 2 (a gate that cannot run)."""
    body = tmp_path / "body.md"
    body.write_text(
        "```worthit\ntarget: attention\np: 41%\nk: 1.5\nbaseline_ms: 80\ncost_weeks: 6\nmore_targets:\n"
        "  - {name: mlp, p: 52%, k: 1.3}\n  - {name: norm, p: 31%, k: 2}\n```\n",
        encoding="utf-8",
    )
    out = io.StringIO()
    code = gate_run(parser().parse_args(["gate", "--body", str(body)]), out, {})
    assert code == 1
    assert "::error title=worthit%3A remeasure::" in out.getvalue()
    assert "add up to 124%25 of the step" in out.getvalue()


def test_p_against_its_own_breakdown_is_a_remeasure_naming_both() -> None:
    """p = 30% beside a breakdown that gives the target 18 ms of 100 ms: both named."""
    evaluation = review(
        {
            "target": "softmax",
            "p": 0.3,
            "k": 2,
            "baseline_ms": 100,
            "breakdown": [{"name": "softmax", "ms": 18}, {"name": "gemm", "ms": 82}],
        }
    )
    assert evaluation.verdict == "remeasure"
    assert "p is 30% but the breakdown gives softmax 18 ms of 100 ms, 18%" in evaluation.statement


# --- costs in every unit ------------------------------------------------------------------------------------------


def test_a_distillation_run_that_costs_more_compute_than_it_saves_is_declined() -> None:
    """150,000 GPU-hours to distill a draft model; decode 50% of the step at 1/0.92 saves 4% on 256 GPUs: 10.24
    GPU-equivalents, 89,702 GPU-hours a year, less than spent. 3 people for 6 weeks: 18 engineer-weeks."""
    evaluation = review(
        {
            "target": "decode",
            "p": 0.5,
            "k": 1 / 0.92,
            "cost_people": 3,
            "cost_calendar_weeks": 6,
            "cost_gpu_hours": 150_000,
            "flags": {"fleet_gpus": 256, "recurring": True},
        }
    )
    saving = 0.5 * (1 - 0.92)
    saved_hours = 256 * saving * 8760
    engineering, compute = 18 * WEEK_USD, 150_000 * GPU_HOUR
    assert evaluation.verdict == "decline"
    compute_finding = finding(evaluation, "one_off_compute")
    assert compute_finding.figures["saved_gpu_hours"] == pytest.approx(saved_hours)
    assert "costs more compute than it will ever save" in compute_finding.message
    assert finding(evaluation, "fleet_multiplication").figures["engineering_cost_usd"] == pytest.approx(
        engineering + compute
    )
    assert "$390k of engineering and compute" in evaluation.statement
    assert evaluation.reasoning is not None
    cost = evaluation.reasoning[2]
    assert cost.answer.startswith(
        "$390k in all: 18 engineer-weeks (3 people for 6 calendar weeks) to build and 150,000 GPU-hours of one-off "
        "compute ($300k)."
    )
    assert (cost.figures["people"], cost.figures["calendar_weeks"], cost.figures["cost_weeks"]) == (3, 6, 18)
    assert cost.figures["cost_usd"] == pytest.approx(engineering + compute)


def test_the_same_distillation_on_a_fleet_that_earns_it_back_is_funded() -> None:
    """On 2,048 GPUs the 4% frees 81.9 GPU-equivalents, $1.43M a year, against $390k."""
    evaluation = review(
        {
            "target": "decode",
            "p": 0.5,
            "k": 1 / 0.92,
            "cost_weeks": 18,
            "cost_gpu_hours": 150_000,
            "flags": {"fleet_gpus": 2048, "recurring": True},
        }
    )
    assert evaluation.verdict == "fund"
    assert finding(evaluation, "one_off_compute").effect == "info"


def test_compute_without_a_fleet_is_funded_only_over_the_break_even_fleet() -> None:
    """No fleet: the whole cost in GPU-hours ($15k + $300k = 157,500) over 4% of a year's GPU-hours: 449.5 GPUs."""
    evaluation = review({"target": "decode", "p": 0.5, "k": 1 / 0.92, "cost_weeks": 3, "cost_gpu_hours": 150_000})
    fleet = (3 * WEEK_USD + 150_000 * GPU_HOUR) / GPU_HOUR / (0.04 * 8760)
    assert evaluation.verdict == "fund_if"
    assert finding(evaluation, "one_off_compute").figures["break_even_fleet_gpus"] == pytest.approx(fleet)
    assert "at least 450 GPUs" in evaluation.statement


def test_people_and_calendar_weeks_must_agree_with_a_stated_cost() -> None:
    """3 people × 6 weeks is 18 engineer-weeks: a `cost_weeks` of 6 beside them is refused naming both fields."""
    import msgspec

    from worthit.rules.model import Proposal

    with pytest.raises(msgspec.ValidationError, match="cost_people"):
        msgspec.convert(
            {"p": 0.2, "k": 2, "cost_weeks": 6, "cost_people": 3, "cost_calendar_weeks": 6},
            Proposal,
        )


def test_a_follow_up_returns_per_engineer_week_on_the_cost_stage_3_counts() -> None:
    """A hand-asm follow-up: 4 weeks to build + 2 a year of upkeep = 6; the return is the last 2.6% over 6 weeks."""
    evaluation = review(
        {
            "target": "attention_softmax",
            "p": 0.026,
            "k": 2,
            "prior_k": 10,
            "baseline_ms": 81.1,
            "cost_weeks": 4,
            "flags": {"portability": "hand_asm"},
        }
    )
    assert finding(evaluation, "ceiling").figures["follow_up_best_rate"] == pytest.approx(0.026 / 6)
