"""one_off_compute — GPU-hours the work spends once are paid back only by the GPU time it saves.

What it checks: `cost_gpu_hours` (a distillation or QAT run, an autotuning campaign, a sweep), priced at the
policy's `gpu_hour_usd` and added to the one cost (rules.worth). On a fleet, the GPU-hours the saving frees over the
policy's horizon (or the job's days) against those it spends: a change that costs more compute than it will ever
save opposes, whatever the engineering. Without a fleet, the run's saving has no volume to pay the compute with:
fund only if the fleet that runs it is at least the break-even size, the whole cost (engineering and compute) in
GPU-hours ÷ (the saving × the hours of the horizon), computed.

Why it matters: a 150,000 GPU-hour distillation run is $300k of compute before any engineer is paid; counted in
engineer-weeks alone, a change that burns more GPU time than it will ever give back looks free.

Example: distilling a draft model on 150,000 GPU-hours for a 4% faster serving step on 256 GPUs: the fleet gets
back 10.2 GPU-equivalents, 89,708 GPU-hours a year, less than it spent: decline.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import condition, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import at_least, count, num, pct, usd
from worthit.rules.worth import HOURS_PER_DAY, HOURS_PER_YEAR, recurring_gpus

ID = "one_off_compute"
STAGE = "cost"

_DISTILL = {"target": "decode", "p": 0.5, "k": 1 / 0.92, "cost_weeks": 3, "cost_gpu_hours": 150_000}

EXAMPLES = (
    Example(
        # 50% at 1/0.92: 4% of the step; 256 GPUs × 0.04 = 10.24 GPU-equivalents × 8,760 h = 89,702 GPU-hours
        _DISTILL | {"flags": {"fleet_gpus": 256, "recurring": True}},
        fires=True,
        verdict="decline",
        figures={"gpu_hours": 150_000, "saved_gpu_hours": 89_702.4},
    ),
    Example(
        _DISTILL | {"flags": {"fleet_gpus": 2048, "recurring": True}},
        fires=True,
        decision="fund",
        figures={"saved_gpu_hours": 717_619.2},
    ),
    Example(
        # ($300k of compute + $15k of engineering) / $2 = 157,500 GPU-hours, / (0.04 × 8,760 h) = 449.5 GPUs
        _DISTILL,
        fires=True,
        verdict="fund_if",
        figures={"break_even_fleet_gpus": 449.486},
    ),
    Example({"target": "decode", "p": 0.5, "k": 2, "cost_weeks": 3}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Weighs the GPU-hours the work spends once against the GPU time its saving gives back."""
    cost = ctx.worth.cost
    spent = cost.gpu_hours
    if spent <= 0:
        return None
    policy, saving, flags = ctx.policy, ctx.run_saving, ctx.proposal.flags
    figures: dict[str, Figure] = {"gpu_hours": spent, "gpu_usd": cost.gpu_usd, "end_to_end_saving": saving}
    days = flags.run_days
    hours = HOURS_PER_DAY * days if days is not None else HOURS_PER_YEAR * policy.horizon_months / 12
    over = f"the {num(days)}-day job" if days is not None else f"{num(policy.horizon_months)} months"
    what = f"its {num(spent, 0)} GPU-hours of one-off compute ({usd(cost.gpu_usd)})"
    money = ctx.worth.money
    if money is not None:
        back = money.net_gpus * hours
        figures["saved_gpu_hours"] = back
        fleet = count(flags.fleet_gpus or 0, "GPU")
        if back < spent:
            head = (
                f"It costs more compute than it will ever save: {what} against the {num(max(back, 0.0), 0)} "
                f"GPU-hours its {pct(saving)} gives back on {fleet} over {over}"
            )
            return opposition(ctx, ID, head, figures)
        if ctx.verdict_only:
            return None  # it informs
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"{what[0].upper()}{what[1:]} come back in the {num(back, 0)} GPU-hours its {pct(saving)} saves on "
            f"{fleet} over {over}.",
        )
    if recurring_gpus(ctx.proposal) > 0:
        return None  # recurring_gpu_cost's break-even fleet counts the whole cost, this compute in it
    worth = ctx.worth
    if worth.clears and worth.basis != "measured":
        if ctx.verdict_only:
            return None
        return Finding(rule=ID, effect="info", figures=figures, message=f"The cost counts {what}.")
    if saving <= 0 or policy.gpu_hour_usd <= 0:
        return opposition(ctx, ID, f"It spends {what} and saves no GPU time to pay it back", figures)
    whole = (cost.usd or 0.0) / policy.gpu_hour_usd
    fleet_needed = whole / hours / saving
    figures["break_even_fleet_gpus"] = fleet_needed
    figures["break_even_fleet_gpus_said"] = said = at_least(fleet_needed)
    return condition(
        ID,
        figures,
        f"Fund if the fleet that runs it has at least {num(said, 0)} GPUs: only the GPU time its {pct(saving)} saves "
        f"over {over} pays back {what} and its engineering (give `fleet_gpus`).",
    )
