"""collective_wait — the wait inside a collective's own time is the bigger target, and no faster transfer touches it.

What it checks: a collective target whose own time holds a measured wait for the slowest rank
(`flags.barrier.target_wait`: given, or read from all ranks' traces), or, measured on the straggler from all ranks'
traces (whose collective is all transfer), the share of every rank's step spent waiting for it (`wait_fraction`).
The change's k acts on the transfer alone, p − wait, so the value is that transfer's saving (rules.context `acted`,
one figure for every stage). When the wait is at least the policy's `alternative_ratio` times that saving, it is
named as the better target — balance the load across ranks (placement, routing, the slow rank's extra work) — as a
condition when the transfer pays on its own, and as the alternative every redirect names when it does not.
Otherwise info, with the split.

Why it matters: on a rank that waits, a collective's time is mostly the wait for the hot rank. Pricing a faster
all-to-all on its whole share funds a transfer saving several times smaller than what load balancing would win,
and never says where that larger win is.

Example: an all-to-all that takes 35% of a cold rank's step, of which 28% waits for a hot rank; 2× on the 7% that
is transfer saves 3.5% — the 28% wait is 8× that: balance the load.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure
from worthit.rules.wording import Draft

ID = "collective_wait"
STAGE = "alternative"

_A2A = {"target": "all_to_all", "p": 0.35, "k": 2, "baseline_ms": 100}
_BAR = {"ranks": 8, "critical_path": False, "target_wait": 0.28}

EXAMPLES = (
    Example(
        {**_A2A, "cost_weeks": 1, "flags": {"barrier": _BAR}},
        fires=True,
        verdict="fund_if",
        figures={"target_wait": 0.28, "transfer_share": 0.07, "transfer_saving": 0.035, "wait_over_saving": 8.0},
    ),
    Example(
        {**_A2A, "cost_weeks": 1, "flags": {"barrier": {**_BAR, "target_wait": 0.05}}},
        fires=True,
        decision="fund",
        figures={"transfer_share": 0.3, "transfer_saving": 0.15},
    ),
    Example({**_A2A, "flags": {"barrier": {"ranks": 8, "critical_path": False}}}, fires=False),
)


OWN_WAIT = (
    "of {target}'s {p:pct} of the step, {target_wait:pct} is waiting for the slowest of {ranks:num} ranks, which no "
    "faster transfer shortens"
)
STRAGGLER = (
    "the {ranks:num} ranks wait {target_wait:pct} of their step for the straggler, whose {target} is all transfer at "
    "{p:pct}"
)
BIGGER_WIN = "Fund, but the bigger win is the wait: "
TIMES_MORE = "{wait_over_saving:ratio}× "
THE_SAVING = "the {transfer_saving:pct} "
ON_TRANSFER = " on its {transfer_share:pct} saves, so balance the load across ranks first."
MEASURED = "Measured across ranks, "
ACTS = " acts on the {transfer_share:pct} of transfer alone and saves {transfer_saving:pct} of the step."
REMOVING = "removing the transfer"
FASTER = "a {k:times} faster transfer"


def check(ctx: Context) -> Draft | None:
    """Splits a collective's share into transfer and wait; names the wait when it dwarfs the transfer's saving."""
    wait = ctx.collective_wait
    if wait <= 0:
        return None
    barrier = ctx.proposal.flags.barrier
    ranks = barrier.ranks if barrier is not None else 2
    own = ctx.wait_share > 0
    transfer = max(ctx.p - ctx.wait_share, 0.0)
    saving = ctx.run_saving
    base = ctx.baseline_ms
    figures: dict[str, Figure] = {
        "p": ctx.p,
        "target_wait": wait,
        "transfer_share": transfer,
        "transfer_saving": saving,
        "ranks": ranks,
        "wait_ms": wait * base if base is not None else None,
        "alternative_ratio": ctx.policy.alternative_ratio,
    }
    ratio = wait / saving if saving > 0 else None
    figures["wait_over_saving"] = ratio
    dwarfs = ratio is None or ratio >= ctx.policy.alternative_ratio
    if ctx.verdict_only and not (dwarfs and ctx.worth.clears):
        return None  # it informs, or leaves the figures to barrier_denominator
    split = OWN_WAIT if own else STRAGGLER
    words = {"target": ctx.target}
    faster = REMOVING if math.isinf(ctx.k) else FASTER
    if not math.isinf(ctx.k):
        figures["k"] = ctx.k
    if dwarfs and ctx.worth.clears:
        times_more = TIMES_MORE if ratio is not None else ""
        template = (BIGGER_WIN, split, ", ", times_more, THE_SAVING, faster, ON_TRANSFER)
        return Draft(ID, "condition", template, figures, words)
    if not own:
        return None  # the barrier's measured wait, not dwarfing this: barrier_denominator already gives the figures
    return Draft(ID, "info", (MEASURED, split, ": ", faster, ACTS), figures, words)
