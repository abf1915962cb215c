"""The engine: verdict precedence, the stages, and the form of every statement the examples produce."""

from __future__ import annotations

import msgspec
import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, review
from worthit.rules.checks import CHECKS
from worthit.rules.engine import decide, evaluate
from worthit.rules.model import Finding, Proposal
from worthit.rules.policy import default_policy
from worthit.rules.text import sentence
from worthit.rules.verdict import RANK


def _f(rule: str, verdict: str, stage: str = "worth") -> Finding:
    effect = {"fund": "supports", "fund_if": "condition", "remeasure": "remeasure"}.get(verdict, "opposes")
    return Finding(
        rule=rule,
        effect=effect,
        message=f"{rule} 1.",
        verdict=verdict,  # type: ignore[arg-type]
        stage=stage,  # type: ignore[arg-type]
    )


def test_precedence_remeasure_over_redirect_over_decline_over_fund_if_over_fund() -> None:
    """PRODUCT §3: remeasure > decline/redirect > fund_if > fund, a redirect preferred to a bare decline."""
    order = ["fund", "fund_if", "decline", "redirect", "remeasure"]
    assert [RANK[v] for v in ("fund", "fund_if", "decline", "redirect", "remeasure")] == sorted(RANK.values())
    findings = [_f(v, v) for v in order]
    assert decide(findings)[0] == "remeasure"
    assert decide(findings[:4])[0] == "redirect"
    assert decide(findings[:3])[0] == "decline"
    assert decide(findings[:2])[0] == "fund_if"


def test_a_per_run_bar_carried_by_the_fleet_does_not_decide() -> None:
    """A poor per-run rate on a fleet that pays for the work is answered by the fleet's value, and says so."""
    evaluation = review(
        {"target": "g", "p": 0.01, "k": 2, "cost_weeks": 10, "flags": {"fleet_gpus": 20_000}}, noise_floor=0.001
    )
    assert finding(evaluation, "rate_of_return").overridden_by == "fleet_multiplication"
    assert evaluation.verdict == "fund"


def test_a_dropped_strategic_case_carries_nothing() -> None:
    """roadmap_risk drops the strategic workload from the value, so the measured case's poor rate decides: decline,
    spoken by the worth stage (roadmap_risk), with rate_of_return's objection superseded, not answered."""
    evaluation = review(
        {
            "target": "a",
            "p": 0.02,
            "k": 10,
            "cost_weeks": 3,
            "flags": {"strategic": {"model": "B", "p": 0.4, "slips": 3}},
        }
    )
    assert evaluation.verdict == "decline"
    assert evaluation.deciding_rule == "roadmap_risk"
    assert finding(evaluation, "rate_of_return").effect == "opposes"
    assert finding(evaluation, "rate_of_return").overridden_by == "roadmap_risk"
    assert finding(evaluation, "wrong_model").effect == "info"


def test_the_earlier_stage_decides_between_equal_verdicts() -> None:
    """Two objections: the worth stage's speaks before the cost stage's, whatever their order in the list."""
    findings = [_f("late", "decline", "cost"), _f("early", "decline", "worth")]
    verdict, deciding = decide(findings)
    assert (verdict, deciding.rule) == ("decline", "early")
    assert findings[0].overridden_by == "early"


def test_statement_is_the_deciding_findings_message() -> None:
    evaluation = review({"target": "k", "p": 0.012, "k": 10, "p_end_to_end": 0.00014})
    assert evaluation.statement == finding(evaluation, evaluation.deciding_rule).message


def test_amdahl_speaks_only_when_nothing_more_specific_does() -> None:
    """A plain proposal is decided by amdahl; a fleet proposal by the fleet arithmetic."""
    assert review({"p": 0.21, "k": 10}).deciding_rule == "amdahl"
    assert review({"p": 0.21, "k": 10, "flags": {"fleet_gpus": 100}}).deciding_rule == "fleet_multiplication"


def test_policy_threshold_changes_a_borderline_verdict() -> None:
    """0.9% saved: a rounding error under the default 1% floor, fundable under a 0.5% floor."""
    raw = {"p": 0.01, "k": 10}
    assert review(raw).verdict == "decline"
    assert review(raw, noise_floor=0.005).verdict == "fund"


STATEMENTS = [
    pytest.param(example.proposal, id=f"{module.ID}-{i}")
    for module in CHECKS
    for i, example in enumerate(module.EXAMPLES)
]


@pytest.mark.parametrize("raw", STATEMENTS)
def test_every_example_statement_and_message_has_the_form(raw: dict[str, object]) -> None:
    """Every statement and every finding's message is one quantified sentence of at most 300 characters."""
    evaluation = evaluate(msgspec.convert(raw, Proposal), default_policy())
    assert_one_sentence(evaluation.statement)
    for item in evaluation.findings:
        assert_one_sentence(item.message)


def test_decline_and_redirect_name_the_alternative_when_one_is_known() -> None:
    """A rounding error on a step with a 60 ms copy names the copy as where the effort belongs."""
    evaluation = review(
        {
            "target": "small",
            "p": 0.005,
            "k": 10,
            "baseline_ms": 100,
            "breakdown": [
                {"name": "small", "ms": 0.5},
                {"name": "h2d", "ms": 60, "kind": "copy"},
                {"name": "gemm", "ms": 39.5},
            ],
        }
    )
    assert evaluation.verdict == "redirect"
    assert "h2d at 60% (60 ms)" in evaluation.statement


def test_long_names_keep_the_statement_short() -> None:
    """Names are cut to a readable length, so statements stay under 300 characters."""
    long = "x" * 200
    evaluation = review(
        {
            "target": long,
            "p": 0.001,
            "k": 10,
            "baseline_ms": 100,
            "breakdown": [{"name": long, "ms": 0.1}, {"name": "y" * 200, "ms": 99.9}],
            "flags": {"strategic": {"model": "z" * 200, "slips": 5}},
        }
    )
    assert_one_sentence(evaluation.statement)


def test_sentence_clamps_at_a_clause_boundary() -> None:
    clamped = sentence("a" * 200 + "; " + "b" * 200 + ".")
    assert clamped == "a" * 200 + "."
    assert len(clamped) <= 300
