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


# --- a break-even is printed at a figure that passes ---------------------------------------------------------------


def test_a_diagonal_break_even_is_printed_at_a_pair_that_passes() -> None:
    """p 3–8%, k 1.5–3× on 100 ms for 3 weeks (the bar: a 3% saving): on the diagonal p = 0.05u − 0.02, k = 1.5u
    (u = 1 + t) the saving p · (1 − 1/k) reaches 3% where 15u² − 25u + 4 = 0: p = 5.437%, k = 2.2311. It printed
    "p ≥ 5.4% and k ≥ 2.23", a pair that saves 2.98% and is declined; p is now said rounded up, with k as printed."""
    evaluation = review(
        _proposal({"low": 0.03, "high": 0.08}, {"low": 1.5, "high": 3}, baseline_ms=100) | {"cost_weeks": 3}
    )
    u = (25 + math.sqrt(25**2 - 4 * 15 * 4)) / (2 * 15)
    p_edge, k_edge = 0.05 * u - 0.02, 1.5 * u
    figures = finding(evaluation, "uncertainty").figures
    assert figures["break_even_p"] == pytest.approx(p_edge, rel=2e-3)
    assert figures["break_even_k"] == pytest.approx(k_edge, rel=2e-3)
    assert 0.054 * (1 - 1 / 2.23) < 0.03  # the pair printed before: 2.98%, declined
    assert 0.055 * (1 - 1 / 2.23) >= 0.03  # the pair printed now: 3.03%
    assert (figures["break_even_p_said"], figures["break_even_k_said"]) == pytest.approx((0.055, 2.23))
    assert evaluation.verdict == "fund_if"
    assert evaluation.statement == (
        "Fund if a timeline shows p ≥ 5.5% and a prototype k ≥ 2.23: at 3% even 3× is decline, and 8% at 1.5× is "
        "decline."
    )


# p 0.5–3% at 2× on 200 GPUs for 4 weeks ($20k): the value is 200 · p/2 GPU-equivalents at $2 an hour around the clock,
# 1,752,000 · p dollars a year, which pays for $20k from p = 20,000 / 1,752,000 = 1.1416%.
_FLEET_RANGE = {
    "target": "attention",
    "p": {"low": 0.005, "high": 0.03},
    "k": 2,
    "cost_weeks": 4,
    "flags": {"fleet_gpus": 200},
}


def test_a_straddling_range_on_a_fleet_states_its_break_even_not_the_midpoints_noise_floor() -> None:
    """The statement was the midpoint's (p 1.75%) "0.88% per run is under the 1% noise floor … frees 1.75
    GPU-equivalents, $31k a year", and stage 5 then said "p ≥ 1.1%", a share worth 1,752,000 · 1.1% = $19,272 a year
    against the $20k: the break-even, said rounded up to 1.2% ($21,024), is the condition the decision turns on."""
    evaluation = review(_FLEET_RANGE)
    edge = 20_000 / (200 * 0.5 * 2.0 * 8760)
    assert 1_752_000 * 0.011 < 20_000 <= 1_752_000 * 0.012
    uncertainty = finding(evaluation, "uncertainty")
    assert uncertainty.figures["break_even_p"] == pytest.approx(edge, rel=2e-3)
    assert uncertainty.figures["break_even_p_said"] == pytest.approx(0.012)
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "uncertainty"
    assert evaluation.statement == (
        "Fund if a timeline shows p ≥ 1.2%: the 0.5%–3% range straddles the bar, and at its low end the verdict is "
        "decline."
    )
    # stage 5 leads with it; the midpoint's fleet A/B condition still holds over part of the range, and follows
    assert evaluation.reasoning[4].answer.startswith(evaluation.statement + " Fund, and confirm the saving")
    assert_one_sentence(evaluation.statement)


