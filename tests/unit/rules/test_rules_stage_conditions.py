"""Stage 5 answers "on what conditions?" with every condition, and only conditions: they add up (each must hold),
none sets another aside, and stage 4's notes ("fund, though a larger target exists") are not among them.

Figures are re-derived here from PRODUCT §2 and the default policy, never read back from the engine.
"""

from __future__ import annotations

import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, review

# Attention at 30% of a 40 ms step, 2× where it was measured (batch 32, 70% of the time), 0.8× on batch 1 (30%): kept
# on the old path there, it saves 0.7 × 0.3 × (1 − 1/2) = 10.5% of the production time — for a p99 SLO at tail risk.
_MIX_AND_P99 = {
    "target": "attention",
    "p": 0.3,
    "k": 2,
    "baseline_ms": 40,
    "cost_weeks": 2,
    "scope": {"method": "timeline", "input": "batch 32"},
    "flags": {
        "traffic_mix": [{"name": "batch 1", "share": 0.3, "k": 0.8}, {"name": "batch 32", "share": 0.7}],
        "latency_slo": {"p99_ms": 50, "tail_risk": True},
    },
}


def test_a_second_condition_is_not_overridden_by_the_first() -> None:
    """The mix's dispatch condition spoke and the p99 condition was marked overridden_by mix, so neither the
    statement nor stage 5 mentioned the p99: both must hold, and stage 5 says both."""
    evaluation = review(_MIX_AND_P99)
    saving = 0.7 * 0.3 * (1 - 1 / 2)
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "mix"
    mix, tail = finding(evaluation, "mix"), finding(evaluation, "tail_latency")
    assert tail.overridden_by is None
    assert f"{saving * 100:.1f}% of the production time" in mix.message
    assert evaluation.reasoning[4].answer == f"{mix.message} {tail.message}"
    assert "50 ms p99 SLO" in evaluation.reasoning[4].answer
    assert evaluation.statement == mix.message
    assert_one_sentence(evaluation.statement)


# attn 21 ms of a 100 ms step of kernels (gemm 34, other 45), 10× for 3 weeks: 18.9% saved, 1.233×, while the same
# 10× on the 45 ms phase gives 1 / (0.55 + 0.045) = 1.681× — bigger_target's "Fund, though…" note of stage 4.
_BIGGER_ELSEWHERE = {
    "target": "attn",
    "p": 0.21,
    "k": 10,
    "baseline_ms": 100,
    "cost_weeks": 3,
    "breakdown": [{"name": "attn", "ms": 21}, {"name": "gemm", "ms": 34}, {"name": "other", "ms": 45}],
}


def test_stage_5_lists_stage_4s_condition_without_repeating_its_note() -> None:
    """Stage 5 repeated "Fund, though other at 45% of the step is the larger target…", stage 4's answer; then said
    "None." under the fund_if that condition decides. It names the condition, in its own words."""
    evaluation = review(_BIGGER_ELSEWHERE)
    assert evaluation.verdict == "fund_if"
    assert evaluation.reasoning[3].answer.startswith(
        f"Fund, though other at 45% of the step is the larger target: the same 10× there gives "
        f"{1 / (0.55 + 0.045):.3f}×"
    )
    assert evaluation.reasoning[4].answer == "That other (45% of the step) is worked on first, as stage 4 says."


def test_a_redirect_for_a_latency_goal_has_no_fund_in_stage_5() -> None:
    """A 5 ms goal under the floor of every kernel at 10× (100 ms / 10 = 10 ms) is a redirect to more GPUs, while
    stage 5 said "Fund, though…" (bigger_target's note, an alternative, not a condition)."""
    evaluation = review(_BIGGER_ELSEWHERE | {"goal": {"latency_ms": 5}})
    assert evaluation.verdict == "redirect"
    assert evaluation.deciding_rule == "resource_goal"
    assert f"stops at {100 / 10:.0f} ms on one GPU, above the 5 ms latency goal" in evaluation.statement
    assert evaluation.reasoning[4].answer == "None."


