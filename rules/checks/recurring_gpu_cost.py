"""recurring_gpu_cost — GPU time a change costs on every start is paid out of the capacity it frees.

What it checks: `flags.gpu_minutes_per_start` × `flags.starts_per_day` (an autotuned compile, a cache warm-up, a
conversion on each deploy or replica start). Around the clock that keeps minutes × starts ÷ 1,440 GPUs busy: GPU-
equivalents subtracted from those the saving frees on `flags.fleet_gpus` (rules.worth nets them out of the value,
priced at the policy's `gpu_hour_usd`). When the starts take as much as the saving frees, the change loses capacity
overall: oppose. Without a fleet the saving cannot be weighed against them: fund only if the fleet is at least the
break-even size, (GPUs the starts take + engineering ÷ the GPU-hours of the horizon, or of the job with
`flags.run_days`) ÷ the saving, computed; when no finite fleet breaks even (a GPU-hour priced near nothing), oppose.

Why it matters: a per-step win is counted on every step, a per-start cost on every start; on a serving fleet that
scales replicas up and down all day, a compile that takes most of an hour per replica can cost more GPUs than the
faster step gives back, and a per-run profile never shows it.

Example: 600 GPUs, 6% faster steps free 36 GPU-equivalents; 45 GPU-minutes on each of 2,000 starts a day take
62.5: a net loss of 26.5 GPU-equivalents, decline.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import condition, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import at_least, count, gpu_equivalents, num, pct, usd
from worthit.rules.worth import HOURS_PER_DAY, HOURS_PER_YEAR, gpu_time_overflows, recurring_gpus

ID = "recurring_gpu_cost"
STAGE = "cost"

_STARTS = {"gpu_minutes_per_start": 45, "starts_per_day": 2000}

EXAMPLES = (
    Example(
        {"target": "step", "p": 1.0, "k": 1 / 0.94, "cost_weeks": 2, "flags": {"fleet_gpus": 600, **_STARTS}},
        fires=True,
        verdict="decline",
        figures={"consumed_gpus": 62.5, "freed_gpus": 36, "net_gpus": -26.5},
    ),
    Example(
        {"target": "step", "p": 1.0, "k": 1 / 0.94, "cost_weeks": 2, "flags": {"fleet_gpus": 6000, **_STARTS}},
        fires=True,
        decision="fund",
        figures={"net_gpus": 297.5},
    ),
    Example(
        {"target": "step", "p": 1.0, "k": 1 / 0.94, "cost_weeks": 2, "flags": _STARTS},
        fires=True,
        verdict="fund_if",
        figures={"break_even_fleet_gpus": 1051.6},
    ),
    Example({"target": "step", "p": 1.0, "k": 1 / 0.94, "cost_weeks": 2, "flags": {"fleet_gpus": 600}}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Weighs the GPU time the change takes on every start against the capacity its saving frees."""
    consumed = recurring_gpus(ctx.proposal)
    if consumed <= 0:
        return None
    flags, policy, saving = ctx.proposal.flags, ctx.policy, ctx.run_saving
    minutes, starts = flags.gpu_minutes_per_start or 0.0, flags.starts_per_day or 0.0
    figures: dict[str, Figure] = {
        "gpu_minutes_per_start": minutes,
        "starts_per_day": starts,
        "consumed_gpus": consumed,
        "consumed_usd_per_year": consumed * policy.gpu_hour_usd * HOURS_PER_YEAR,
        "end_to_end_saving": saving,
    }
    days = flags.run_days
    if not math.isfinite(consumed * policy.gpu_hour_usd * HOURS_PER_DAY * max(days or 0.0, 366.0)):
        raise gpu_time_overflows(ctx.proposal)
    if days is None:
        spent = f"{usd(consumed * policy.gpu_hour_usd * HOURS_PER_YEAR)} a year"
    else:  # a fixed job pays its starts over its own days, not over a year it does not run
        figures["consumed_usd_over_job"] = job_usd = consumed * policy.gpu_hour_usd * HOURS_PER_DAY * days
        spent = f"{usd(job_usd)} over the {num(days)}-day job"
    takes = (
        f"{num(minutes)} GPU-minutes on each of {num(starts, 0)} starts a day take {gpu_equivalents(consumed)}, {spent}"
    )
    money = ctx.worth.money
    fleet = flags.fleet_gpus
    if money is not None and fleet is not None:
        figures |= {
            "freed_gpus": money.gpus,
            "net_gpus": money.net_gpus,
            "net_gpus_said": money.net_gpus_said,
            "fleet_gpus": fleet,
        }
        if money.net_gpus <= 0:
            head = (
                f"{pct(saving)} on {count(fleet, 'GPU')} frees {gpu_equivalents(money.gpus)}, but {takes}, so it loses "
                f"{gpu_equivalents(-money.net_gpus_said)} of capacity overall"
            )
            return opposition(ctx, ID, head, figures)
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"{takes[0].upper()}{takes[1:]}, out of the {gpu_equivalents(money.gpus)} the saving frees, "
            f"leaving {gpu_equivalents(money.net_gpus_said)}.",
        )
    if saving <= 0:
        head = f"The change saves nothing per step, and {takes}"
        return opposition(ctx, ID, head, figures)
    # the hours the freed capacity is counted over: the fixed job's, else the policy's horizon (rules.worth)
    hours = HOURS_PER_DAY * days if days is not None else HOURS_PER_YEAR * policy.horizon_months / 12
    cost_usd = ctx.worth.cost.usd or 0.0
    # One factor at a time: a price and a horizon each positive can multiply to 0 (1e-200 × 1e-200), a 500.
    engineering = cost_usd / policy.gpu_hour_usd / hours if cost_usd > 0 and policy.gpu_hour_usd > 0 else 0.0
    fleet_needed = (consumed + engineering) / saving
    if not math.isfinite(fleet_needed):  # a GPU-hour priced near nothing, or a saving near none: no fleet breaks even
        head = f"No fleet is large enough to pay for it: {takes}, and the {pct(saving)} saved per step frees too little"
        return opposition(ctx, ID, head, figures)
    figures["break_even_fleet_gpus"] = fleet_needed
    # whole GPUs, rounded up: 1,052.4 printed "1,052" would fail at 1,052
    figures["break_even_fleet_gpus_said"] = said = at_least(fleet_needed)
    return condition(
        ID,
        figures,
        f"Fund if the fleet that runs it has at least {num(said, 0)} GPUs: {takes}, which the {pct(saving)} "
        f"saved per step must exceed (give `fleet_gpus`).",
    )
