"""Run every check over a proposal under a policy and compose the verdict and the statement (PRODUCT §3–§5).

Each check is a module of `rules.checks` with an `ID`, a `STAGE`, a docstring that explains it, `EXAMPLES`, and a
pure `check(ctx) -> Finding | None`. A decision is an argument in stages — can these numbers be trusted, what is
it worth, what does it cost, is there a better use of the effort, on what conditions — and the verdict follows
from the stages in that order: remeasure (trust) > the economics of worth against cost > a materially larger
alternative > conditions > fund. No check names another to set it aside: what the work is worth and what it
costs are computed once (`rules.worth`) and every check reads the same figures. The engine knows nothing of any
particular rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import ModuleType
from typing import TypeVar

import msgspec

from worthit.rules.calibration import Calibration, scaled_k
from worthit.rules.checks import CHECKS
from worthit.rules.context import Context, context
from worthit.rules.errors import InvalidInput
from worthit.rules.model import Evaluation, Finding, PolicyRef, Proposal, Range, Verdict
from worthit.rules.pointer import to_pointer
from worthit.rules.policy import Policy
from worthit.rules.precision import settled_evaluation
from worthit.rules.ranges import at_end, binding_end, over_range, quotes_range, straddle_of
from worthit.rules.reasoning import reasoning
from worthit.rules.text import STATEMENT_CHARS, sentence
from worthit.rules.verdict import RANK, STAGE_ORDER, STAGES, argued, compiled, verdict_at
from worthit.rules.wording import Draft

Said = TypeVar("Said", bound=Finding | Draft)
"""A finding, or one whose sentence is not written yet: `decide` ranks either."""

__all__ = ["check_alone", "decide", "draft_alone", "evaluate", "registry", "run_checks"]


def _point(value: float | Range | str | None, name: str) -> float:
    if value is None:
        raise InvalidInput(f"Expected `{name}` to be resolved before evaluation, got nothing", to_pointer([name]))
    if isinstance(value, Range):
        return (value.low + value.high) / 2
    if isinstance(value, str):
        return math.inf
    return value


def run_checks(proposal: Proposal, policy: Policy, p: float, k: float, checks: Sequence[ModuleType]) -> list[Finding]:
    """Every finding of `checks` for one point (p, k), each marked with the stage its rule answers."""
    return _written(_run(context(proposal, policy, p, k), checks))


def _run(ctx: Context, checks: Sequence[ModuleType]) -> list[Finding | Draft]:
    """Every check's finding at `ctx`, each marked with its stage; a draft's sentence is not written yet."""
    findings: list[Finding | Draft] = []
    for check, stage in compiled(tuple(checks)):
        finding = check(ctx)
        if finding is None:
            continue
        if isinstance(finding, Finding):
            message = finding.message
            # A safety net: rules write short sentences, each ending in a period.
            if not message.endswith("."):
                message += "."
            finding.message = message if len(message) <= STATEMENT_CHARS else sentence(message)
        if finding.stage is None:
            finding.stage = stage
        findings.append(finding)
    return findings


def _written(findings: Sequence[Finding | Draft]) -> list[Finding]:
    """The findings as printed: each draft's sentence written from its template, once, for the findings kept."""
    return [finding if isinstance(finding, Finding) else finding.written() for finding in findings]


def decide(findings: Sequence[Finding]) -> tuple[Verdict, Finding]:
    """The verdict and the finding that decides it, from the stages in order.

    Trust first (any `remeasure`), then the economics (any finding that opposes: its redirect or decline), then
    conditions (`fund_if`: a materially larger alternative before the conditions of stage 5), then `fund`, spoken
    by the finding whose figure carries the value (the first that supports it). Within a stage, the registry's
    order breaks ties. Findings that argue the same verdict after the decider record it in `overridden_by` —
    except conditions (a quality gate, a fleet size, a p99, a fallback): they add up, every one must hold, so none
    sets another aside. Stage 4's "fund, though a larger target exists" is a note, not a condition: the first speaks.
    """
    verdict, deciding = _decider(findings)
    if verdict == "fund":  # every supporting finding agrees; only competing objections are superseded
        return verdict, deciding
    for finding in findings:
        if finding is deciding or finding.overridden_by is not None or argued(finding) != verdict:
            continue
        if verdict == "fund_if" and finding.effect == "condition" and finding.stage != "alternative":
            continue  # a condition adds to the others; only stage 4's "fund, though X is larger" notes repeat
        finding.overridden_by = deciding.rule
    return verdict, deciding


def _decider(findings: Sequence[Said]) -> tuple[Verdict, Said]:
    """`decide` without marking the findings it overrides: the verdict and its finding, the findings untouched."""
    order = STAGE_ORDER
    best: tuple[int, int, int, Verdict, Said] | None = None
    for index, finding in enumerate(findings):
        verdict = argued(finding)
        if verdict is None or finding.overridden_by is not None:
            continue
        key = (-RANK[verdict], order.get(finding.stage or "condition", len(STAGES)), index)
        if best is None or key < best[:3]:
            best = (*key, verdict, finding)
    if best is None:
        raise InvalidInput("No rule argued for a verdict; the `amdahl` check must always fire")
    return best[3], best[4]


def registry() -> tuple[ModuleType, ...]:
    """The registry of checks (`rules.checks.CHECKS`)."""
    return CHECKS


