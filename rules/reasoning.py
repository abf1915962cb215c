"""The argument written out stage by stage: each stage's question, its answer, the checks that spoke and their figures.

One pass over the findings the engine decided on, for every proposal; a range decided by its break-even answers
stages 2 and 3 with what holds across the range (`rules.ranges.Straddle`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from worthit.rules.context import Context
from worthit.rules.model import Figure, Finding, Stage, StageAnswer, Verdict
from worthit.rules.ranges import UNCERTAINTY, Straddle, box
from worthit.rules.text import gpu_equivalents, join, months, ms, num, pct, times, usd, weeks
from worthit.rules.verdict import STAGE_ORDER, STAGES
from worthit.rules.worth import CARRIED_BY, Cost, recurring_gpus

__all__ = ["QUESTIONS", "REMEASURED_FIRST", "reasoning"]

QUESTIONS: dict[Stage, str] = {
    "trust": "Can these numbers be trusted?",
    "worth": "What is it worth?",
    "cost": "What does it cost?",
    "alternative": "Is there a better use of the effort?",
    "condition": "On what conditions?",
}


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
    doubt = trusted = carried = better = first_alternative = refusal = None
    objection: Finding | None = None
    priced: Finding | None = None
    # every condition must hold: stage 5 lists them all, in the order decide() weighs them (by stage, a range's
    # break-even first among stage 5's own)
    conditions: list[tuple[int, int, int, str]] = []
    ranked: list[str] = []
    largest_note = -1.0
    for index, finding in enumerate(findings):
        stage = finding.stage or "condition"
        rules[stage].append(finding.rule)
        effect = finding.effect
        if effect == "condition" and stage == "alternative" and finding.overridden_by is None:
            ranked.append(_ranked(finding))  # "fund, though X is larger": a condition of a fund_if all the same
        if effect == "condition" and stage != "alternative" and finding.overridden_by is None:
            # stage 4's "fund, though…" and a redirect's notes are not conditions; a condition another stage raised
            # (a failing quality gate at the worth stage, a fleet size at the cost stage) is one all the same
            conditions.append((STAGE_ORDER[stage], finding.rule != UNCERTAINTY, index, finding.message))
            if stage != "condition":
                rules["condition"].append(finding.rule)
        if stage == "trust":
            if effect == "remeasure" and doubt is None:
                doubt = "No: " + finding.message
            elif effect == "condition" and trusted is None:
                trusted = "Only in part: " + finding.message  # a claim the inputs bound (a k above its roofline)
        elif stage == "worth":
            # a worth-stage condition (a failing quality gate) answers what the work is worth, as an objection does
            if effect in ("opposes", "condition") and objection is None:
                objection = finding
        elif stage == "cost":
            if effect != "info" and priced is None:
                priced = finding
        elif stage == "alternative":
            # among notes alone, the one about the most time speaks (a 32% input wait before a 5% kernel)
            share = _alternative_share(finding)
            if first_alternative is None or share > largest_note:
                first_alternative, largest_note = finding.message, share
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
    if cost.gpu_hours:
        cost_figures |= {"gpu_hours": cost.gpu_hours, "gpu_usd": cost.gpu_usd}
    if cost.people is not None:
        cost_figures |= {"people": cost.people, "calendar_weeks": cost.calendar_weeks}
    if cost.port_weeks:
        cost_figures |= {"port_weeks": cost.port_weeks, "generations": cost.generations}
    worth_answer = objection.message if objection is not None else carried or "No objection."
    recurring = recurring_gpus(ctx.proposal)
    units = _cost_answer(cost, recurring)
    cost_answer = priced.message if priced is not None else units
    if priced is not None and _in_units(cost, recurring):
        # a cost paid in more than engineer-weeks: every unit said, then what the cost stage concluded
        cost_answer = f"{units} {priced.message}"
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
            answer=doubt or trusted or "Yes: no check doubts the scope, the method or the inputs.",
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
            answer=_conditions_answer(
                [said for *_, said in sorted(conditions)] + (ranked if verdict == "fund_if" else []), verdict, refusal
            ),
            rules=rules["condition"],
        ),
    ]


def _corners(straddle: Straddle, figures: dict[str, Figure]) -> tuple[str, str, str]:
    """The range as said (`the 1%–4.5% range of p`) and each quoted corner (`p = 4.5%`), high then low, with the
    corners' coordinates and verdicts put in `figures` (`_high` the passing corner, `_low` the failing one, as the
    `uncertainty` finding's `verdict_high` and `verdict_low`)."""
    (p_low, p_high), (k_low, k_high) = box(straddle.high.ctx)
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


def _alternative_share(finding: Finding) -> float:
    """The share of the step a stage-4 note is about: the phase it names, or the time no kernel speedup touches."""
    for name in ("alternative_share", "non_kernel_share"):
        value = finding.figures.get(name)
        if isinstance(value, float | int) and not isinstance(value, bool):
            return float(value)
    return 0.0


def _ranked(finding: Finding) -> str:
    """Stage 4's "fund, though X is the larger target" as stage 5 lists it, without repeating stage 4's sentence."""
    name, share = finding.figures.get("alternative"), finding.figures.get("alternative_share")
    if isinstance(name, str) and isinstance(share, float | int):
        return f"That {name} ({pct(share)} of the step) is worked on first, as stage 4 says."
    return "That the larger target stage 4 names is worked on first."


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
    if ctx.alternative is not None:
        # named by a finding's sentence or not, the larger use of the weeks is said here (a barrier's wait)
        return f"Yes: {ctx.alternative.phrase()}."
    if not ctx.proposal.breakdown:
        return "None known: no breakdown was given."
    return "None known: nothing in the breakdown is larger than the target."


def _cost_answer(cost: Cost, recurring: float = 0.0) -> str:
    """The one cost in every unit it is paid in: engineer-weeks (people × calendar weeks where so stated), upkeep,
    ports to further device generations, one-off GPU-hours, and the GPUs its starts keep busy."""
    if _in_units(cost, recurring):
        return _cost_in_units(cost, recurring)
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


def _in_units(cost: Cost, recurring: float) -> bool:
    """Whether the cost is paid in more than engineer-weeks and upkeep (or stated as people × calendar weeks)."""
    return bool(cost.gpu_hours or cost.people is not None or cost.port_weeks or recurring)


def _cost_in_units(cost: Cost, recurring: float) -> str:
    parts: list[str] = []
    if cost.build_weeks is not None:
        build = weeks(cost.build_weeks)
        if cost.people is not None and cost.calendar_weeks is not None:
            people = f"{cost.people} {'person' if cost.people == 1 else 'people'}"
            calendar = num(cost.calendar_weeks)
            build += f" ({people} for {calendar} calendar week{'' if calendar == '1' else 's'})"
        parts.append(f"{build} to build")
    if cost.upkeep_weeks:
        parts.append(f"{weeks(cost.upkeep_weeks)} of upkeep over the horizon")
    if cost.port_weeks:
        further = cost.generations - 1
        parts.append(
            f"{weeks(cost.port_weeks)} to ship to {further} further device generation{'' if further == 1 else 's'}"
        )
    if cost.gpu_hours:
        parts.append(f"{num(cost.gpu_hours, 0)} GPU-hours of one-off compute ({usd(cost.gpu_usd)})")
    if recurring:
        parts.append(f"{gpu_equivalents(recurring)} its starts keep busy, netted out of what it frees")
    if cost.build_weeks is None and cost.weeks is None:
        parts.append("no engineering cost given")
    total = f"{usd(cost.usd)} in all: " if cost.usd else ""
    return f"{total}{join(parts)}."


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
