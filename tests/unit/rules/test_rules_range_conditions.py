"""A range of p or k: a condition a reviewer can sign holds over the whole range, and a range straddling the bar is
funded on that condition (PRODUCT §3, stage 5), whatever its midpoint argues.

The bar in every case is the default policy's rate, 1% of the step per engineer-week (2% of the step over 2 weeks;
the noise floor, 1%, is below it), so a corner passes when p · (1 − 1/k) ≥ 0.02. Break-evens are solved here.
"""

from __future__ import annotations

import math

import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, review

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


def test_the_break_even_k_is_taken_at_the_low_end_of_p() -> None:
    """p 5–8%, k 1.2–3×: at p = 5% k must reach 1 / (1 − 0.02/0.05) = 1.667 (the midpoint p, 6.5%, would have
    asked only 1 / (1 − 0.02/0.065) = 1.444, which at 5% saves 1.54% and fails)."""
    evaluation = review(_proposal({"low": 0.05, "high": 0.08}, {"low": 1.2, "high": 3}))
    assert evaluation.verdict == "fund_if"
    edge = finding(evaluation, "uncertainty").figures["break_even_k"]
    assert edge == pytest.approx(1 / (1 - BAR / 0.05), rel=2e-3)
    assert 0.05 * (1 - 1 / edge) >= BAR
    assert "k ≥ 1.67, the break-even at p = 5% (the low end of its range)" in evaluation.statement
    assert_one_sentence(evaluation.statement)


def test_when_even_the_highest_k_fails_at_the_lowest_p_the_condition_is_on_p() -> None:
    """p 2–8%, k 1.5–3×: at 2% even 3× saves 1.33% (< 2%), so no k carries the range (the midpoint's k ≥ 1.67 was
    said before); at 1.5× p must reach 0.02 / (1 − 1/1.5) = 6%, which every k of the range then clears."""
    evaluation = review(_proposal({"low": 0.02, "high": 0.08}, {"low": 1.5, "high": 3}))
    assert evaluation.verdict == "fund_if"
    uncertainty = finding(evaluation, "uncertainty")
    assert "break_even_k" not in uncertainty.figures
    assert uncertainty.figures["break_even_p"] == pytest.approx(BAR / (1 - 1 / 1.5), rel=2e-3)
    assert evaluation.statement == (
        "Fund if a timeline shows p ≥ 6%, the break-even at k = 1.5× (the low end of its range): the 2%–8% range "
        "straddles the bar, and at 2% even 3× is decline."
    )


def test_when_neither_input_carries_the_other_both_are_conditions() -> None:
    """p 2–8%, k 1.2–3×: 2% at 3× saves 1.33% and 8% at 1.2× saves 1.33%, both short of 2%: the prototype must
    show both figures, the pair where the diagonal p = 2% + 6%·t, k = 1.2 + 1.8·t crosses the bar:
    (0.02 + 0.06t)(0.2 + 1.8t) = 0.02(1.2 + 1.8t), i.e. 0.108t² + 0.012t − 0.02 = 0."""
    evaluation = review(_proposal({"low": 0.02, "high": 0.08}, {"low": 1.2, "high": 3}))
    t = (-0.012 + math.sqrt(0.012**2 + 4 * 0.108 * 0.02)) / (2 * 0.108)
    figures = finding(evaluation, "uncertainty").figures
    assert figures["break_even_p"] == pytest.approx(0.02 + 0.06 * t, rel=2e-3)
    assert figures["break_even_k"] == pytest.approx(1.2 + 1.8 * t, rel=2e-3)
    assert evaluation.verdict == "fund_if"
    assert evaluation.statement == (
        "Fund if a timeline shows p ≥ 4.3% and a prototype k ≥ 1.88: at 2% even 3× is decline, and 8% at 1.2× is "
        "decline."
    )
