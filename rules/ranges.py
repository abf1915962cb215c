"""A ranged proposal: every figure's extremes over its box of (p, k), the verdict at the corners, the break-even a
straddling range is decided by, and the end that binds a range that does not straddle the bar.

Each figure of PRODUCT §2 is monotonic in p and in k separately, so its extremes over the box (`Context.box`) lie on
its corners; the verdict there is the pure verdict function's (`rules.verdict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

from worthit.rules import amdahl
from worthit.rules.context import Context, context
from worthit.rules.errors import InvalidInput
from worthit.rules.findings import condition
from worthit.rules.model import Figure, Finding, Interval, Proposal, Range, Verdict
from worthit.rules.policy import Policy
from worthit.rules.search import PASSING, break_even, said_k, said_share
from worthit.rules.text import STATEMENT_CHARS, pct, share_bounds, significant, times
from worthit.rules.verdict import verdict_of

__all__ = [
    "ID_AMDAHL",
    "RANGED",
    "UNCERTAINTY",
    "Corner",
    "Straddle",
    "at_end",
    "binding_end",
    "box",
    "over_range",
    "quotes_range",
    "straddle_of",
]

ID_AMDAHL = "amdahl"
"""The rule whose sentence of a ranged proposal quotes every figure over the range (rules.checks.amdahl)."""

UNCERTAINTY = "uncertainty"
"""The rule of the condition a straddling range puts on the decision (its break-even)."""

RANGED = ("speedup", "saving_fraction", "saving_ms", "new_ms", "remaining_ms", "rate")


def box(ctx: Context) -> tuple[tuple[float, float], tuple[float, float]]:
    """The box of a ranged proposal, (p_low, p_high) and (k_low, k_high) (`Context.box`): what every range figure is
    read at."""
    ends = ctx.box
    if ends is None:
        raise InvalidInput("Expected `p` or `k` as a range (`{low, high}`), got single values")
    return ends


def over_range(
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
    (p_low, p_high), (k_low, k_high) = box(ctx)
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
            known[corner] = verdict_of(corner_ctx, checks)
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
        verdict = known[(p, k)] = verdict_of(at, checks)
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
    (p_low, p_high), (k_low, k_high) = box(ctx)
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


def binding_end(ctx: Context, known: dict[tuple[float, float], Verdict], point: Verdict) -> tuple[Context, str] | None:
    """The corner of a range that does not straddle the bar at which its verdict is argued, with how it is said
    (`p = 0.2%, the least the range saves`): the corner that saves least when the range passes (it passes even
    there, on whatever condition holds there) and the one that saves most when it fails (it fails even there). None
    for a remeasure (the scope is in doubt, not the figure)."""
    if point == "remeasure":
        return None
    proposal = ctx.proposal
    (p_low, p_high), (k_low, k_high) = box(ctx)
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


def quotes_range(finding: Finding) -> bool:
    """Whether a finding's sentence quotes the range from end to end itself (amdahl's `2.5–6.06×`, added work's and
    a noise floor's savings over the corners: their ends are figures `…_low` and `…_high`), so no one end is named
    before it."""
    return finding.rule == ID_AMDAHL or any(name.endswith(("_low", "_high")) for name in finding.figures)


def at_end(where: str, message: str) -> str | None:
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


def straddle_of(ctx: Context, known: dict[tuple[float, float], Verdict]) -> Straddle:
    """The two corners stages 2 and 3 quote for a range decided by its break-even (`known` holds every corner's
    verdict): of those that fail, the one that saves least; of those that pass, the one that saves most."""
    proposal = ctx.proposal
    (p_low, p_high), (k_low, k_high) = box(ctx)
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
