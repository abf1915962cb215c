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
    Stage,
    StageAnswer,
    Verdict,
)
from worthit.rules.policy import Policy
from worthit.rules.text import STATEMENT_CHARS, label, ms, pct, sentence, times
from worthit.rules.worth import CARRIED_BY, Worth, worth_of

T = TypeVar("T")

SCOPE_NOUN: dict[str, str] = {
    "step": "the step",
    "device_activity": "device activity",
    "end_to_end": "the run",
    "rank": "the rank's step",
}

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


NON_KERNEL: tuple[PhaseKind, ...] = ("alloc", "copy", "host", "input")
KIND_LABEL: dict[str, str] = {
    "alloc": "allocation",
    "copy": "host↔device copy",
    "host": "host time",
    "input": "input-pipeline wait",
}


@dataclass(frozen=True, slots=True)
class Alternative:
    """Where the effort belongs instead: the largest other phase, or the non-kernel time taken together."""

    label: str
    share: float
    ms: float
    grouped: bool
    """True when the alternative is the allocation, copy and host-gap phases together (one fix family)."""
    kinds: tuple[str, ...] = ("kernel",)
    """The kinds of phase it is made of: a kernel phase has other fixes than copies or a stalled input pipeline."""

    @property
    def non_kernel(self) -> bool:
        return all(kind in NON_KERNEL for kind in self.kinds)

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
) -> Finding:
    """A finding against the proposal: a redirect naming where the effort belongs when the breakdown knows (the
    statement ends `…; <alternative> <then>.`), else a plain decline."""
    alternative = ctx.alternative
    if alternative is None:
        return Finding(rule=rule, effect="opposes", verdict="decline", figures=figures, message=f"{head}.")
    figures |= alternative.figures()
    return Finding(
        rule=rule,
        effect="opposes",
        verdict="redirect",
        figures=figures,
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
            Alternative(label(phase.name), self.share(phase), phase.ms, grouped=False, kinds=(phase.kind,))
            for phase in self.others
        ]
        group = [phase for phase in self.others if phase.kind in NON_KERNEL]
        if len(group) >= 2:
            total = sum(phase.ms for phase in group)
            share = total / self.breakdown_total if self.breakdown_total else 0.0
            kinds = tuple(kind for kind in NON_KERNEL if any(p.kind == kind for p in group))
            candidates.append(Alternative(kinds_label(list(kinds)), share, total, grouped=True, kinds=kinds))
        fitting = [alt for alt in candidates if alt.share > self.target_share and alt.share >= floor]
        return max(fitting, key=lambda alt: alt.share, default=None)

    @lazy
    def material_alternative(self) -> Alternative | None:
        """The alternative when it could win materially more than this proposal: its whole time at least
        `alternative_ratio` times the proposal's own end-to-end saving (stage 4 names it even when the proposal
        passes)."""
        alternative = self.alternative
        if alternative is None:
            return None
        if alternative.share < self.policy.alternative_ratio * max(self.run_saving, 0.0):
            return None
        return alternative

    @lazy
    def unportable(self) -> bool:
        return self.proposal.flags.portability in ("vendor_specific", "hand_asm")

    @lazy
    def worth(self) -> Worth:
        """Stages 2 and 3, once for every check: the value of the work, its full cost, and whether it pays."""
        return worth_of(self.proposal, self.policy, self.run_saving, self.k)

    @property
    def maintenance_weeks(self) -> float:
        """Engineer-weeks unportable code costs to keep correct over the policy's horizon (0 when portable)."""
        return self.worth.cost.upkeep_weeks

    @property
    def scope_noun(self) -> str:
        """What `p` is a share of, as the statement says it: the step, device activity, the run, one rank."""
        return SCOPE_NOUN.get(self.proposal.scope.measured or "step", "the step")


Check = Callable[[Context], Finding | None]

STAGES: tuple[Stage, ...] = ("trust", "worth", "cost", "alternative", "condition")
QUESTIONS: dict[Stage, str] = {
    "trust": "Can these numbers be trusted?",
    "worth": "What is it worth?",
    "cost": "What does it cost?",
    "alternative": "Is there a better use of the effort?",
    "condition": "On what conditions?",
}
PASSING: frozenset[Verdict] = frozenset({"fund", "fund_if"})


