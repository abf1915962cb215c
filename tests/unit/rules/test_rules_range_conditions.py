"""A range of p or k: a condition a reviewer can sign holds over the whole range, and a range straddling the bar is
funded on that condition (PRODUCT §3, stage 5), whatever its midpoint argues.

The bar in every case is the default policy's rate, 1% of the step per engineer-week (2% of the step over 2 weeks;
the noise floor, 1%, is below it), so a corner passes when p · (1 − 1/k) ≥ 0.02. Break-evens are solved here.
"""

from __future__ import annotations

import pytest

from tests.unit.rules.helpers import finding, review

BAR = 0.01 * 2  # min_rate × cost_weeks: the saving 2 weeks must buy


def _proposal(p: object, k: object, baseline_ms: float = 50) -> dict[str, object]:
    return {
        "target": "rope",
        "p": p,
        "k": k,
        "baseline_ms": baseline_ms,
        "cost_weeks": 2,
        "scope": {"method": "timeline"},
    }


def test_a_straddling_range_whose_midpoint_fails_is_funded_on_its_break_even() -> None:
    """p 1–4.5% at 3×: the midpoint 2.75% saves 1.83% (< 2%, declined before), 4.5% saves 3%; the break-even is
    p = 0.02 / (1 − 1/3) = 3%, and the midpoint's rate objection is overridden by it."""
    evaluation = review(_proposal({"low": 0.01, "high": 0.045}, 3, baseline_ms=20))
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "uncertainty"
    assert evaluation.holds_across_range is False
    assert finding(evaluation, "uncertainty").figures["break_even_p"] == pytest.approx(BAR / (1 - 1 / 3), rel=2e-3)
    assert finding(evaluation, "rate_of_return").overridden_by == "uncertainty"
    assert evaluation.statement.startswith("Fund if a timeline shows p ≥ 3%:")
    assert evaluation.reasoning[4].answer == evaluation.statement
