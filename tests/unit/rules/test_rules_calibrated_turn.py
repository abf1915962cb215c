"""A calibrated decision that turns on the calibration says which bar the calibrated saving falls under."""

from __future__ import annotations

import pytest

from worthit.rules.calibration import Calibration
from worthit.rules.engine import evaluate
from worthit.rules.model import Proposal, Scope
from worthit.rules.policy import default_policy


def _turned(proposal: Proposal, ratio: float) -> tuple[str, str, float, float]:
    calibration = Calibration(ratio=ratio, outcomes=4, team="optimists", workload="inference")
    result = evaluate(proposal, default_policy(), calibration=calibration)
    worth = next(stage for stage in result.reasoning if stage.stage == "worth")
    assert worth.answer == result.statement  # the worth stage decides, on the calibrated figures
    assert len(result.statement) <= 300
    return result.verdict, result.statement, result.amdahl.saving_ms or 0.0, result.amdahl.rate or 0.0


def test_a_turn_on_the_rate_names_the_rate_and_the_bar() -> None:
    """2.5% at 10× for 2.2 weeks: 2.25 ms, 1.02 ms a week, funded; at the median 0.5× it is 5×: 2.5 × 0.8 = 2 ms,
    above the 1% floor but 2 / 2.2 = 0.909 ms a week under the 1 ms bar, which the statement now says."""
    proposal = Proposal(target="layernorm", p=0.025, k=10, baseline_ms=100, cost_weeks=2.2, team="optimists")
    verdict, statement, saving, rate = _turned(proposal, 0.5)
    assert (verdict, saving, rate) == ("decline", pytest.approx(2.0), pytest.approx(2 / 2.2))
    assert statement == (
        "At the 0.5× of estimated k that team optimists realized on inference (4 outcomes), 10× becomes 5× and the "
        "verdict turns from fund to decline: 5× on 2.5% of the step saves 2% of the step, 909.1 µs per "
        "engineer-week against the 1 ms the policy funds."
    )


def test_a_turn_under_the_noise_floor_names_the_floor() -> None:
    """1.5% at 10× for a week: 1.35 ms, funded; at the median 0.2× it is 2×: 1.5 × 0.5 = 0.75% of the step, under
    the policy's 1% noise floor, which the statement now says instead of ending on the bare saving."""
    proposal = Proposal(target="small_kernel", p=0.015, k=10, baseline_ms=100, cost_weeks=1, team="optimists")
    verdict, statement, saving, _ = _turned(proposal, 0.2)
    assert (verdict, saving) == ("decline", pytest.approx(100 * 0.015 * (1 - 1 / 2)))
    assert default_policy().noise_floor == 0.01
    assert statement == (
        "At the 0.2× of estimated k that team optimists realized on inference (4 outcomes), 10× becomes 2× and the "
        "verdict turns from fund to decline: 2× on 1.5% of the step saves 0.75% of the step, under the 1% noise "
        "floor."
    )


def test_a_turn_under_the_floor_on_a_narrower_scope_names_the_runs_share() -> None:
    """p of device activity 6%, end to end 1.2%: at 0.2× of 10× (2×) it saves 3% of device activity but 0.6% of
    the run, and the floor is judged on the run's share, which the statement gives before naming the floor."""
    proposal = Proposal(
        target="small_kernel",
        p=0.06,
        p_end_to_end=0.012,
        k=10,
        baseline_ms=100,
        cost_weeks=1,
        team="optimists",
        scope=Scope(measured="device_activity"),
    )
    verdict, statement, _, _ = _turned(proposal, 0.2)
    assert verdict == "decline"
    assert statement.endswith(", 0.6% of the run, under the 1% noise floor."), statement