def _point(value: float | Range | str | None, name: str) -> float:
    if value is None:
        raise InvalidInput(f"Expected `{name}` to be resolved before evaluation, got nothing", f"/{name}")
    if isinstance(value, Range):
        return (value.low + value.high) / 2
    if isinstance(value, str):
        return math.inf
    return value


def run_checks(proposal: Proposal, policy: Policy, p: float, k: float, checks: Sequence[ModuleType]) -> list[Finding]:
    """Every finding of `checks` for one point (p, k), each marked with the stage its rule answers."""
    return _run(Context(proposal=proposal, policy=policy, p=p, k=k), checks)


def _run(ctx: Context, checks: Sequence[ModuleType]) -> list[Finding]:
    findings: list[Finding] = []
    for check, stage in _compiled(tuple(checks)):
        finding = check(ctx)
        if finding is None:
            continue
        message = finding.message
        # A safety net: rules write short sentences, each ending in a period.
        if not message.endswith("."):
            message += "."
        finding.message = message if len(message) <= STATEMENT_CHARS else sentence(message)
        if finding.stage is None:
            finding.stage = stage
        findings.append(finding)
    return findings


@cache
def _compiled(checks: tuple[ModuleType, ...]) -> tuple[tuple[Check, Stage], ...]:
    """Each check's function and stage, read off its module once (the loop runs for every proposal)."""
    return tuple((module.check, module.STAGE) for module in checks)


def _argued(finding: Finding) -> Verdict | None:
    return finding.verdict or EFFECT_VERDICT.get(finding.effect)


def decide(findings: Sequence[Finding]) -> tuple[Verdict, Finding]:
    """The verdict and the finding that decides it, from the stages in order.

    Trust first (any `remeasure`), then the economics (any finding that opposes: its redirect or decline), then
    conditions (`fund_if`: a materially larger alternative before the conditions of stage 5), then `fund`, spoken
    by the finding whose figure carries the value (the first that supports it). Within a stage, the registry's
    order breaks ties. Findings that argue the same verdict after the decider record it in `overridden_by`.
    """
    order = {stage: i for i, stage in enumerate(STAGES)}
    best: tuple[int, int, int, Verdict, Finding] | None = None
    for index, finding in enumerate(findings):
        verdict = _argued(finding)
        if verdict is None or finding.overridden_by is not None:
            continue
        key = (-RANK[verdict], order.get(finding.stage or "condition", len(STAGES)), index)
        if best is None or key < best[:3]:
            best = (*key, verdict, finding)
    if best is None:
        raise InvalidInput("No rule argued for a verdict; the `amdahl` check must always fire")
    verdict, deciding = best[3], best[4]
    if verdict == "fund":  # every supporting finding agrees; only competing objections are superseded
        return verdict, deciding
    for finding in findings:
        if finding is not deciding and finding.overridden_by is None and _argued(finding) == verdict:
            finding.overridden_by = deciding.rule
    return verdict, deciding


@cache
def registry() -> tuple[ModuleType, ...]:
    """The registry of checks (`rules.checks.CHECKS`)."""
    from worthit.rules.checks import CHECKS  # the checks import this module: resolve the registry on first use

    return CHECKS


def evaluate(proposal: Proposal, policy: Policy, checks: Sequence[ModuleType] | None = None) -> Evaluation:
    """Evaluate one proposal under one policy: the verdict, one sentence, the figures, every finding and the
    reasoning stage by stage."""
    if checks is None:
        checks = registry()
    p, k = _point(proposal.p, "p"), _point(proposal.k, "k")
    ctx = Context(proposal=proposal, policy=policy, p=p, k=k)
    findings = _run(ctx, checks)
    if isinstance(proposal.p, Range) or isinstance(proposal.k, Range):
        ranges, holds, uncertainty = _ranges(proposal, policy, checks, ctx)
    else:
        ranges, holds, uncertainty = None, None, None
    if uncertainty is not None:
        findings.append(uncertainty)
    verdict, deciding = decide(findings)
    return Evaluation(
        verdict=verdict,
        statement=sentence(deciding.message),
        deciding_rule=deciding.rule,
        amdahl=ctx.amdahl,
        findings=findings,
        policy=PolicyRef(name=policy.name, version=policy.version),
        ranges=ranges,
        holds_across_range=holds,
        reasoning=reasoning(ctx, findings, verdict, deciding),
    )


def verdict_at(proposal: Proposal, policy: Policy, p: float, k: float, checks: Sequence[ModuleType]) -> Verdict:
    """The pure verdict function at one point (p, k): what bisection searches for break-even values."""
    return decide(run_checks(proposal, policy, p, k, checks))[0]


