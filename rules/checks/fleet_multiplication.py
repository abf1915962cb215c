"""fleet_multiplication — multiply before you decide.

What it checks: `flags.fleet_gpus`. GPU-equivalents freed = fleet × end-to-end saving fraction, recurring; valued at
the policy's `gpu_hour_usd` around the clock (8,760 hours a year) over `horizon_months`, against the engineering
cost: (`cost_weeks` + upkeep of unportable code over the horizon) × `engineer_week_usd`. When it pays back within
the horizon it supports funding and overrides rate_of_return; when it does not, it opposes.

Why it matters: a percentage that looks trivial per run is enormous in aggregate, and it recurs, while the
engineering cost is paid once. Per-run rate-of-return thresholds are the wrong test at fleet scale.

Example: 5% on 20,000 GPUs frees 1,000 GPU-equivalents, $17.5M a year at $2 per GPU-hour, against $20k of
engineering: fund, payback well under a month.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context, Example, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import months, num, pct, saves, usd

ID = "fleet_multiplication"

HOURS_PER_YEAR = 8760.0
"""A unit, not a threshold: freed capacity is counted around the clock."""

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
    policy = ctx.policy
    saving = ctx.run_saving
    gpus = fleet * saving
    annual = gpus * policy.gpu_hour_usd * HOURS_PER_YEAR
    horizon_value = annual * policy.horizon_months / 12
    build = ctx.proposal.cost_weeks or 0.0
    engineering_weeks = build + ctx.maintenance_weeks
    cost = engineering_weeks * policy.engineer_week_usd
    payback = cost / (annual / 12) if annual > 0 else math.inf
    figures: dict[str, Figure] = {
        "fleet_gpus": fleet,
        "saving_fraction": saving,
        "gpu_equivalents": gpus,
        "annual_value_usd": annual,
        "horizon_months": policy.horizon_months,
        "horizon_value_usd": horizon_value,
        "engineering_weeks": engineering_weeks,
        "maintenance_weeks": ctx.maintenance_weeks,
        "engineering_cost_usd": cost,
        "payback_months": None if math.isinf(payback) else payback,
    }
    if saving > 0:
        freed = f"{pct(saving)} on {num(fleet)} GPUs frees {num(gpus, 2 if gpus < 10 else 0)} GPU-equivalents"
    else:
        freed = f"On {num(fleet)} GPUs this {saves(saving, ' of the run')} and frees no capacity"
    if annual > 0 and payback <= policy.horizon_months:
        against = (
            f"against {usd(cost)} of engineering, paid back in {months(payback)}"
            if cost > 0
            else "for no stated engineering cost"
        )
        return Finding(
            rule=ID,
            effect="supports",
            verdict="fund",
            figures=figures,
            overrides=("rate_of_return",),
            message=f"{freed}, worth {usd(annual)} a year and recurring, {against}.",
        )
    if annual <= 0:
        head = freed
    else:
        head = (
            f"{freed}, worth {usd(annual)} a year, which takes {months(payback)} to pay back {usd(cost)} of "
            f"engineering, past the {months(policy.horizon_months).removesuffix('s')} horizon"
        )
    return opposition(ctx, ID, head, figures)
