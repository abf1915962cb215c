"""Run every check over a proposal under a policy and compose the verdict and the statement (PRODUCT §3–§5).

Each check is a module of `rules.checks` with an `ID`, a docstring that explains it, `EXAMPLES`, and a pure
`check(ctx) -> Finding | None`. The engine knows nothing of any particular rule: it resolves overrides, ranks
the verdicts the findings argue for, and lets the deciding finding speak.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import Any, Generic, TypeVar, overload

from worthit.rules import amdahl
from worthit.rules.errors import InvalidInput
from worthit.rules.model import (
    AmdahlFigures,
    Evaluation,
    Figure,
    Finding,
    Interval,
    Phase,
    PhaseKind,
    PolicyRef,
    Proposal,
    Range,
    Verdict,
)
from worthit.rules.policy import Policy
from worthit.rules.text import label, ms, pct, sentence

T = TypeVar("T")

# Higher wins (PRODUCT §3): remeasure > decline/redirect > fund_if > fund. Between the two of equal rank, a
# redirect (which names where the effort belongs) is preferred to a bare decline.
RANK: dict[Verdict, int] = {"remeasure": 50, "redirect": 41, "decline": 40, "fund_if": 20, "fund": 10}
EFFECT_VERDICT: dict[str, Verdict] = {
    "remeasure": "remeasure",
    "opposes": "decline",
    "condition": "fund_if",
    "supports": "fund",
}


@dataclass(frozen=True, slots=True)
class Example:
    """A rule's own example (Fixit's VALID/INVALID): a proposal, whether the rule fires, and the verdict."""

    proposal: dict[str, Any]
    fires: bool
    verdict: Verdict | None = None
    figures: dict[str, float] = field(default_factory=dict)
    """Figures the finding must carry, compared with a relative tolerance of 1e-3."""
    policy: dict[str, Any] = field(default_factory=dict)
    """Overrides of the default policy for this example."""


NON_KERNEL: tuple[PhaseKind, ...] = ("alloc", "copy", "host")
KIND_LABEL: dict[str, str] = {"alloc": "allocation", "copy": "host↔device copy", "host": "host gaps"}


@dataclass(frozen=True, slots=True)
class Alternative:
    """Where the effort belongs instead: the largest other phase, or the non-kernel time taken together."""

    label: str
    share: float
    ms: float
    grouped: bool
    """True when the alternative is the allocation, copy and host-gap phases together (one fix family)."""

    def phrase(self) -> str:
        """The alternative as a reviewer names it: `gemm_qkv at 34% (34 ms)` or `the 84.6% that is allocation…`."""
        if self.grouped:
            return f"the {pct(self.share)} that is {self.label}"
        return f"{self.label} at {pct(self.share)} ({ms(self.ms)})"

    def figures(self) -> dict[str, Figure]:
        return {"alternative": self.label, "alternative_share": self.share, "alternative_ms": self.ms}


def opposition(
    ctx: Context,
    rule: str,
    head: str,
    figures: dict[str, Figure],
    *,
    then: str = "is where the effort belongs",
    overrides: tuple[str, ...] = (),
) -> Finding:
    """A finding against the proposal: a redirect naming where the effort belongs when the breakdown knows (the
    statement ends `…; <alternative> <then>.`), else a plain decline."""
    alternative = ctx.alternative
    if alternative is None:
        return Finding(
            rule=rule, effect="opposes", verdict="decline", figures=figures, overrides=overrides, message=f"{head}."
        )
    figures |= alternative.figures()
    return Finding(
        rule=rule,
        effect="opposes",
        verdict="redirect",
        figures=figures,
        overrides=overrides,
        message=f"{head}; {alternative.phrase()} {then}.",
    )


def kinds_label(kinds: Sequence[str]) -> str:
    """`allocation and host↔device copy`: the non-kernel kinds present, in a fixed order."""
    words = [KIND_LABEL[kind] for kind in NON_KERNEL if kind in kinds]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


class lazy(Generic[T]):  # noqa: N801 - used like the decorator it replaces
    """`functools.cached_property` without its per-access lock (Python 3.11 takes one on every read).

    A non-data descriptor: the first read stores the value in the instance's `__dict__`, which then shadows the
    descriptor, so later reads are plain attribute lookups. Checks read these figures dozens of times a proposal.
    """

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> lazy[T]: ...
    @overload
    def __get__(self, instance: object, owner: type) -> T: ...
    def __get__(self, instance: object | None, owner: type) -> T | lazy[T]:
        if instance is None:
            return self
        value = self.func(instance)
        instance.__dict__[self.name] = value  # bypasses the frozen dataclass's __setattr__ on purpose
        return value


@dataclass(frozen=True)
class Context:
    """What a check reads: the proposal, the policy, and the figures derived once for all checks."""

    proposal: Proposal
    policy: Policy
    p: float
    k: float

    @lazy
    def amdahl(self) -> AmdahlFigures:
        return amdahl.figures(self.p, self.k, baseline_ms=self.baseline_ms, cost_weeks=self.proposal.cost_weeks)

    @lazy
    def baseline_ms(self) -> float | None:
        """The measured scope's time: given, else the breakdown's sum when the breakdown divides that scope."""
        if self.proposal.baseline_ms is not None:
            return self.proposal.baseline_ms
        if self.proposal.breakdown_scope != "measured":
            return None
        total = self.breakdown_ms
        return total if total else None

    @lazy
    def breakdown_ms(self) -> float:
        return sum(phase.ms for phase in self.proposal.breakdown or ())

    @lazy
    def breakdown_total(self) -> float:
        """The time the breakdown's shares are taken of: `baseline_ms` for the measured scope, else the sum."""
        if self.proposal.breakdown_scope == "measured" and self.proposal.baseline_ms is not None:
            return self.proposal.baseline_ms
        return self.breakdown_ms

    @property
    def target(self) -> str:
        return label(self.proposal.target) if self.proposal.target else "the target"

    @lazy
    def target_phase(self) -> Phase | None:
        for phase in self.proposal.breakdown or ():
            if phase.name == self.proposal.target:
                return phase
        return None

    def share(self, phase: Phase) -> float:
        """A phase's share of the time the breakdown divides (see `breakdown_total`)."""
        total = self.breakdown_total
        return phase.ms / total if total else 0.0

    @lazy
    def p_run(self) -> float:
        """The target's share of the whole run: `p_end_to_end`, else read off a whole-run breakdown, else `p`."""
        if self.proposal.p_end_to_end is not None:
            return self.proposal.p_end_to_end
        if self.proposal.breakdown_scope == "end_to_end" and self.target_phase is not None and self.breakdown_ms:
            return self.target_phase.ms / self.breakdown_ms
        return self.p

    @lazy
    def run_saving(self) -> float:
        """Share of the whole run removed: what noise, rate of return and fleet economics are judged on."""
        return amdahl.saving_fraction(self.p_run, self.k)

    @lazy
    def run_rate(self) -> float | None:
        """Share of the whole run removed per engineer-week; `inf` at no cost, `None` when the cost is unknown."""
        cost = self.proposal.cost_weeks
        if cost is None:
            return None
        return self.run_saving / cost if cost > 0 else math.inf

    @lazy
    def target_share(self) -> float:
        """The target's share of the time the breakdown divides."""
        if self.target_phase is not None and self.breakdown_total:
            return self.share(self.target_phase)
        return self.p_run if self.proposal.breakdown_scope == "end_to_end" else self.p

    @lazy
    def others(self) -> list[Phase]:
        """The breakdown's phases other than the target."""
        return [phase for phase in self.proposal.breakdown or () if phase.name != self.proposal.target]

    @lazy
    def alternative(self) -> Alternative | None:
        """The largest thing bigger than the target and above the noise floor: one phase, or the non-kernel
        phases together (the seed's "the 85% that is allocation and host↔device copy")."""
        floor = self.policy.noise_floor
        candidates = [
            Alternative(label(phase.name), self.share(phase), phase.ms, grouped=False) for phase in self.others
        ]
        group = [phase for phase in self.others if phase.kind in NON_KERNEL]
        if len(group) >= 2:
            total = sum(phase.ms for phase in group)
            share = total / self.breakdown_total if self.breakdown_total else 0.0
            candidates.append(Alternative(kinds_label([p.kind for p in group]), share, total, grouped=True))
        fitting = [alt for alt in candidates if alt.share > self.target_share and alt.share >= floor]
        return max(fitting, key=lambda alt: alt.share, default=None)

    @lazy
    def unportable(self) -> bool:
        return self.proposal.flags.portability in ("vendor_specific", "hand_asm")

    @lazy
    def maintenance_weeks(self) -> float:
        """Engineer-weeks unportable code costs to keep correct over the policy's horizon (0 when portable)."""
        if not self.unportable:
            return 0.0
        flags = self.proposal.flags
        per_year = flags.maintenance_weeks_per_year
        if per_year is None:
            per_year = self.policy.maintenance_weeks_per_year
        return per_year * (flags.architectures or 1) * self.policy.horizon_months / 12


Check = Callable[[Context], Finding | None]


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


@cache
def _registry() -> tuple[ModuleType, ...]:
    from worthit.rules.checks import CHECKS  # the checks import this module: resolve the registry on first use

    return CHECKS


def evaluate(proposal: Proposal, policy: Policy, checks: Sequence[ModuleType] | None = None) -> Evaluation:
    """Evaluate one proposal under one policy: the verdict, one sentence, the figures and every finding."""
    if checks is None:
        checks = _registry()
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
        from worthit.rules.text import times

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
