"""Proposals whose value or cost is not "time saved on GPUs we pay for, bought with engineer-weeks": a change that
pushes memory past the device, shares that contradict each other, costs in GPU-hours and people, a slowdown that
buys an SLO or capacity, devices the company does not own, a kernel near its roofline, and sentences that fit.

Figures are derived here from the policy's prices and the rules' docstrings, not read back from the engine.
"""

from __future__ import annotations

import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, review

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
