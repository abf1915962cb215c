"""The pure verdict function: what each finding argues, how verdicts rank, and the verdict that wins at one point.

It is what a range's corners, bisection and every probe ask (`verdict_at`), and what the engine's `decide` ranks
findings by. Checks declare the verdicts they may argue (`ARGUES`); the verdict function runs only the checks that
can move a verdict off `fund`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from types import ModuleType

from worthit.rules.context import Check, Context, context
from worthit.rules.model import Finding, Proposal, Stage, Verdict
from worthit.rules.policy import Policy
from worthit.rules.wording import Draft

__all__ = [
    "ALL_VERDICTS",
    "EFFECT_VERDICT",
    "RANK",
    "STAGES",
    "STAGE_ORDER",
    "argued",
    "argues",
    "compiled",
    "deciders",
    "verdict_at",
    "verdict_of",
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

STAGES: tuple[Stage, ...] = ("trust", "worth", "cost", "alternative", "condition")
STAGE_ORDER = {stage: i for i, stage in enumerate(STAGES)}
"""Each stage's place in the argument: between findings of equal rank, the earlier stage decides."""


@cache
def compiled(checks: tuple[ModuleType, ...]) -> tuple[tuple[Check, Stage], ...]:
    """Each check's function and stage, read off its module once (the loop runs for every proposal)."""
    return tuple((module.check, module.STAGE) for module in checks)


ALL_VERDICTS: frozenset[Verdict] = frozenset(RANK)


def argues(module: ModuleType) -> frozenset[Verdict]:
    """The verdicts a check may argue: its module's `ARGUES`, else any. A property test holds every check to it."""
    declared: frozenset[Verdict] = getattr(module, "ARGUES", ALL_VERDICTS)
    return declared


@cache
def deciders(checks: tuple[ModuleType, ...]) -> tuple[tuple[Check, Stage], ...]:
    """The checks that can move a verdict off `fund`: `fund` is the lowest rank and what `amdahl` always argues,
    so a check that argues nothing else never changes which verdict wins (only which finding speaks for it)."""
    return compiled(tuple(module for module in checks if argues(module) - {"fund"}))


def argued(finding: Finding | Draft) -> Verdict | None:
    """The verdict a finding argues for: its own, else its effect's (`info` argues none)."""
    return finding.verdict or EFFECT_VERDICT.get(finding.effect)


def verdict_at(proposal: Proposal, policy: Policy, p: float, k: float, checks: Sequence[ModuleType]) -> Verdict:
    """The pure verdict function at one point (p, k): what bisection searches for break-even values and a range's
    corners are judged by. Only the verdict is asked, so the checks that can argue nothing but `fund` (the Amdahl
    figures and their sentence, the most expensive to write) do not run, and the others may leave out the findings
    that argue `fund` or nothing (`Context.verdict_only`): with no other finding the verdict is `fund`, as `decide`
    would have found it (a test holds the two equal)."""
    return verdict_of(context(proposal, policy, p, k, verdict_only=True), checks)


def verdict_of(ctx: Context, checks: Sequence[ModuleType]) -> Verdict:
    """`verdict_at` on a context made with `verdict_only`."""
    best: Verdict = "fund"
    rank = RANK
    for check, _ in deciders(tuple(checks)):
        finding = check(ctx)
        if finding is None or finding.overridden_by is not None:
            continue
        verdict = argued(finding)
        if verdict is not None and rank[verdict] > rank[best]:
            best = verdict
    return best
