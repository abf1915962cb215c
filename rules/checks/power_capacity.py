"""power_capacity — at a site limited by power, a change that lowers each GPU's draw is worth the GPUs it powers.

What it checks: `flags.power` (the site's MW and each GPU's watts before and after: a power cap, a lower clock).
The site runs ⌊power ÷ watts⌋ GPUs; after the change more of them, each at its new speed (1 ÷ the step's new time),
so the capacity it gains is GPUs after × speed − GPUs before, in GPU-equivalents of today's, priced at
`gpu_hour_usd` over the horizon (rules.worth). Supports funding when that pays for the cost, even on a slower step;
opposes when the slower GPUs do more than cancel the added ones. It assumes the site has the GPUs it cannot power
today (the reason it is power-limited).

Why it matters: a power cap that makes each GPU 8% slower reads as "nothing to win", but a site whose limit is its
megawatts, not its GPUs, runs a quarter more GPUs under it, and 1.25 × 0.92 is 15% more work.

Example: 40 MW at 1,000 W a GPU runs 40,000 GPUs; capped at 800 W, 50,000, each 8% slower: 46,000 GPU-equivalents,
6,000 more, about $105M a year: fund.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import gpu_equivalents, num, pct, usd

ID = "power_capacity"
STAGE = "worth"

_CAP = {"target": "every_kernel", "p": 1.0, "k": 0.92, "cost_weeks": 2}
_SITE = {"site_mw": 40, "watts_per_gpu_before": 1000, "watts_per_gpu_after": 800}

EXAMPLES = (
    Example(
        _CAP | {"flags": {"power": _SITE}},
        fires=True,
        verdict="fund",
        decision="fund",
        figures={"gpus_before": 40_000, "gpus_after": 50_000, "gained_gpus": 6000, "capacity_gain": 0.15},
    ),
    Example(
        # capped at 950 W the site runs 42,105 GPUs, but 20% slower each: 33,684 GPU-equivalents, 6,316 fewer
        _CAP | {"k": 0.8, "flags": {"power": _SITE | {"watts_per_gpu_after": 950}}},
        fires=True,
        verdict="decline",
        figures={"gpus_after": 42_105},
    ),
    Example(_CAP, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Values a change by the capacity a power-limited site gains: more GPUs under its power, each at its speed."""
    bought = ctx.worth.bought
    power = ctx.proposal.flags.power
    if bought is None or bought.kind != "power" or power is None:
        return None
    if ctx.verdict_only and bought.clears:
        return None  # it supports funding
    saving = ctx.run_saving
    cost_usd = ctx.worth.cost.usd or 0.0
    figures: dict[str, Figure] = {
        "site_mw": power.site_mw,
        "watts_per_gpu_before": power.watts_per_gpu_before,
        "watts_per_gpu_after": power.watts_per_gpu_after,
        "gpus_before": bought.gpus_before,
        "gpus_after": bought.gpus_after,
        "gained_gpus": bought.gained_gpus,
        "capacity_gain": bought.share,
        "annual_value_usd": bought.annual_usd,
        "cost_usd": cost_usd,
    }
    speed = (
        f"each {pct(-saving / (1 - saving))} slower"
        if saving < 0
        else (f"each {pct(saving)} faster" if saving > 0 else "each as fast")
    )
    head = (
        f"At {num(power.watts_per_gpu_after, 0)} W a GPU instead of {num(power.watts_per_gpu_before, 0)} W the "
        f"{num(power.site_mw)} MW site runs {num(bought.gpus_after, 0)} GPUs instead of {num(bought.gpus_before, 0)}, "
        f"{speed}"
    )
    if bought.gained_gpus <= 0:
        lost = gpu_equivalents(-bought.gained_gpus)
        return opposition(ctx, ID, f"{head}: {lost} less work than before, so the power it saves buys nothing", figures)
    gained = (
        f"{gpu_equivalents(bought.gained_gpus)} more work ({pct(bought.share)}), {usd(bought.annual_usd or 0.0)} a year"
    )
    if bought.clears:
        return Finding(
            rule=ID,
            effect="supports",
            verdict="fund",
            figures=figures,
            message=f"{head}: {gained}, against {usd(cost_usd)} of cost.",
        )
    return opposition(ctx, ID, f"{head}: {gained}, less than its {usd(cost_usd)} over the horizon", figures)
