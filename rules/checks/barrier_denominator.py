"""barrier_denominator — a straggler on a barrier's critical path is paid by every waiting rank.

What it checks: `flags.barrier` with `critical_path` (the target runs on the rank the others wait for). Remeasure
unless the collective was profiled (`wait_fraction`, the share of the step ranks spend waiting in the barrier).

Why it matters: with a barrier the step is set by the slowest rank, so a straggler's 2% is not 2% of one GPU's
work: it is 2% times every rank waiting. A single-GPU profile computed p against the wrong denominator. Profile
the collective, not the rank: trace all ranks (rocprofv3 --rccl-trace, or nsys with NCCL tracing) and measure how
long they wait inside the barrier.

Example: 2% on the critical path of an 8-rank all-reduce, from one rank's profile: remeasure across all ranks.
"""

from __future__ import annotations

from worthit.rules.context import Context, Example
from worthit.rules.model import Figure, Finding
from worthit.rules.text import num, pct

ID = "barrier_denominator"

EXAMPLES = (
    Example(
        {"target": "straggler", "p": 0.02, "k": 2, "flags": {"barrier": {"ranks": 8}}},
        fires=True,
        verdict="remeasure",
        figures={"ranks": 8, "rank_time_paid": 0.16},
    ),
    Example(
        {"target": "straggler", "p": 0.02, "k": 2, "flags": {"barrier": {"ranks": 8, "wait_fraction": 0.3}}},
        fires=True,
        verdict="fund",
        figures={"wait_fraction": 0.3},
    ),
    Example({"p": 0.02, "k": 2, "flags": {"barrier": {"ranks": 8, "critical_path": False}}}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Remeasure a share taken on one rank when the target sits on a barrier's critical path."""
    barrier = ctx.proposal.flags.barrier
    if barrier is None or not barrier.critical_path:
        return None
    figures: dict[str, Figure] = {
        "ranks": barrier.ranks,
        "p": ctx.p,
        "rank_time_paid": ctx.p * barrier.ranks,
        "wait_fraction": barrier.wait_fraction,
    }
    if barrier.wait_fraction is not None:
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=(
                f"Across {num(barrier.ranks)} ranks the barrier holds {pct(barrier.wait_fraction)} of the step, "
                f"so {ctx.target} on the critical path sets the step for every rank, as the collective shows."
            ),
        )
    return Finding(
        rule=ID,
        effect="remeasure",
        verdict="remeasure",
        figures=figures,
        message=(
            f"On a barrier's critical path the straggler's {pct(ctx.p)} is paid by all {num(barrier.ranks)} "
            f"waiting ranks, so one rank's profile has the wrong denominator; trace the collective across all "
            f"ranks (rocprofv3 --rccl-trace, nsys with NCCL tracing) and re-run p."
        ),
    )