def break_even(passes: Callable[[float], bool], fail: float, ok: float, *, rel: float = 1e-3) -> float:
    """The boundary between a failing and a passing value, by bisection (`passes(ok)` and not `passes(fail)`)."""
    for _ in range(40):
        if abs(ok - fail) <= rel * max(abs(ok), abs(fail), 1e-12):
            break
        mid = (fail + ok) / 2
        if passes(mid):
            ok = mid
        else:
            fail = mid
    return ok


# --- ranges --------------------------------------------------------------------------------------------------------

RANGED = ("speedup", "saving_fraction", "saving_ms", "new_ms", "remaining_ms", "rate")


def _ends(value: float | Range | str | None) -> tuple[float, float]:
    point = _point(value, "")
    return (value.low, value.high) if isinstance(value, Range) else (point, point)


def _ranges(
    proposal: Proposal, policy: Policy, checks: Sequence[ModuleType], ctx: Context
) -> tuple[dict[str, Interval], bool, Finding | None]:
    """Every figure's exact extremes over the box of (p, k), the verdict over the box, and where it changes.

    Each figure of PRODUCT §2 is monotonic in p and in k separately, so its extremes over the box lie on its four
    corners (for `remaining_ms = baseline·p/k` low p with high k and high p with low k; for the others the
    diagonal). Where the verdict differs between corners, the decision is conditional on the break-even value
    of the uncertain input, found by bisection on the pure verdict function.
    """
    (p_low, p_high), (k_low, k_high) = _ends(proposal.p), _ends(proposal.k)
    baseline, cost = ctx.baseline_ms, proposal.cost_weeks
    corners = [(p, k) for p in (p_low, p_high) for k in (k_low, k_high)]
    figures = [amdahl.figures(p, k, baseline_ms=baseline, cost_weeks=cost) for p, k in corners]
    ranges: dict[str, Interval] = {}
    for name in RANGED:
        values = [getattr(f, name) for f in figures]
        finite = [v for v in values if v is not None]
        ranges[name] = (
            Interval(low=min(finite), high=max(finite)) if len(finite) == len(values) else Interval(low=None, high=None)
        )
    verdicts = {corner: verdict_at(proposal, policy, *corner, checks) for corner in corners}
    point = verdict_at(proposal, policy, ctx.p, ctx.k, checks)
    if "remeasure" in verdicts.values() or point == "remeasure":
        return ranges, all(v == point for v in verdicts.values()), None
    passing = {corner for corner, verdict in verdicts.items() if verdict in PASSING}
    if not passing or len(passing) == len(verdicts):
        return ranges, all(v == point for v in verdicts.values()), None
    return ranges, False, _uncertainty(proposal, policy, checks, ctx, verdicts)


def _uncertainty(
    proposal: Proposal,
    policy: Policy,
    checks: Sequence[ModuleType],
    ctx: Context,
    verdicts: dict[tuple[float, float], Verdict],
) -> Finding:
    """The condition a straddling range puts on the decision: the break-even k (or p) and the failing end."""
    (p_low, p_high), (k_low, k_high) = _ends(proposal.p), _ends(proposal.k)
    failing = [corner for corner, verdict in verdicts.items() if verdict not in PASSING]
    passing = [corner for corner, verdict in verdicts.items() if verdict in PASSING]
    worst = verdicts[failing[0]]
    k_ranged = isinstance(proposal.k, Range) and k_high > k_low
    if k_ranged:
        p_fixed = ctx.p

        def passes(value: float) -> bool:
            return verdict_at(proposal, policy, p_fixed, value, checks) in PASSING

        ok_end = k_high if passes(k_high) else None
        low_end = k_low
        name = "k"
    else:
        k_fixed = ctx.k

        def passes(value: float) -> bool:
            return verdict_at(proposal, policy, value, k_fixed, checks) in PASSING

        ok_end = p_high if passes(p_high) else None
        low_end = p_low
        name = "p"
    figures: dict[str, Figure] = {"verdict_low": worst, "verdict_high": verdicts[passing[0]]}
    if ok_end is None or passes(low_end):
        # The range straddles the bar in both inputs at once; no single break-even value separates it.
        message = (
            f"Fund on the condition that a prototype narrows the range: at {times(_speed(*failing[0]))} the verdict "
            f"is {worst}, at {times(_speed(*passing[0]))} {verdicts[passing[0]]}."
        )
        return Finding(
            rule="uncertainty",
            effect="condition",
            verdict="fund_if",
            stage="condition",
            figures=figures,
            message=message,
        )
    edge = break_even(passes, low_end, ok_end)
    figures |= {f"break_even_{name}": edge}
    if name == "k":
        what = f"a prototype shows k ≥ {_plain(edge)}"
        span = f"the {times(k_low)}–{times(k_high)} range"
    else:
        what = f"a timeline shows p ≥ {pct(edge)}"
        span = f"the {pct(p_low)}–{pct(p_high)} range"
    slower = " (a slowdown)" if name == "k" and k_low < 1 else ""
    message = f"Fund if {what}: {span} straddles the bar, and at its low end{slower} the verdict is {worst}."
    return Finding(
        rule="uncertainty", effect="condition", verdict="fund_if", stage="condition", figures=figures, message=message
    )