def test_stages_2_and_5_of_a_straddling_range_on_a_fleet_quote_the_ranges_ends_not_the_midpoints_fleet() -> None:
    """Stage 2 was fleet_multiplication's midpoint sentence ("0.88% on 200 GPUs frees 1.75 GPU-equivalents, worth $31k
    a year …") and stage 5's fleet A/B condition the midpoint's ("0.88% per run … 1.75 GPU-equivalents, $31k a
    year"): p 1.75%, which nobody proposed. At p = 3% the run saves 1.5% (over the floor: fund), 200 · 1.5% = 3
    GPU-equivalents, 1,752,000 · 3% = $52,560 a year (over the 12-month horizon, its value); at 0.5% 0.25%, 0.5 of a
    GPU, $8,760 (decline)."""
    evaluation = review(_FLEET_RANGE)
    high, low = 1_752_000 * 0.03, 1_752_000 * 0.005
    assert (high, low) == pytest.approx((52_560, 8_760))
    worth = evaluation.reasoning[1]
    assert worth.answer == (
        "Across the 0.5%–3% range of p the value over 12 months straddles its $20k cost: $53k at p = 3% (fund), "
        "$8,760 at p = 0.5% (decline)."
    )
    assert worth.figures["value_usd_high"] == pytest.approx(high)
    assert worth.figures["value_usd_low"] == pytest.approx(low)
    assert worth.figures["engineering_cost_usd"] == pytest.approx(20_000)
    ab = finding(evaluation, "noise_floor")
    assert ab.message == (
        "Fund, and confirm the saving in a fleet A/B: 0.25–1.5% per run is under the 1% noise floor over part of the "
        "range, too small for one run to show, but on 200 GPUs it frees 0.5–3 GPU-equivalents, $8,760–$53k a year "
        "against $20k of engineering."
    )
    assert ab.figures["end_to_end_saving_low"] == pytest.approx(0.005 / 2)
    assert ab.figures["end_to_end_saving_high"] == pytest.approx(0.03 / 2)
    assert ab.figures["gpu_equivalents_low"] == pytest.approx(200 * 0.005 / 2)
    assert ab.figures["gpu_equivalents_high"] == pytest.approx(200 * 0.03 / 2)
    assert ab.figures["annual_value_usd_low"] == pytest.approx(low)
    assert ab.figures["annual_value_usd_high"] == pytest.approx(high)
    assert evaluation.reasoning[4].answer == f"{evaluation.statement} {ab.message}"
    for stage in (worth, evaluation.reasoning[4]):
        for midpoint in ("0.88%", "1.75", "$31k"):
            assert midpoint not in stage.answer, (midpoint, stage.answer)


def test_a_straddling_range_on_a_job_quotes_its_value_over_the_job_at_both_ends() -> None:
    """p 0.5–1.8% at 2× on 5,000 GPUs for a 20-day job, 4 weeks: 5,000 · p/2 GPU-equivalents at $2 × 24 × 20 = $960
    each over the job, $12,000 at 0.5% and $43,200 at 1.8%, against $20k; the run saves 0.25–0.9% per run, all of it
    under the 1% floor."""
    evaluation = review(
        {
            "target": "attention",
            "p": {"low": 0.005, "high": 0.018},
            "k": 2,
            "cost_weeks": 4,
            "flags": {"fleet_gpus": 5000, "run_days": 20},
        }
    )
    low, high = 5000 * 0.005 / 2 * 960, 5000 * 0.018 / 2 * 960
    assert (low, high) == pytest.approx((12_000, 43_200))
    assert evaluation.verdict == "fund_if"
    assert evaluation.reasoning[1].answer == (
        "Across the 0.5%–1.8% range of p the value over the 20-day job straddles its $20k cost: $43k at p = 1.8% "
        "(fund_if), $12k at p = 0.5% (decline)."
    )
    ab = finding(evaluation, "noise_floor")
    assert ab.message == (
        "Fund, and confirm the saving in a fleet A/B: 0.25–0.9% per run is under the 1% noise floor, too small for one "
        "run to show, but on 5,000 GPUs it frees 13–45 GPU-equivalents, $12k–$43k over the 20-day job against $20k of "
        "engineering."
    )
    assert ab.figures["value_usd_low"] == pytest.approx(low)
    assert ab.figures["value_usd_high"] == pytest.approx(high)


# --- stages 2 and 3 of a straddling range say what holds across it, not the midpoint's objection ------------------


