"""rate_of_return — the saving per engineer-week, the comparison that survives review.

What it checks: the end-to-end saving per engineer-week (`cost_weeks`) against the policy's `min_rate`, a share
of the step per week (0.01: 1 ms per week on a 100 ms step), with upkeep of unportable code counted in the weeks.
Fires only below it, and opposes only when the value of the work does not carry it (a fleet paid back many times
over, a credible strategic workload, a kernel that is the product: rules.worth).

Why it matters: "it's only two weeks" is not an argument. The cheaper project is often the worse one; what a week
buys is. Where the breakdown shows a larger phase, the statement names it.

Example: 5.4 ms saved for 2 weeks on a 100 ms step is 2.7 ms/week: no finding. 2 ms for 4 weeks is
0.5 ms/week, under the 1 ms/week floor: decline, or redirect to the largest phase.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure
from worthit.rules.wording import Draft, carried, opposed

ID = "rate_of_return"
STAGE = "cost"

EXAMPLES = (
    Example(
        {"target": "tiny", "p": 0.1, "k": 1.25, "baseline_ms": 100, "cost_weeks": 4},
        fires=True,
        verdict="decline",
        figures={"rate_fraction": 0.005, "rate_ms": 0.5},
    ),
    Example(
        {
            "target": "layernorm",
            "p": 0.06,
            "k": 10,
            "baseline_ms": 100,
            "cost_weeks": 8,
            "breakdown": [
                {"name": "gemm_qkv", "ms": 34},
                {"name": "layernorm", "ms": 6},
                {"name": "rest", "ms": 60, "kind": "other"},
            ],
        },
        fires=True,
        verdict="redirect",
        figures={"rate_ms": 0.675},
    ),
    Example({"target": "layernorm", "p": 0.06, "k": 10, "baseline_ms": 100, "cost_weeks": 2}, fires=False),
    Example({"p": 0.06, "k": 10}, fires=False),
)


PER_RUN = "Per run, "
CARRIED = ", under the {min_rate:pct} bar, which the value of the work carries"
CARRIED_SLOWER = "{cost_weeks:weeks} for a step {end_to_end_saving:-pct} longer returns nothing"
CARRIED_RATE = "{cost_weeks:weeks} for {end_to_end_saving:pct} of the step is {rate_fraction:pct} per engineer-week"
PER_WEEK_MS = "{rate_ms:ms} per engineer-week against the {min_rate_ms:ms} the policy funds"
PER_WEEK_SHARE = "{rate_fraction:pct} of the step per engineer-week against the {min_rate:pct} the policy funds"
SLOWER = "{cost_weeks:weeks} on {target} for a step {end_to_end_saving:-pct} longer: no return, against the "
FUNDED_MS = "{min_rate_ms:ms} per engineer-week"
FUNDED_SHARE = "{min_rate:pct} of the step per engineer-week"
GAIN = "{cost_weeks:weeks} for {end_to_end_saving:pct} of the step on {target} is "
NO_GAIN = "{cost_weeks:weeks} for nothing on {target} is "


def check(ctx: Context) -> Draft | None:
    """Opposes a proposal whose end-to-end saving per engineer-week is below the policy's `min_rate`."""
    worth = ctx.worth
    rate, cost = worth.rate, worth.cost.weeks
    floor = ctx.policy.min_rate
    if rate is None or cost is None or rate >= floor:
        return None
    figures: dict[str, Figure] = {
        "rate_fraction": rate,
        "min_rate": floor,
        "cost_weeks": cost,
        "end_to_end_saving": ctx.run_saving,
    }
    slower = ctx.run_saving < 0  # a slowdown is no return at all, never a negative one "under the bar"
    if worth.clears:
        return carried(ctx, ID, (PER_RUN, CARRIED_SLOWER if slower else CARRIED_RATE, CARRIED), figures, {})
    base = ctx.baseline_ms
    in_ms = base is not None and ctx.p_run == ctx.p and not math.isinf(rate)
    if in_ms and base is not None:
        figures |= {"rate_ms": rate * base, "min_rate_ms": floor * base}
        per_week = PER_WEEK_MS
    else:
        per_week = PER_WEEK_SHARE
    words = {"target": ctx.target}
    if slower:
        funded = FUNDED_MS if "rate_ms" in figures and base is not None else FUNDED_SHARE
        head: tuple[str, ...] = (SLOWER, funded, " the policy funds")
    else:
        head = (GAIN if ctx.run_saving > 0 else NO_GAIN, per_week)
    return opposed(ctx, ID, head, figures, words, then="is the better use of those weeks")