def _speed(p: float, k: float) -> float:
    return amdahl.speedup(p, k)


def _plain(value: float) -> str:
    """A break-even value as typed back: 1.23, not 1.2300000001."""
    return f"{value:.3g}"


# --- reasoning -----------------------------------------------------------------------------------------------------


def reasoning(ctx: Context, findings: Sequence[Finding], verdict: Verdict, deciding: Finding) -> list[StageAnswer]:
    """The argument in order: each stage's question, its answer, the checks that spoke and their figures.

    Each answer is the sentence of the finding that settles the stage (so every clause comes from figures that
    finding carries), or a short fixed answer when no check spoke to it.
    """
    worth = ctx.worth
    by_stage: dict[Stage, list[Finding]] = {stage: [] for stage in STAGES}
    for finding in findings:
        by_stage[finding.stage or "condition"].append(finding)
    conditions = [f for f in findings if f.effect == "condition"]
    cost = worth.cost
    answers: list[StageAnswer] = []
    for stage in STAGES:
        spoke = by_stage[stage]
        figures: dict[str, Figure] = {}
        answer: str | None = None
        if stage == "trust":
            answer = next((f"No: {f.message}" for f in spoke if f.effect == "remeasure"), None)
            answer = answer or "Yes: no check doubts the scope, the method or the inputs."
        elif stage == "worth":
            figures = _worth_figures(ctx)
            carrier = CARRIED_BY[worth.basis]
            answer = _first(spoke, lambda f: f.effect == "opposes") or next(
                (f.message for f in findings if f.rule == carrier), None
            )
        elif stage == "cost":
            figures = {
                "build_weeks": cost.build_weeks,
                "upkeep_weeks": cost.upkeep_weeks,
                "cost_weeks": cost.weeks,
                "cost_usd": cost.usd,
            }
            answer = _first(spoke, lambda f: f.effect != "info") or (
                "Unknown: no cost was given." if cost.weeks is None else None
            )
        elif stage == "alternative":
            alternative = ctx.material_alternative or ctx.alternative
            if alternative is not None:
                figures = alternative.figures()
            answer = _first(spoke, lambda f: f.effect != "info") or _first(spoke, lambda f: True)
            answer = answer or "None known: nothing in the breakdown is larger than the target."
        else:
            answer = conditions[0].message if conditions else "None."
        if answer is None:  # the stage passed; its figures say by how much
            answer = _first(spoke, lambda f: True) or "No objection."
        answers.append(
            StageAnswer(
                stage=stage, question=QUESTIONS[stage], answer=answer, rules=[f.rule for f in spoke], figures=figures
            )
        )
    return answers


def _first(findings: Sequence[Finding], keep: Callable[[Finding], bool]) -> str | None:
    return next((f.message for f in findings if keep(f)), None)


def _worth_figures(ctx: Context) -> dict[str, Figure]:
    worth = ctx.worth
    figures: dict[str, Figure] = {
        "end_to_end_saving": worth.saving,
        "rate": worth.rate,
        "basis": worth.basis,
        "clears": worth.clears,
    }
    if worth.strategic_saving is not None:
        figures |= {"strategic_saving": worth.strategic_saving, "strategic_credible": worth.strategic_credible}
    if worth.money is not None:
        figures |= {
            "gpu_equivalents": worth.money.gpus,
            "value_usd": worth.money.value_usd,
            "engineering_cost_usd": worth.money.cost_usd,
        }
    return figures
