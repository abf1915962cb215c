"""unstated_cost — no cost given is a question, not a cost of nothing.

What it checks: a proposal without `cost_weeks`. When it passes as stated, the break-even build cost: the most
engineer-weeks at which the same proposal, costed, would still pass (found by bisection on the pure verdict
function, upkeep of unportable code included as always). A proposal for measured work (`scope.method` given: a
timeline, counters, an estimate) funds only on the condition that the estimate comes in under it; arithmetic with
no measurement named (a what-if, the seeds' exercises) gets the break-even weeks as info. When it would pass at any
cost (a kernel that is the product; a policy that prices engineering at nothing), info. When it fails even at no
cost, the cost changes nothing and this stays silent.

Why it matters: a timeline with no cost estimate says nothing about what a week buys; taken as "free", every clean
profile would be funded and every pull request would pass its gate. The break-even weeks tell the proposer the one
number the decision still needs.

Example: 21% at 10× on a 100 ms step saves 18.9 ms; at the policy's 1 ms per engineer-week it pays up to 18.9
weeks: fund if the estimate is under 18.9 engineer-weeks.
"""

from __future__ import annotations

import msgspec

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import condition
from worthit.rules.model import Figure, Finding, Range
from worthit.rules.search import PASSING, break_even
from worthit.rules.text import break_even_weeks, num, pct
from worthit.rules.worth import pays_for_weeks

ID = "unstated_cost"
STAGE = "cost"

HOURS_PER_WEEK = 40.0
MOST_WEEKS = 1e6
"""Where the search for a break-even cost stops (a unit, not a threshold): work that pays at a million engineer-weeks
pays at any cost anyone will quote."""

EXAMPLES = (
    Example(
        {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "scope": {"method": "timeline"}},
        fires=True,
        verdict="fund_if",
        figures={"break_even_weeks": 18.9},
    ),
    Example(
        {"target": "gemm", "p": 0.1, "k": 2, "flags": {"fleet_gpus": 1000}, "scope": {"method": "timeline"}},
        fires=True,
        verdict="fund_if",
        figures={"break_even_weeks": 175.2},
    ),
    Example(
        {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100},
        fires=True,
        decision="fund",
        figures={"break_even_weeks": 18.9},
    ),
    Example({"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}, fires=False),
    Example({"target": "tiny", "p": 0.001, "k": 2}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Conditions a passing proposal with no cost on an estimate under the break-even engineer-weeks."""
    proposal, probe = ctx.proposal, ctx.probe
    if proposal.cost_weeks is not None or probe is None:
        return None

    # a range is judged at its low end (low p, low k): the break-even that holds across all of it
    p_at = proposal.p.low if isinstance(proposal.p, Range) else ctx.p
    k_at = proposal.k.low if isinstance(proposal.k, Range) else ctx.given_k
    ends = ctx.range_ends
    saving = ctx.run_saving if ends is None else ends[0].saving_fraction
    at = "" if ends is None else " at the range's low end"

    def passes(cost: float) -> bool:
        return probe(msgspec.structs.replace(proposal, cost_weeks=cost), p_at, k_at) in PASSING

    if not passes(0.0):
        return None
    high = 1.0
    while high < MOST_WEEKS and passes(high):
        high *= 8
    figures: dict[str, Figure] = {"min_rate": ctx.policy.min_rate, "end_to_end_saving": saving}
    if passes(high):
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"No cost was given, but the work pays at any cost up to {num(MOST_WEEKS)} engineer-weeks.",
        )
    money = ctx.worth.money
    exact = None if money is None else pays_for_weeks(money, ctx.worth.cost, ctx.policy)
    if exact is not None and exact > 0 and passes(exact) and not passes(exact * (1 + 1e-9) + 1e-12):
        edge = exact  # money decides: the break-even is the value's, not a bisection's approximation of it
    else:
        edge = break_even(passes, high, high / 8 if high > 1 else 0.0)
    figures["break_even_weeks"] = edge
    if edge >= 0.1:
        said = break_even_weeks(edge)
    else:  # a forty-hour engineer-week, as `units.weeks` reads `40h`
        figures["break_even_hours"] = hours = edge * HOURS_PER_WEEK
        said = f"{num(hours, 1)} hours of work" if hours >= 0.1 else "0.1 hours of work"
        figures["hours_said"] = max(hours, 0.1)
    why = (
        f"past it the {pct(saving)} it saves{at} falls under the policy's {pct(ctx.policy.min_rate)} per engineer-week"
        if money is None
        else "past it the capacity it frees no longer pays for the engineering"
    )
    message = f"Fund if the estimate comes in under {said}: no cost was given, and {why}."
    if proposal.scope.method is None:
        return Finding(rule=ID, effect="info", figures=figures, message=message)
    return condition(ID, figures, message, stage="condition")
