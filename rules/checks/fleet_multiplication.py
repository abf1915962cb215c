"""fleet_multiplication — multiply before you decide.

What it checks: `flags.fleet_gpus`. GPU-equivalents freed = fleet × end-to-end saving fraction, recurring; valued at
the policy's `gpu_hour_usd` around the clock (8,760 hours a year) over `horizon_months`, against the engineering
cost: (`cost_weeks` + upkeep of unportable code over the horizon) × `engineer_week_usd`. With `flags.run_days` the
fleet is a fixed job: the capacity is valued over those days once, not as recurring capacity. When the value covers
the cost it supports funding — and, being the value of the work (rules.worth), it is what per-run bars are then
judged against; when it does not, it opposes, unless a credible strategic workload pays for the work per run
(rules.worth), which then carries it.

Why it matters: a percentage that looks trivial per run is enormous in aggregate, and it recurs, while the
engineering cost is paid once. Per-run rate-of-return thresholds are the wrong test at fleet scale.

Example: 5% on 20,000 GPUs frees 1,000 GPU-equivalents, $17.5M a year at $2 per GPU-hour, against $20k of
engineering: fund, payback well under a month.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import carried, condition, cost_kind, engineering, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import at_least, count, gpu_equivalents, months, num, pct, saves, times, usd
from worthit.rules.worth import HOURS_PER_DAY

ID = "fleet_multiplication"
STAGE = "worth"

EXAMPLES = (
    Example(
        {"target": "gemm", "p": 0.1, "k": 2, "cost_weeks": 4, "flags": {"fleet_gpus": 20000}},
        fires=True,
        verdict="fund",
        figures={
            "gpu_equivalents": 1000,
            "annual_value_usd": 17_520_000,
            "engineering_cost_usd": 20_000,
            "payback_months": 0.0136986,
        },
    ),
    Example(
        {"target": "gemm", "p": 0.002, "k": 2, "cost_weeks": 10, "flags": {"fleet_gpus": 8}},
        fires=True,
        verdict="decline",
        figures={"gpu_equivalents": 0.008},
    ),
    Example({"p": 0.1, "k": 2}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Prices the capacity a saving frees across the fleet against the engineering it costs."""
    fleet = ctx.proposal.flags.fleet_gpus
    if fleet is None:
        return None
    money = ctx.worth.money
    if money is None:  # pragma: no cover - the worth stage prices every fleet
        return None
    policy = ctx.policy
    # the share of the fleet freed: the run's saving, or with a memory fix (memory_fit) the capacity it frees too
    saving = ctx.run_saving if ctx.worth.capacity_saving is None else ctx.worth.capacity_saving
    gpus, cost = money.gpus, money.cost_usd
    figures: dict[str, Figure] = {
        "fleet_gpus": fleet,
        "saving_fraction": saving,
        "gpu_equivalents": gpus,
        "recurring": money.recurring,
        "annual_value_usd": money.annual_usd,
        "horizon_months": policy.horizon_months,
        "horizon_value_usd": money.value_usd if money.recurring else None,
        "job_days": money.job_days,
        "job_value_usd": None if money.recurring else money.value_usd,
        "engineering_weeks": ctx.worth.cost.weeks or 0.0,
        "maintenance_weeks": ctx.maintenance_weeks,
        "engineering_cost_usd": cost,
        "payback_months": money.payback_months,
    }
    consumed = money.consumed_gpus
    loses = consumed > 0 and money.net_gpus <= 0
    one_off = money.clears and money.recurrence is False and money.job_days is None and cost > 0
    carried_elsewhere = not money.clears and ctx.worth.clears and not loses
    overflows = ctx.worth.fit is not None and ctx.worth.fit.overflows
    if ctx.verdict_only and ((money.clears and not (loses or one_off)) or carried_elsewhere or overflows):
        return None  # it supports funding, or informs
    if saving > 0:
        freed = f"{pct(saving)} on {count(fleet, 'GPU')} frees {gpu_equivalents(gpus)}"
    else:
        freed = f"On {count(fleet, 'GPU')} this {saves(saving, ' of the run')} and frees no capacity"
    fit = ctx.worth.fit
    if fit is not None and fit.overflows:
        # the change raises the memory a replica needs past its devices (memory_fit): what it would free is moot
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"{freed} only if it ran, and the memory it needs after the change does not fit.",
        )
    if consumed > 0:
        # the change's own GPU time on every start is paid out of what it frees (recurring_gpu_cost)
        # net as printed: the printed freed less the printed consumed (0.28 - 0.006 prints 0.27, not net's 0.28)
        figures |= {"consumed_gpus": consumed, "net_gpus": money.net_gpus, "net_gpus_said": money.net_gpus_said}
        if loses:
            flags = ctx.proposal.flags
            head = (
                f"{freed}, but its {num(flags.gpu_minutes_per_start or 0.0)} GPU-minutes on each of "
                f"{num(flags.starts_per_day or 0.0, 0)} starts a day take {gpu_equivalents(consumed)}, so it loses "
                f"{gpu_equivalents(-money.net_gpus_said)} of capacity overall"
            )
            return opposition(ctx, ID, head, figures)
        freed += f", {gpu_equivalents(money.net_gpus_said)} net of the GPU time its starts take"
    if money.recurring and money.recurrence is True:
        worth = f"worth {usd(money.annual_usd or 0.0)} a year and recurring"
    elif money.recurring:
        worth = f"worth {usd(money.annual_usd or 0.0)} a year if the fleet keeps running it"
    else:
        worth = f"for the {num(money.job_days or 0)}-day job only, worth {usd(money.value_usd)} once"
    if one_off:
        # a one-off job of unstated length: how long it must run to pay is the question, not an assumed year
        per_day = money.net_gpus * policy.gpu_hour_usd * HOURS_PER_DAY
        figures["break_even_days"] = days = cost / per_day if per_day > 0 else 0.0
        figures["value_per_day_usd"] = per_day
        # the days a job must run, rounded up as printed: 12.2 days printed "12" would fail at 12
        digits = 0 if days >= 10 else 1
        figures["break_even_days_said"] = said = at_least(days, digits)
        return condition(
            ID,
            figures,
            f"Fund if the one-off job runs at least {num(said, digits)} days: {freed}, "
            f"{usd(per_day)} a day, against {usd(cost)} of {cost_kind(ctx)} (give `run_days` to price the job).",
        )
    if money.clears:
        if cost <= 0:
            against = engineering(ctx, money, figures)
        elif money.payback_months is not None:
            against = f"against {usd(cost)} of {cost_kind(ctx)}, paid back in {months(money.payback_months)}"
        else:
            figures["value_over_cost"] = money.value_usd / cost  # what `times_of` prints: every figure said is kept
            against = f"against {usd(cost)} of {cost_kind(ctx)}, {times_of(money.value_usd, cost)} its cost"
        return Finding(
            rule=ID,
            effect="supports",
            verdict="fund",
            figures=figures,
            message=f"{freed}, {worth}, {against}.",
        )
    if carried_elsewhere and ctx.worth.basis in ("slo", "power", "unowned"):
        # what the change buys (an SLO met, capacity under a power limit) is its value; the step's own change on the
        # fleet is counted in it, said here
        if gpus < 0:
            step = (
                f"On {count(fleet, 'GPU')} its {pct(-saving)} slower step takes {gpu_equivalents(-gpus)}, "
                f"{usd(-(money.annual_usd or money.value_usd))}"
            )
            step += " a year" if money.annual_usd is not None else ""
        else:
            step = f"{freed}, {worth}"
        return carried(ctx, ID, figures, f"{step}, counted in what the change buys.")
    if carried_elsewhere:
        # a credible strategic workload pays for the work per run (rules.worth): the measured fleet's shortfall is
        # said, and carried, never a decline beside "justified by model B"
        return carried(
            ctx,
            ID,
            figures,
            f"On the measured workload {freed[0].lower()}{freed[1:]}, {worth}, short of the {usd(cost)} of "
            "engineering, which the strategic workload carries",
        )
    if gpus <= 0:
        head = freed
    elif money.recurring:
        payback = money.payback_months  # ∞ where a tiny yearly value divides the cost: that is forever too
        taken = months(payback) if payback is not None and math.isfinite(payback) else "forever"
        head = (
            f"{freed}, {worth}, which takes {taken} to pay back "
            f"{usd(cost)} of {cost_kind(ctx)}, past the {months(policy.horizon_months).removesuffix('s')} horizon"
        )
    else:
        head = f"{freed}, {worth}, less than the {usd(cost)} of {cost_kind(ctx)} it costs"
    return opposition(ctx, ID, head, figures)


def times_of(value: float, cost: float) -> str:
    """`71×`, `4.2×` — how many times its cost a one-off saving returns, in the two digits a planner quotes."""
    if cost <= 0:
        return "free"
    ratio = value / cost
    return times(ratio) if ratio >= 100 else f"{num(ratio, 0 if ratio >= 10 else 1)}×"
