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
from worthit.rules.findings import condition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import num, pct, times

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


def check(ctx: Context) -> Finding | None:
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
    if own:
        split = (
            f"of {ctx.target}'s {pct(ctx.p)} of the step, {pct(wait)} is waiting for the slowest of {num(ranks)} "
            f"ranks, which no faster transfer shortens"
        )
    else:
        split = (
            f"the {num(ranks)} ranks wait {pct(wait)} of their step for the straggler, whose {ctx.target} is all "
            f"transfer at {pct(ctx.p)}"
        )
    if dwarfs and ctx.worth.clears:
        times_more = f"{num(ratio, 0 if ratio >= 10 else 1)}× " if ratio is not None else ""
        return condition(
            ID,
            figures,
            f"Fund, but the bigger win is the wait: {split}, {times_more}the {pct(saving)} {_faster(ctx.k)} on its "
            f"{pct(transfer)} saves, so balance the load across ranks first.",
        )
    if not own:
        return None  # the barrier's measured wait, not dwarfing this: barrier_denominator already gives the figures
    return Finding(
        rule=ID,
        effect="info",
        figures=figures,
        message=f"Measured across ranks, {split}: {_faster(ctx.k)} acts on the {pct(transfer)} of transfer alone "
        f"and saves {pct(saving)} of the step.",
    )


def _faster(k: float) -> str:
    """`a 2× faster transfer`, `removing the transfer`."""
    return "removing the transfer" if math.isinf(k) else f"a {times(k)} faster transfer"
