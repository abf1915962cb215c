"""Run every check over a proposal under a policy and compose the verdict and the statement (PRODUCT §3–§5).

Each check is a module of `rules.checks` with an `ID`, a docstring that explains it, `EXAMPLES`, and a pure
`check(ctx) -> Finding | None`. The engine knows nothing of any particular rule: it resolves overrides, ranks
the verdicts the findings argue for, and lets the deciding finding speak.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import ModuleType

from worthit.rules import amdahl
from worthit.rules.checks import CHECKS
from worthit.rules.context import (  # re-exported: `rules.engine` stays where callers and tests find them
    KIND_LABEL,
    NON_KERNEL,
    Alternative,
    Check,
    Context,
    Example,
    kinds_label,
    lazy,
    opposition,
)
from worthit.rules.errors import InvalidInput
from worthit.rules.model import Evaluation, Finding, Interval, PolicyRef, Proposal, Range, Verdict
from worthit.rules.policy import Policy
from worthit.rules.text import sentence, times

__all__ = [
    "EFFECT_VERDICT",
    "KIND_LABEL",
    "NON_KERNEL",
    "RANK",
    "Alternative",
    "Check",
    "Context",
    "Example",
    "decide",
    "evaluate",
    "kinds_label",
    "lazy",
    "opposition",
    "run_checks",
]

# Higher wins (PRODUCT §3): remeasure > decline/redirect > fund_if > fund. Between the two of equal rank, a
# redirect (which names where the effort belongs) is preferred to a bare decline.
RANK: dict[Verdict, int] = {"remeasure": 50, "redirect": 41, "decline": 40, "fund_if": 20, "fund": 10}
EFFECT_VERDICT: dict[str, Verdict] = {
    "remeasure": "remeasure",
    "opposes": "decline",
    "condition": "fund_if",
    "supports": "fund",
}


def _point(value: float | Range | str | None, name: str) -> float:
    if value is None:
        raise InvalidInput(f"Expected `{name}` to be resolved before evaluation, got nothing", f"/{name}")
    if isinstance(value, Range):
        return (value.low + value.high) / 2
    if isinstance(value, str):
        return math.inf
    return value


def run_checks(proposal: Proposal, policy: Policy, p: float, k: float, checks: Sequence[ModuleType]) -> list[Finding]:
    """Every finding of `checks` for one point (p, k), overrides resolved."""
    return _run(Context(proposal=proposal, policy=policy, p=p, k=k), checks)


def _run(ctx: Context, checks: Sequence[ModuleType]) -> list[Finding]:
    findings = [finding for module in checks if (finding := module.check(ctx)) is not None]
    for finding in findings:
        finding.message = sentence(finding.message)  # a safety net: rules write short sentences
    overridden: dict[str, str] = {}
    for finding in findings:
        if finding.rule in overridden:
            continue
        for rule in finding.overrides:
            overridden.setdefault(rule, finding.rule)
    for finding in findings:
        finding.overridden_by = overridden.get(finding.rule)
    return findings


def decide(findings: Sequence[Finding]) -> tuple[Verdict, Finding]:
    """The verdict and the finding that decides it: the highest-ranked verdict argued by a live finding."""
    best: tuple[int, Verdict, Finding] | None = None
    for finding in findings:
        if finding.overridden_by is not None:
            continue
        verdict = finding.verdict or EFFECT_VERDICT.get(finding.effect)
        if verdict is None:
            continue
        if best is None or RANK[verdict] > best[0]:
            best = (RANK[verdict], verdict, finding)
    if best is None:
        raise InvalidInput("No rule argued for a verdict; the `amdahl` check must always fire")
    return best[1], best[2]


def evaluate(proposal: Proposal, policy: Policy, checks: Sequence[ModuleType] | None = None) -> Evaluation:
    """Evaluate one proposal under one policy: the verdict, one sentence, the figures and every finding."""
    if checks is None:
        checks = CHECKS
    p, k = _point(proposal.p, "p"), _point(proposal.k, "k")
    ctx = Context(proposal=proposal, policy=policy, p=p, k=k)
    findings = _run(ctx, checks)
    verdict, deciding = decide(findings)
    evaluation = Evaluation(
        verdict=verdict,
        statement=sentence(deciding.message),
        deciding_rule=deciding.rule,
        amdahl=ctx.amdahl,
        findings=findings,
        policy=PolicyRef(name=policy.name, version=policy.version),
    )
    if isinstance(proposal.p, Range) or isinstance(proposal.k, Range):
        _add_ranges(evaluation, proposal, policy, checks)
    return evaluation


def _ends(value: float | Range | str | None) -> tuple[float, float]:
    point = _point(value, "")
    return (value.low, value.high) if isinstance(value, Range) else (point, point)


def _interval(a: float | None, b: float | None) -> Interval:
    if a is None or b is None:
        return Interval(low=None, high=None)
    return Interval(low=min(a, b), high=max(a, b))


def _add_ranges(evaluation: Evaluation, proposal: Proposal, policy: Policy, checks: Sequence[ModuleType]) -> None:
    """Figures as intervals, and whether the verdict holds from the pessimistic end to the optimistic one.

    S grows with p and with k, so the two corners (low p, low k) and (high p, high k) bound every figure.
    """
    (p_low, p_high), (k_low, k_high) = _ends(proposal.p), _ends(proposal.k)
    low_findings = run_checks(proposal, policy, p_low, k_low, checks)
    high_findings = run_checks(proposal, policy, p_high, k_high, checks)
    low_verdict, low_deciding = decide(low_findings)
    high_verdict, high_deciding = decide(high_findings)
    baseline = evaluation.amdahl.baseline_ms
    low = amdahl.figures(p_low, k_low, baseline_ms=baseline, cost_weeks=proposal.cost_weeks)
    high = amdahl.figures(p_high, k_high, baseline_ms=baseline, cost_weeks=proposal.cost_weeks)
    evaluation.ranges = {
        name: _interval(getattr(low, name), getattr(high, name))
        for name in ("speedup", "saving_fraction", "saving_ms", "new_ms", "remaining_ms", "rate")
    }
    evaluation.holds_across_range = low_verdict == high_verdict == evaluation.verdict
    if not evaluation.holds_across_range:
        differs = [
            (end, v, f)
            for end, v, f in (("pessimistic", low_verdict, low_deciding), ("optimistic", high_verdict, high_deciding))
            if v != evaluation.verdict
        ]
        end, verdict, deciding = differs[0]
        evaluation.findings.append(
            Finding(
                rule="uncertainty",
                effect="info",
                message=(
                    f"The verdict does not hold across the range: at the {end} end "
                    f"({times(low.speedup if end == 'pessimistic' else high.speedup)}) it is {verdict}, "
                    f"decided by {deciding.rule}."
                ),
                figures={"verdict_low": low_verdict, "verdict_high": high_verdict},
            )
        )