def test_stage_3_of_a_straddling_range_quotes_the_return_at_both_ends_not_the_midpoints_objection() -> None:
    """p 1–4.5% at 3× on 20 ms for 2 weeks: the return is 20 · 0.045 · (2/3) / 2 = 300 µs per engineer-week at 4.5%
    (fund) and 20 · 0.01 · (2/3) / 2 = 66.7 µs at 1% (decline), against the 200 µs the policy funds. Stage 3 said
    the midpoint's "183.3 µs per engineer-week against the 200 µs" as if it were the answer of a fund_if."""
    evaluation = review(_proposal({"low": 0.01, "high": 0.045}, 3, baseline_ms=20))
    assert evaluation.verdict == "fund_if"
    cost = evaluation.reasoning[2]
    assert cost.answer == (
        "2 engineer-weeks ($10k) to build; across the 1%–4.5% range of p the return straddles the 200 µs per "
        "engineer-week the policy funds: 300 µs at p = 4.5% (fund), 66.7 µs at p = 1% (decline)."
    )
    assert "183.3" not in cost.answer
    assert cost.figures["rate_ms_high"] == pytest.approx(20 * 0.045 * (2 / 3) / 2)
    assert cost.figures["rate_ms_low"] == pytest.approx(20 * 0.01 * (2 / 3) / 2)
    assert cost.figures["min_rate_ms"] == pytest.approx(0.2)
    assert (cost.figures["verdict_high"], cost.figures["verdict_low"]) == ("fund", "decline")
    assert (cost.figures["p_high"], cost.figures["p_low"]) == (0.045, 0.01)
    assert cost.figures["cost_weeks"] == 2  # the stage's own figures stay


def test_stage_2_of_a_straddling_range_quotes_the_saving_at_both_ends_not_the_midpoints_objection() -> None:
    """p 0.2–1.4%, the target removed, for half a week: it saves 1.4% end to end at 1.4% (above the 1% noise floor,
    and 2.8% per week clears the rate: fund) and 0.2% at 0.2% (decline). Stage 2 said the midpoint's "saves 0.8% end
    to end, a rounding error below the 1% noise floor" for a decision funded on p ≥ 1%."""
    evaluation = review(
        {"target": "rope", "p": {"low": 0.002, "high": 0.014}, "k": "inf", "baseline_ms": 100, "cost_weeks": 0.5}
    )
    assert evaluation.verdict == "fund_if"
    assert finding(evaluation, "noise_floor").overridden_by == "uncertainty"
    worth = evaluation.reasoning[1]
    assert worth.answer == (
        "Across the 0.2%–1.4% range of p the saving straddles the 1% noise floor: 1.4% end to end at p = 1.4% "
        "(fund), 0.2% at p = 0.2% (decline)."
    )
    assert worth.figures["end_to_end_saving_high"] == pytest.approx(0.014)
    assert worth.figures["end_to_end_saving_low"] == pytest.approx(0.002)
    assert worth.figures["noise_floor"] == pytest.approx(0.01)
    assert evaluation.reasoning[2].answer == "0.5 engineer-weeks ($2,500) to build."  # no objection there: as before


def test_stage_3_of_a_straddling_k_names_k_at_both_ends() -> None:
    """p 3% on 50 ms, k 1.2–3× for 2 weeks: 50 · 0.03 · (2/3) / 2 = 500 µs per week at 3× (fund), 50 · 0.03 ·
    (1/6) / 2 = 125 µs at 1.2× (decline), against 1% of 50 ms = 500 µs — the high end exactly at the bar."""
    evaluation = review(_proposal(0.03, {"low": 1.2, "high": 3}))
    assert evaluation.verdict == "fund_if"
    assert evaluation.reasoning[2].answer == (
        "2 engineer-weeks ($10k) to build; across the 1.2×–3× range of k the return straddles the 500 µs per "
        "engineer-week the policy funds: 500 µs at k = 3× (fund), 125 µs at k = 1.2× (decline)."
    )


def test_a_range_that_does_not_straddle_keeps_its_stage_answers() -> None:
    """p 10–20% at 3×: every corner funds, so no uncertainty and stage 3 is the plain cost."""
    evaluation = review(_proposal({"low": 0.1, "high": 0.2}, 3))
    assert evaluation.verdict == "fund"
    assert evaluation.reasoning[2].answer == "2 engineer-weeks ($10k) to build."
    assert "p_low" not in evaluation.reasoning[2].figures