def test_stage_4_without_a_breakdown_says_none_was_given() -> None:
    """With no breakdown, stage 4 said "nothing in the breakdown is larger than the target"."""
    alone = review({"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3})
    assert alone.reasoning[3].answer == "None known: no breakdown was given."
    smaller = review(
        {
            "target": "attn",
            "p": 0.6,
            "k": 2,
            "baseline_ms": 100,
            "breakdown": [{"name": "attn", "ms": 60}, {"name": "mlp", "ms": 40}],
        }
    )
    assert smaller.reasoning[3].answer == "None known: nothing in the breakdown is larger than the target."


# Attention at 30% of a 40 ms step from counters (which never show copies or gaps: remeasure), 2× for 2 weeks, with a
# p99 SLO at tail risk: 0.3 · (1 − 1/2) = 15% of the mean step saved, and the tail condition on top.
_COUNTERS_AND_P99 = {
    "target": "attention",
    "p": 0.3,
    "k": 2,
    "baseline_ms": 40,
    "cost_weeks": 2,
    "scope": {"method": "counters"},
    "flags": {"latency_slo": {"p99_ms": 50, "tail_risk": True}},
}


def test_stage_5_of_a_remeasure_says_its_conditions_wait_for_the_new_numbers() -> None:
    """Stage 5 said "Fund on the condition that the p99 holds…" under a remeasure verdict, as if the conditions
    were what stood between the proposal and funding; they apply once it is re-measured, and stage 5 says so, with
    every condition kept."""
    evaluation = review(_COUNTERS_AND_P99)
    assert evaluation.verdict == "remeasure"
    tail = finding(evaluation, "tail_latency")
    assert tail.overridden_by is None
    assert "15% mean win against a 50 ms p99 SLO" in tail.message
    assert (
        evaluation.reasoning[4].answer
        == f"Moot until the numbers are re-measured; then, if they still hold: {tail.message}"
    )
    assert evaluation.reasoning[4].rules == ["tail_latency"]


def test_stage_5_of_a_remeasure_without_conditions_says_none() -> None:
    evaluation = review({k: v for k, v in _COUNTERS_AND_P99.items() if k != "flags"})
    assert evaluation.verdict == "remeasure"
    assert evaluation.reasoning[4].answer == "None."


# --- a condition raised at another stage is a condition of stage 5 too ----------------------------------------------

# FP8 GEMMs 1.5× faster on half the step, on 2,000 GPUs, for 3 weeks: 2,000 · 0.5 · (1 − 1/1.5) = 333 GPU-equivalents
# pay many times over, but accuracy falls 76 → 75.1, 0.9 points against a 0.3-point gate: fund only if it recovers to
# 76 − 0.3 = 75.7.
_FAILING_GATE = {
    "target": "gemm",
    "p": 0.5,
    "k": 1.5,
    "cost_weeks": 3,
    "flags": {"fleet_gpus": 2000},
    "quality": {"metric": "accuracy", "baseline": 76.0, "candidate": 75.1, "max_regression": 0.3},
}


def test_stage_5_states_the_quality_gate_a_fund_if_rests_on() -> None:
    """The verdict was fund_if on the failing gate (a worth-stage condition) while stage 5 answered "None.": the
    condition the decision is funded on is stage 5's answer, the gate's own sentence."""
    evaluation = review(_FAILING_GATE)
    gate = finding(evaluation, "quality_gate")
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "quality_gate"
    assert gate.figures["recover_to"] == pytest.approx(76.0 - 0.3)
    conditions = evaluation.reasoning[4]
    assert conditions.answer == gate.message
    assert conditions.answer.startswith("Fund only if accuracy recovers to at least 75.7: accuracy falls 0.9 points")
    assert conditions.rules == ["quality_gate"]
    assert evaluation.reasoning[1].answer == gate.message  # it answers what the work is worth, as before


def test_stage_5_lists_a_gate_before_a_stage_5_condition() -> None:
    """With a p99 SLO at tail risk beside the failing gate, both must hold: the gate, which speaks for the decision
    (the worth stage comes first), then the p99."""
    evaluation = review(
        _FAILING_GATE
        | {"baseline_ms": 40, "flags": {"fleet_gpus": 2000, "latency_slo": {"p99_ms": 50, "tail_risk": True}}}
    )
    gate, tail = finding(evaluation, "quality_gate"), finding(evaluation, "tail_latency")
    assert evaluation.verdict == "fund_if"
    assert evaluation.statement == gate.message
    assert evaluation.reasoning[4].answer == f"{gate.message} {tail.message}"


def test_stage_5_states_a_cost_stage_condition() -> None:
    """45 GPU-minutes on each of 2,000 starts a day take 45 · 2,000 / 1,440 = 62.5 GPU-equivalents with no fleet
    stated: recurring_gpu_cost (stage 3) funds only on a fleet whose 15% saving exceeds them, and stage 5 said
    "None."."""
    evaluation = review(
        {"target": "loader", "p": 0.3, "k": 2, "cost_weeks": 2}
        | {"flags": {"gpu_minutes_per_start": 45, "starts_per_day": 2000}}
    )
    recurring = finding(evaluation, "recurring_gpu_cost")
    assert evaluation.verdict == "fund_if"
    assert recurring.effect == "condition"
    assert evaluation.reasoning[4].answer == recurring.message
    assert evaluation.reasoning[4].answer.startswith("Fund if the fleet that runs it has at least")