def evaluate(
    proposal: Proposal,
    policy: Policy,
    checks: Sequence[ModuleType] | None = None,
    *,
    calibration: Calibration | None = None,
) -> Evaluation:
    """Evaluate one proposal under one policy: the verdict, one sentence, the figures, every finding and the
    reasoning stage by stage.

    With a `calibration` (the team's track record, which the service reads from its outcomes), the proposal is
    evaluated at k × its ratio, and the `calibration` check says so: every figure is then the calibrated one.
    """
    if checks is None:
        checks = registry()
    ctx = _context(proposal, policy, checks, calibration)
    proposal = ctx.proposal
    drafts = _run(ctx, checks)
    if isinstance(proposal.p, Range) or isinstance(proposal.k, Range):
        known: dict[tuple[float, float], Verdict] = {}
        probe = ctx.probe
        if ctx.calibration is None and isinstance(probe, _Probe) and not probe.asked:
            # No check asked the probe, so each answered as it does without one: these findings are the pure
            # verdict function's at the point, and the ranges need not run every check again to learn it.
            known[(ctx.p, ctx.k)] = _decider(drafts)[0]
        ranges, holds, uncertainty = over_range(proposal, policy, checks, ctx, known)
    else:
        ranges, holds, uncertainty = None, None, None
    straddle = None
    if uncertainty is not None:
        straddle = straddle_of(ctx, known)
        # A range straddling the bar is decided by its break-even (PRODUCT §3, stage 5): what argues against the
        # work at the midpoint is one point of the range, not the range, and no corner asks to remeasure.
        for draft in drafts:
            if draft.overridden_by is None and argued(draft) in ("decline", "redirect"):
                draft.overridden_by = uncertainty.rule
        findings = [*_written(drafts), uncertainty]
        # Its break-even is the condition the decision turns on: among stage 5's conditions it speaks first (the
        # midpoint's own, a noise floor's "0.88% per run … 1.75 GPU-equivalents", hold at one point of the range).
        verdict, deciding = decide([uncertainty, *findings[:-1]])
        statement = sentence(deciding.message)
    else:
        bound = None
        if ranges is not None:
            # A range that does not straddle the bar is argued at the end that binds its verdict, never at its
            # midpoint (a p nobody proposed): a verdict that passes at the end that saves least, one that fails at
            # the end that saves most. Every check speaks there, so every figure printed is one the range holds.
            bound = binding_end(ctx, known, _decider(drafts)[0])
            if bound is not None:
                ctx = bound[0]
                drafts = _run(ctx, checks)
        findings = _written(drafts)
        verdict, deciding = decide(findings)
        statement = sentence(deciding.message)
        if bound is not None and not quotes_range(deciding):
            statement = at_end(bound[1], deciding.message) or statement
    evaluation = Evaluation(
        verdict=verdict,
        statement=statement,
        deciding_rule=deciding.rule,
        amdahl=ctx.amdahl,
        findings=findings,
        policy=PolicyRef(name=policy.name, version=policy.version),
        ranges=ranges,
        holds_across_range=holds,
        reasoning=reasoning(ctx, findings, straddle, verdict=verdict),
    )
    return settled_evaluation(evaluation)


def _context(
    proposal: Proposal, policy: Policy, checks: Sequence[ModuleType], calibration: Calibration | None
) -> Context:
    """The Context every check of one evaluation reads, with the probe over `checks` and the calibrated k."""
    proposed = None
    if calibration is not None and not isinstance(proposal.k, str):
        proposed = proposal
        proposal = msgspec.structs.replace(proposal, k=scaled_k(proposal.k, calibration.ratio))
    p, k = _point(proposal.p, "p"), _point(proposal.k, "k")

    return context(
        proposal,
        policy,
        p,
        k,
        _Probe(policy, checks),
        calibration=calibration if proposed is not None else None,
        proposed=proposed,
    )


class _Probe:
    """The pure verdict function at another point, as the checks of one evaluation are handed it; it remembers
    whether any check asked it (a check that does not must answer as it would with no probe: `Context.probe`)."""

    __slots__ = ("asked", "checks", "policy")

    def __init__(self, policy: Policy, checks: Sequence[ModuleType]) -> None:
        self.policy = policy
        self.checks = checks
        self.asked = False

    def __call__(self, other: Proposal, p: float, k: float) -> Verdict:
        self.asked = True
        return verdict_at(other, self.policy, p, k, self.checks)


def check_alone(
    module: ModuleType, proposal: Proposal, policy: Policy, *, calibration: Calibration | None = None
) -> Finding | None:
    """One rule run alone on a proposal (Fixit's runner given `[rule]`): its finding, or None when it does not fire.

    The rule reads the same Context as in `evaluate` — its probe, for the checks that search for a break-even, is
    still the whole registry's verdict — but no other rule runs beside it, so what it argues is its own.
    """
    draft = draft_alone(module, proposal, policy, calibration=calibration)
    return None if draft is None else _written((draft,))[0]


def draft_alone(
    module: ModuleType, proposal: Proposal, policy: Policy, *, calibration: Calibration | None = None
) -> Finding | Draft | None:
    """`check_alone` before the sentence is written: a converted rule's draft, its template and figures."""
    findings = _run(_context(proposal, policy, registry(), calibration), (module,))
    return findings[0] if findings else None
