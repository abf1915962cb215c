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
from dataclasses import dataclass
from functools import cache
from types import ModuleType

import msgspec

from worthit.rules import amdahl
from worthit.rules.calibration import Calibration, scaled_k
from worthit.rules.checks import CHECKS
from worthit.rules.context import (  # re-exported: `rules.engine` stays where callers and tests find them
    KIND_LABEL,
    NON_KERNEL,
    PASSING,
    SCOPE_NOUN,
    Alternative,
    Check,
    Context,
    Example,
    break_even,
    condition,
    context,
    kinds_label,
    lazy,
    opposition,
    said_k,
    said_share,
)
from worthit.rules.errors import InvalidInput
from worthit.rules.model import (
    Evaluation,
    Figure,
    Finding,
    Interval,
    PolicyRef,
    Proposal,
    Range,
    Stage,
    StageAnswer,
    Verdict,
)
from worthit.rules.pointer import to_pointer
from worthit.rules.policy import Policy
from worthit.rules.precision import settled_evaluation
from worthit.rules.text import (
    STATEMENT_CHARS,
    months,
    ms,
    num,
    pct,
    sentence,
    share_bounds,
    significant,
    times,
    usd,
    weeks,
)
from worthit.rules.worth import CARRIED_BY, Cost

__all__ = [
    "EFFECT_VERDICT",
    "KIND_LABEL",
    "NON_KERNEL",
    "PASSING",
    "RANK",
    "SCOPE_NOUN",
    "Alternative",
    "Check",
    "Context",
    "Example",
    "argued",
    "argues",
    "break_even",
    "check_alone",
    "decide",
    "evaluate",
    "kinds_label",
    "lazy",
    "opposition",
    "registry",
    "run_checks",
    "verdict_at",
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


ID_AMDAHL = "amdahl"
"""The rule whose sentence of a ranged proposal quotes every figure over the range (rules.checks.amdahl)."""

UNCERTAINTY = "uncertainty"
"""The rule of the condition a straddling range puts on the decision (its break-even)."""

STAGES: tuple[Stage, ...] = ("trust", "worth", "cost", "alternative", "condition")
QUESTIONS: dict[Stage, str] = {
    "trust": "Can these numbers be trusted?",
    "worth": "What is it worth?",
    "cost": "What does it cost?",
    "alternative": "Is there a better use of the effort?",
    "condition": "On what conditions?",
}


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
    return _run(context(proposal, policy, p, k), checks)


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


ALL_VERDICTS: frozenset[Verdict] = frozenset(RANK)


def argues(module: ModuleType) -> frozenset[Verdict]:
    """The verdicts a check may argue: its module's `ARGUES`, else any. A property test holds every check to it."""
    declared: frozenset[Verdict] = getattr(module, "ARGUES", ALL_VERDICTS)
    return declared


@cache
def _deciders(checks: tuple[ModuleType, ...]) -> tuple[tuple[Check, Stage], ...]:
    """The checks that can move a verdict off `fund`: `fund` is the lowest rank and what `amdahl` always argues,
    so a check that argues nothing else never changes which verdict wins (only which finding speaks for it)."""
    return _compiled(tuple(module for module in checks if argues(module) - {"fund"}))


def _argued(finding: Finding) -> Verdict | None:
    return finding.verdict or EFFECT_VERDICT.get(finding.effect)


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
        if finding is deciding or finding.overridden_by is not None or _argued(finding) != verdict:
            continue
        if verdict == "fund_if" and finding.effect == "condition" and finding.stage != "alternative":
            continue  # a condition adds to the others; only stage 4's "fund, though X is larger" notes repeat
        finding.overridden_by = deciding.rule
    return verdict, deciding


_ORDER = {stage: i for i, stage in enumerate(STAGES)}


def _decider(findings: Sequence[Finding]) -> tuple[Verdict, Finding]:
    """`decide` without marking the findings it overrides: the verdict and its finding, the findings untouched."""
    order = _ORDER
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
    findings = _run(ctx, checks)
    if isinstance(proposal.p, Range) or isinstance(proposal.k, Range):
        known: dict[tuple[float, float], Verdict] = {}
        probe = ctx.probe
        if ctx.calibration is None and isinstance(probe, _Probe) and not probe.asked:
            # No check asked the probe, so each answered as it does without one: these findings are the pure
            # verdict function's at the point, and the ranges need not run every check again to learn it.
            known[(ctx.p, ctx.k)] = _decider(findings)[0]
        ranges, holds, uncertainty = _ranges(proposal, policy, checks, ctx, known)
    else:
        ranges, holds, uncertainty = None, None, None
    straddle = None
    if uncertainty is not None:
        straddle = _straddle(ctx, known)
        # A range straddling the bar is decided by its break-even (PRODUCT §3, stage 5): what argues against the
        # work at the midpoint is one point of the range, not the range, and no corner asks to remeasure.
        for finding in findings:
            if finding.overridden_by is None and _argued(finding) in ("decline", "redirect"):
                finding.overridden_by = uncertainty.rule
        findings.append(uncertainty)
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
            bound = _binding_end(ctx, known, _decider(findings)[0])
            if bound is not None:
                ctx = bound[0]
                findings = _run(ctx, checks)
        verdict, deciding = decide(findings)
        statement = sentence(deciding.message)
        if bound is not None and not _quotes_range(deciding):
            statement = _at_end(bound[1], deciding.message) or statement
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
    findings = _run(_context(proposal, policy, registry(), calibration), (module,))
    return findings[0] if findings else None


def argued(finding: Finding) -> Verdict | None:
    """The verdict a finding argues for: its own, else its effect's (`info` argues none)."""
    return _argued(finding)


def verdict_at(proposal: Proposal, policy: Policy, p: float, k: float, checks: Sequence[ModuleType]) -> Verdict:
    """The pure verdict function at one point (p, k): what bisection searches for break-even values and a range's
    corners are judged by. Only the verdict is asked, so the checks that can argue nothing but `fund` (the Amdahl
    figures and their sentence, the most expensive to write) do not run, and the others may leave out the findings
    that argue `fund` or nothing (`Context.verdict_only`): with no other finding the verdict is `fund`, as `decide`
    would have found it (a test holds the two equal)."""
    return _verdict(context(proposal, policy, p, k, verdict_only=True), checks)


def _verdict(ctx: Context, checks: Sequence[ModuleType]) -> Verdict:
    """`verdict_at` on a context made with `verdict_only`."""
    best: Verdict = "fund"
    rank = RANK
    for check, _ in _deciders(tuple(checks)):
        finding = check(ctx)
        if finding is None or finding.overridden_by is not None:
            continue
        verdict = _argued(finding)
        if verdict is not None and rank[verdict] > rank[best]:
            best = verdict
    return best


# --- ranges --------------------------------------------------------------------------------------------------------

RANGED = ("speedup", "saving_fraction", "saving_ms", "new_ms", "remaining_ms", "rate")


def _ends(value: float | Range | str | None) -> tuple[float, float]:
    point = _point(value, "")
    return (value.low, value.high) if isinstance(value, Range) else (point, point)


def _ranges(
    proposal: Proposal,
    policy: Policy,
    checks: Sequence[ModuleType],
    ctx: Context,
    known: dict[tuple[float, float], Verdict],
) -> tuple[dict[str, Interval], bool, Finding | None]:
    """Every figure's exact extremes over the box of (p, k), the verdict over the box, and where it changes.

    Each figure of PRODUCT §2 is monotonic in p and in k separately, so its extremes over the box lie on its four
    corners (for `remaining_ms = baseline·p/k` low p with high k and high p with low k; for the others the
    diagonal). Where the verdict differs between corners, the decision is conditional on the break-even value
    of the uncertain input, found by bisection on the pure verdict function. `known` holds the verdicts at points
    already evaluated (the point itself, when its findings are the pure verdict function's); each point is
    evaluated once (a point `p` or `k` makes two corners of four).
    """
    (p_low, p_high), (k_low, k_high) = _ends(proposal.p), _ends(proposal.k)
    corners = [(p, k) for p in (p_low, p_high) for k in (k_low, k_high)]
    # Each corner's figures as the decision states them: k derived end to end (added work), several targets or a
    # collective's transfer (Context.acted), the return counting upkeep.
    at_corner = {corner: context(proposal, policy, *corner, verdict_only=True, like=ctx) for corner in corners}
    figures = [at_corner[corner].amdahl for corner in corners]
    ranges: dict[str, Interval] = {}
    for name in RANGED:
        values = [getattr(f, name) for f in figures]
        finite = [v for v in values if v is not None]
        ranges[name] = (
            Interval(low=min(finite), high=max(finite)) if len(finite) == len(values) else Interval(low=None, high=None)
        )
    for corner, corner_ctx in at_corner.items():  # each corner judged on the context its figures came from
        if corner not in known:
            known[corner] = _verdict(corner_ctx, checks)
    verdicts = {corner: known[corner] for corner in corners}
    point = _known_verdict(known, ctx, ctx.p, ctx.k, checks)
    if "remeasure" in verdicts.values() or point == "remeasure":
        return ranges, all(v == point for v in verdicts.values()), None
    passing = {corner for corner, verdict in verdicts.items() if verdict in PASSING}
    if not passing or len(passing) == len(verdicts):
        return ranges, all(v == point for v in verdicts.values()), None
    return ranges, False, _uncertainty(proposal, policy, checks, ctx, verdicts, known)


def _known_verdict(
    known: dict[tuple[float, float], Verdict], ctx: Context, p: float, k: float, checks: Sequence[ModuleType]
) -> Verdict:
    """`verdict_at` for the proposal of `ctx` at another point, each point evaluated once (its point-free figures
    taken from `ctx`)."""
    verdict = known.get((p, k))
    if verdict is None:
        at = context(ctx.proposal, ctx.policy, p, k, verdict_only=True, like=ctx)
        verdict = known[(p, k)] = _verdict(at, checks)
    return verdict


def _uncertainty(
    proposal: Proposal,
    policy: Policy,
    checks: Sequence[ModuleType],
    ctx: Context,
    verdicts: dict[tuple[float, float], Verdict],
    known: dict[tuple[float, float], Verdict],
) -> Finding:
    """The condition a straddling range puts on the decision: a break-even that holds over the whole box.

    With one input ranged, its break-even at the other's value. With both, the break-even k at the low end of p
    (then every p of the range passes with it), else the break-even p at the low end of k, else — when even the
    highest k fails at the lowest p and the highest p at the lowest k — the point on the box's diagonal where the
    verdict changes: a prototype must show both figures. A break-even taken at the midpoint of the other input
    would fund a proposal that fails at that input's low end.
    """
    (p_low, p_high), (k_low, k_high) = _ends(proposal.p), _ends(proposal.k)
    failing = [corner for corner, verdict in verdicts.items() if verdict not in PASSING]
    passing = [corner for corner, verdict in verdicts.items() if verdict in PASSING]
    worst = verdicts[failing[0]]
    figures: dict[str, Figure] = {"verdict_low": worst, "verdict_high": verdicts[passing[0]]}
    p_ranged = isinstance(proposal.p, Range) and p_high > p_low
    k_ranged = isinstance(proposal.k, Range) and k_high > k_low

    def verdict(p: float, k: float) -> Verdict:
        return _known_verdict(known, ctx, p, k, checks)

    def at(p: float, k: float) -> bool:
        return verdict(p, k) in PASSING

    p_span, k_span = f"the {pct(p_low)}–{pct(p_high)} range", f"the {times(k_low)}–{times(k_high)} range"
    slower = " (a slowdown)" if k_low < 1 else ""
    if k_ranged:
        p_at = p_low if p_ranged else ctx.p
        if at(p_at, k_high) and not at(p_at, k_low):
            edge = break_even(lambda value: at(p_at, value), k_low, k_high)
            said = said_k(lambda value: at(p_at, value), edge)
            figures |= {"break_even_k": edge, "break_even_k_said": said}
            where = f", the break-even at p = {pct(p_low)} (the low end of its range)" if p_ranged else ""
            message = (
                f"Fund if a prototype shows k ≥ {_plain(said)}{where}: {k_span} straddles the bar, and at its low "
                f"end{slower} the verdict is {worst}."
            )
            return condition(UNCERTAINTY, figures, message, stage="condition")
    if p_ranged:
        k_at = k_low if k_ranged else ctx.given_k
        if at(p_high, k_at) and not at(p_low, k_at):
            edge = break_even(lambda value: at(value, k_at), p_low, p_high)
            said = said_share(lambda value: at(value, k_at), edge)
            figures |= {"break_even_p": edge, "break_even_p_said": said}
            if k_ranged:
                message = (
                    f"Fund if a timeline shows p ≥ {pct(said)}, the break-even at k = {times(k_low)} (the low end of "
                    f"its range): {p_span} straddles the bar, and at {pct(p_low)} even {times(k_high)} is "
                    f"{verdict(p_low, k_high)}."
                )
            else:
                message = (
                    f"Fund if a timeline shows p ≥ {pct(said)}: {p_span} straddles the bar, and at its low end the "
                    f"verdict is {worst}."
                )
            return condition(UNCERTAINTY, figures, message, stage="condition")
    if p_ranged and k_ranged and at(p_high, k_high) and not at(p_low, k_low):
        # Neither input alone carries the other's whole range: the pair where the diagonal crosses the bar, both
        # to be shown (every point with p and k at least these passes when the verdict is monotonic in each).
        t = break_even(lambda s: at(p_low + s * (p_high - p_low), k_low + s * (k_high - k_low)), 0.0, 1.0)
        p_edge, k_edge = p_low + t * (p_high - p_low), k_low + t * (k_high - k_low)
        # Each printed at a figure that passes with the other as printed: k with p rounded up, then p with that k
        # (5.44% and 2.231 printed "5.4%" and "2.23" would save 2.98% against a 3% bar).
        k_said = said_k(lambda value: at(share_bounds(p_edge)[1], value), k_edge)
        p_said = said_share(lambda value: at(value, k_said), p_edge)
        figures |= {
            "break_even_p": p_edge,
            "break_even_k": k_edge,
            "break_even_p_said": p_said,
            "break_even_k_said": k_said,
        }
        message = (
            f"Fund if a timeline shows p ≥ {pct(p_said)} and a prototype k ≥ {_plain(k_said)}: at {pct(p_low)} even "
            f"{times(k_high)} is {verdict(p_low, k_high)}, and {pct(p_high)} at {times(k_low)} is "
            f"{verdict(p_high, k_low)}."
        )
        return condition(UNCERTAINTY, figures, message, stage="condition")
    # The range straddles the bar in both inputs at once; no single break-even value separates it.
    message = (
        f"Fund on the condition that a prototype narrows the range: at {times(_speed(*failing[0]))} the verdict "
        f"is {worst}, at {times(_speed(*passing[0]))} {verdicts[passing[0]]}."
    )
    return condition(UNCERTAINTY, figures, message, stage="condition")


def _binding_end(ctx: Context, known: dict[tuple[float, float], Verdict], point: Verdict) -> tuple[Context, str] | None:
    """The corner of a range that does not straddle the bar at which its verdict is argued, with how it is said
    (`p = 0.2%, the least the range saves`): the corner that saves least when the range passes (it passes even
    there, on whatever condition holds there) and the one that saves most when it fails (it fails even there). None
    for a remeasure (the scope is in doubt, not the figure)."""
    if point == "remeasure":
        return None
    proposal = ctx.proposal
    (p_low, p_high), (k_low, k_high) = _ends(proposal.p), _ends(proposal.k)
    corners = sorted({(p, k) for p in (p_low, p_high) for k in (k_low, k_high)})
    # every corner passes or every one fails (the range does not straddle the bar); the verdict is the binding
    # corner's: a range funded outright at its midpoint but only on a condition at its low end is that fund_if
    same = [
        corner
        for corner in corners
        if known.get(corner) != "remeasure" and (known.get(corner) in PASSING) == (point in PASSING)
    ]
    if not same:
        return None
    saving = {corner: context(proposal, ctx.policy, *corner, verdict_only=True, like=ctx).run_saving for corner in same}
    passes = point in PASSING
    # ties go to the lowest corner when it passes, the highest when it fails (sorted: low p, then low k, first)
    chosen = (min if passes else max)(reversed(same) if not passes else same, key=lambda corner: saving[corner])
    p, k = chosen
    where = []
    if p_high > p_low:
        where.append(f"p = {pct(p)}")
    if k_high > k_low:
        where.append(f"k = {times(k)}")
    said = f"{' and '.join(where)}, the {'least' if passes else 'most'} the range saves"
    bound = context(proposal, ctx.policy, p, k, ctx.probe, calibration=ctx.calibration, proposed=ctx.proposed, like=ctx)
    return bound, said


def _quotes_range(finding: Finding) -> bool:
    """Whether a finding's sentence quotes the range from end to end itself (amdahl's `2.5–6.06×`, added work's and
    a noise floor's savings over the corners: their ends are figures `…_low` and `…_high`), so no one end is named
    before it."""
    return finding.rule == ID_AMDAHL or any(name.endswith(("_low", "_high")) for name in finding.figures)


def _at_end(where: str, message: str) -> str | None:
    """The statement of a range argued at one end, saying which (`At p = 1.2%, the most the range saves: …`) where
    that fits in one statement; None where it does not (the finding's own sentence is then the statement)."""
    said = f"At {where}: {message}"
    return said if len(said) <= STATEMENT_CHARS else None


@dataclass(frozen=True, slots=True)
class Corner:
    """One corner of a straddling range as the reasoning quotes it: the point as the proposal states it, its verdict
    and the context whose figures (the value of the work, its return) are the decision's there."""

    p: float
    k: float
    verdict: Verdict
    ctx: Context


@dataclass(frozen=True, slots=True)
class Straddle:
    """A range whose corners straddle the bar: the worst failing corner (`low`) and the best passing one (`high`),
    by the end-to-end saving, and which inputs are ranged (what the reasoning names)."""

    low: Corner
    high: Corner
    p_ranged: bool
    k_ranged: bool


def _straddle(ctx: Context, known: dict[tuple[float, float], Verdict]) -> Straddle:
    """The two corners stages 2 and 3 quote for a range decided by its break-even (`known` holds every corner's
    verdict): of those that fail, the one that saves least; of those that pass, the one that saves most."""
    proposal = ctx.proposal
    (p_low, p_high), (k_low, k_high) = _ends(proposal.p), _ends(proposal.k)
    corners = sorted({(p, k) for p in (p_low, p_high) for k in (k_low, k_high)})
    at = {
        corner: Corner(*corner, known[corner], context(proposal, ctx.policy, *corner, verdict_only=True, like=ctx))
        for corner in corners
    }
    failing = [at[corner] for corner in corners if known[corner] not in PASSING]
    passing = [at[corner] for corner in corners if known[corner] in PASSING]
    return Straddle(
        low=min(failing, key=lambda corner: corner.ctx.run_saving),
        high=max(reversed(passing), key=lambda corner: corner.ctx.run_saving),
        p_ranged=p_high > p_low,
        k_ranged=k_high > k_low,
    )


def _speed(p: float, k: float) -> float:
    return amdahl.speedup(p, k)


def _plain(value: float) -> str:
    """A break-even value as typed back: 1.23, not 1.2300000001 (three figures; `said_k` has chosen a value that
    prints as itself and passes)."""
    return significant(value)


# --- reasoning -----------------------------------------------------------------------------------------------------


def reasoning(
    ctx: Context, findings: Sequence[Finding], straddle: Straddle | None = None, *, verdict: Verdict | None = None
) -> list[StageAnswer]:
    """The argument in order: each stage's question, its answer, the checks that spoke and their figures.

    Each answer is the sentence of the finding that settles the stage (so every clause comes from figures that
    finding carries) — stage 5 the sentences of every condition, which all must hold, whatever stage raised it (a
    failing quality gate answers stage 2 and is a condition all the same) — or a short fixed answer when
    no check spoke to it. With a `straddle` (a range decided by its break-even), a stage whose finding objects only
    at the midpoint — set aside by `uncertainty` — answers with what holds across the range instead: its figure at
    the best passing corner and at the worst failing one, and the verdict at each. Under a `remeasure` verdict the
    conditions of stage 5 are kept, said to wait for the new numbers (they are what funding asks of the proposal
    once it is re-measured, not what stands between it and funding now). One pass over the findings: this runs for
    every proposal.
    """
    worth = ctx.worth
    cost = worth.cost
    carrier = CARRIED_BY[worth.basis]
    rules: dict[str, list[str]] = {stage: [] for stage in STAGES}
    doubt = carried = better = first_alternative = refusal = None
    objection: Finding | None = None
    priced: Finding | None = None
    # every condition must hold: stage 5 lists them all, in the order decide() weighs them (by stage, a range's
    # break-even first among stage 5's own)
    conditions: list[tuple[int, int, int, str]] = []
    for index, finding in enumerate(findings):
        stage = finding.stage or "condition"
        rules[stage].append(finding.rule)
        effect = finding.effect
        if effect == "condition" and stage != "alternative" and finding.overridden_by is None:
            # stage 4's "fund, though…" and a redirect's notes are not conditions; a condition another stage raised
            # (a failing quality gate at the worth stage, a fleet size at the cost stage) is one all the same
            conditions.append((_ORDER[stage], finding.rule != UNCERTAINTY, index, finding.message))
            if stage != "condition":
                rules["condition"].append(finding.rule)
        if stage == "trust":
            if effect == "remeasure" and doubt is None:
                doubt = "No: " + finding.message
        elif stage == "worth":
            # a worth-stage condition (a failing quality gate) answers what the work is worth, as an objection does
            if effect in ("opposes", "condition") and objection is None:
                objection = finding
        elif stage == "cost":
            if effect != "info" and priced is None:
                priced = finding
        elif stage == "alternative":
            if first_alternative is None:
                first_alternative = finding.message
            if effect != "info" and better is None:
                better = finding.message
        elif effect == "opposes" and refusal is None and finding.overridden_by is None:
            refusal = finding.message  # a stage-5 check that refuses (a p99 measured worse): stage 5's answer
        if finding.rule == carrier and carried is None:
            carried = finding.message
    alternative = ctx.material_alternative or ctx.alternative
    worth_figures = _worth_figures(ctx)
    cost_figures: dict[str, Figure] = {
        "build_weeks": cost.build_weeks,
        "upkeep_weeks": cost.upkeep_weeks,
        "cost_weeks": cost.weeks,
        "cost_usd": cost.usd,
    }
    worth_answer = objection.message if objection is not None else carried or "No objection."
    cost_answer = priced.message if priced is not None else _cost_answer(cost)
    if straddle is not None:
        # the midpoint's objection, set aside, or the midpoint's value on a fleet or a job (its GPU-equivalents and
        # dollars at a p nobody proposed): stage 2 says what holds across the range instead
        midpoint_money = objection is None and carried is not None and worth.basis in ("fleet", "job")
        if midpoint_money or (objection is not None and objection.overridden_by == UNCERTAINTY):
            worth_answer = _straddled_worth(ctx, straddle, worth_figures)
        if priced is not None and priced.overridden_by == UNCERTAINTY:
            cost_answer = _straddled_cost(ctx, straddle, cost_figures)
    return [
        StageAnswer(
            stage="trust",
            question=QUESTIONS["trust"],
            answer=doubt or "Yes: no check doubts the scope, the method or the inputs.",
            rules=rules["trust"],
        ),
        StageAnswer(
            stage="worth",
            question=QUESTIONS["worth"],
            answer=worth_answer,
            rules=rules["worth"],
            figures=worth_figures,
        ),
        StageAnswer(
            stage="cost",
            question=QUESTIONS["cost"],
            answer=cost_answer,
            rules=rules["cost"],
            figures=cost_figures,
        ),
        StageAnswer(
            stage="alternative",
            question=QUESTIONS["alternative"],
            answer=better or first_alternative or _no_alternative(ctx),
            rules=rules["alternative"],
            figures=alternative.figures() if alternative is not None else {},
        ),
        StageAnswer(
            stage="condition",
            question=QUESTIONS["condition"],
            answer=_conditions_answer([said for *_, said in sorted(conditions)], verdict, refusal),
            rules=rules["condition"],
        ),
    ]


def _corners(straddle: Straddle, figures: dict[str, Figure]) -> tuple[str, str, str]:
    """The range as said (`the 1%–4.5% range of p`) and each quoted corner (`p = 4.5%`), high then low, with the
    corners' coordinates and verdicts put in `figures` (`_high` the passing corner, `_low` the failing one, as the
    `uncertainty` finding's `verdict_high` and `verdict_low`)."""
    proposal = straddle.high.ctx.proposal
    (p_low, p_high), (k_low, k_high) = _ends(proposal.p), _ends(proposal.k)
    if straddle.p_ranged and straddle.k_ranged:
        span = "the ranges of p and k"
    elif straddle.p_ranged:
        span = f"the {pct(p_low)}–{pct(p_high)} range of p"
    else:
        span = f"the {times(k_low)}–{times(k_high)} range of k"
    said: list[str] = []
    for end, corner in (("high", straddle.high), ("low", straddle.low)):
        figures |= {f"p_{end}": corner.p, f"k_{end}": _k_figure(corner.k), f"verdict_{end}": corner.verdict}
        where = []
        if straddle.p_ranged:
            where.append(f"p = {pct(corner.p)}")
        if straddle.k_ranged:
            where.append(f"k = {times(corner.k)}")
        said.append(" and ".join(where))
    return span, said[0], said[1]


def _straddled_worth(ctx: Context, straddle: Straddle, figures: dict[str, Figure]) -> str:
    """Stage 2 across a straddling range: the end-to-end saving (or, on a fleet, the value) at both quoted corners,
    against the noise floor (or the cost) when that is the bar the two sides of the range fall on."""
    span, high_at, low_at = _corners(straddle, figures)
    high, low = straddle.high.ctx.worth, straddle.low.ctx.worth
    verdicts = f"({straddle.high.verdict})", f"({straddle.low.verdict})"
    if high.money is not None and low.money is not None:
        value_high, value_low, against = high.money.value_usd, low.money.value_usd, high.money.cost_usd
        figures |= {"value_usd_high": value_high, "value_usd_low": value_low, "engineering_cost_usd": against}
        days = high.money.job_days
        if days is not None:
            figures["job_days"] = days
            over = f"over the {num(days)}-day job"
        else:
            figures["horizon_months"] = ctx.policy.horizon_months
            over = f"over {months(ctx.policy.horizon_months)}"
        straddles = f"straddles its {usd(against)} cost:" if value_low < against <= value_high else "is"
        return (
            f"Across {span} the value {over} {straddles} {usd(value_high)} at {high_at} {verdicts[0]}, "
            f"{usd(value_low)} at {low_at} {verdicts[1]}."
        )
    floor = ctx.policy.noise_floor
    figures |= {"end_to_end_saving_high": high.saving, "end_to_end_saving_low": low.saving}
    if low.saving < floor <= high.saving:
        figures["noise_floor"] = floor
        straddles = f"straddles the {pct(floor)} noise floor:"
    else:
        straddles = "is"  # the range turns on another bar (a cost, a redirect): its figures, not a bar it misses
    return (
        f"Across {span} the saving {straddles} {pct(high.saving)} end to end at {high_at} {verdicts[0]}, "
        f"{pct(low.saving)} at {low_at} {verdicts[1]}."
    )


def _straddled_cost(ctx: Context, straddle: Straddle, figures: dict[str, Figure]) -> str:
    """Stage 3 across a straddling range: the cost (one figure everywhere) and the return per engineer-week at both
    quoted corners, against the rate the policy funds when that is the bar the two sides fall on."""
    head = _cost_answer(ctx.worth.cost).removesuffix(".")
    span, high_at, low_at = _corners(straddle, figures)
    high, low = straddle.high.ctx, straddle.low.ctx
    verdicts = f"({straddle.high.verdict})", f"({straddle.low.verdict})"
    rate_high, rate_low = high.worth.rate, low.worth.rate
    if rate_high is None or rate_low is None:
        verdict_high, verdict_low = straddle.high.verdict, straddle.low.verdict
        return f"{head}; across {span} the verdict is {verdict_high} at {high_at}, {verdict_low} at {low_at}."
    floor = ctx.policy.min_rate
    figures |= {"rate_fraction_high": rate_high, "rate_fraction_low": rate_low}
    base = ctx.baseline_ms
    # In ms per engineer-week where the saving is a share of the measured scope (as rate_of_return says it).
    in_ms = base is not None and all(
        corner.p_run == corner.p and math.isfinite(rate) for corner, rate in ((high, rate_high), (low, rate_low))
    )
    if in_ms and base is not None:
        figures |= {"rate_ms_high": rate_high * base, "rate_ms_low": rate_low * base}
        said_high, said_low = ms(rate_high * base), ms(rate_low * base)
        funded = f"{ms(floor * base)} per engineer-week"
    else:
        said_high, said_low = pct(rate_high), pct(rate_low)
        funded = f"{pct(floor)} of the step per engineer-week"
    if rate_low < floor <= rate_high:
        figures |= {"min_rate": floor} | ({"min_rate_ms": floor * base} if in_ms and base is not None else {})
        straddles = f"straddles the {funded} the policy funds:"
    else:
        straddles = "is"
    return (
        f"{head}; across {span} the return {straddles} {said_high} at {high_at} {verdicts[0]}, {said_low} at "
        f"{low_at} {verdicts[1]}."
    )


def _k_figure(k: float) -> Figure:
    return "inf" if math.isinf(k) else k


REMEASURED_FIRST = "Moot until the numbers are re-measured; then, if they still hold: "
"""Stage 5's lead under a `remeasure` verdict: the conditions follow it, each as its rule wrote it."""


def _conditions_answer(conditions: Sequence[str], verdict: Verdict | None, refusal: str | None = None) -> str:
    """Stage 5's answer: every condition, or, where a stage-5 check refuses the work (a p99 measured worse), that
    refusal first — "None." beside a decline it decided said nothing of why."""
    said = " ".join(([f"No: {refusal}"] if refusal is not None else []) + list(conditions))
    if not said:
        return "None."
    return REMEASURED_FIRST + said if verdict == "remeasure" else said


def _no_alternative(ctx: Context) -> str:
    if ctx.step_unseen:
        # behind a barrier the step does not see the target: the rank that sets it is the better use, not a phase
        # (named where each rank's arrival is measured; not the target rank's own breakdown, which waits as well)
        if ctx.alternative is not None:
            return f"Yes: {ctx.alternative.phrase()}, the rank that sets the step."
        return "Yes: the slowest rank's compute, which sets the step; trace all ranks to name it."
    if not ctx.proposal.breakdown:
        return "None known: no breakdown was given."
    return "None known: nothing in the breakdown is larger than the target."


def _cost_answer(cost: Cost) -> str:
    if cost.weeks is None:
        return "Unknown: no cost was given."
    money = f" ({usd(cost.usd)})" if cost.usd else ""
    if cost.upkeep_weeks and cost.build_weeks is None:
        upkeep = num(cost.upkeep_weeks)
        return f"At least {weeks(cost.weeks)}{money}: {upkeep} of upkeep over the horizon; no build cost given."
    if cost.upkeep_weeks:
        return (
            f"{weeks(cost.weeks)}{money}: {num(cost.build_weeks or 0)} to build and {num(cost.upkeep_weeks)} of "
            f"upkeep over the horizon."
        )
    return f"{weeks(cost.weeks)}{money} to build."


def _worth_figures(ctx: Context) -> dict[str, Figure]:
    worth = ctx.worth
    figures: dict[str, Figure] = {
        "end_to_end_saving": worth.saving,
        # A share of the step per engineer-week; `rate` is amdahl's, in its `rate_unit` (ms/week given a baseline).
        "rate_fraction": worth.rate,
        "basis": worth.basis,
        "clears": worth.clears,
    }
    if worth.strategic_saving is not None:
        figures |= {"strategic_saving": worth.strategic_saving, "strategic_credible": worth.strategic_credible}
    if worth.capacity_saving is not None:
        # a memory fix: the share of GPU capacity it frees (fewer GPUs per replica, net of any slower step), what its
        # value is counted on (a portfolio ranks it on this, not on its time per step)
        figures["capacity_saving"] = worth.capacity_saving
    if worth.money is not None:
        figures |= {
            "gpu_equivalents": worth.money.gpus,
            "value_usd": worth.money.value_usd,
            "engineering_cost_usd": worth.money.cost_usd,
        }
    return figures
