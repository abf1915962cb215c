"""Stage 5 answers "on what conditions?" with every condition, and only conditions: they add up (each must hold),
none sets another aside, and stage 4's notes ("fund, though a larger target exists") are not among them.

Figures are re-derived here from PRODUCT §2 and the default policy, never read back from the engine.
"""

from __future__ import annotations

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
