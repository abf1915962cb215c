"""barrier_denominator — a straggler on a barrier's critical path is paid by every waiting rank.

What it checks: `flags.barrier` with `critical_path` (the target runs on the rank the others wait for). Remeasure
unless the collective was profiled (`wait_fraction`, the share of the step ranks spend waiting in the barrier).

Why it matters: with a barrier the step is set by the slowest rank, so a straggler's 2% is not 2% of one GPU's
work: it is 2% times every rank waiting. A single-GPU profile computed p against the wrong denominator. Profile
the collective, not the rank: trace all ranks (rocprofv3 --rccl-trace, or nsys with NCCL tracing) and measure how
long they wait inside the barrier.

When the barrier was measured from a distributed profile (`target_ms`, `step_ms`: the target's time on the
straggler and the step every rank waits for), the check computes the distributed p itself — the target's share of
the step all ranks are held to, against the share of one rank's device activity (`rank_p`) a single-GPU profile
gives — and the rank-time it costs, so no re-measurement is asked for: that is the seed's fix, done.

A communication target (a `comm` phase, or an NCCL/RCCL kernel's name) is told the other half of the story: its
time on one rank includes that rank's wait for the slowest, which no faster transfer removes. With that wait
measured (`wait_fraction`) but not split by collective, the worst case puts all of it in the target: where the
transfer left (p − wait) does not pay at k, the answer is fund_if a trace shows the transfer at its break-even share.

With the collective's own wait measured (`target_wait`, given or read from all ranks' traces) the split is known:
info, and the value is the transfer's alone (collective_wait names the wait).

Example: 2% on the critical path of an 8-rank all-reduce, from one rank's profile: remeasure across all ranks.
"""

from __future__ import annotations

import math

from worthit.rules.context import PASSING, Context, Example, break_even, condition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import k_text, num, pct, times

ID = "barrier_denominator"
STAGE = "trust"

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
        decision="fund",
        figures={"wait_fraction": 0.3},
    ),
    Example(
        {
            "target": "straggler",
            "p": 0.05,
            "k": 2,
            "baseline_ms": 100,
            "flags": {"barrier": {"ranks": 4, "wait_fraction": 0.3, "step_ms": 100, "target_ms": 5, "rank_p": 0.02}},
        },
        fires=True,
        figures={"p_distributed": 0.05, "rank_p": 0.02, "rank_time_paid_ms": 20.0},
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
    if barrier.target_wait is not None and ctx.wait_share > 0:
        # The collective's own time is split into transfer and wait (given, or read from all ranks' traces): the
        # denominator question is answered, and the value is the transfer's alone (collective_wait says the rest).
        figures |= {"target_wait": ctx.wait_share, "transfer_share": max(ctx.p - ctx.wait_share, 0.0)}
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=(
                f"Across {num(barrier.ranks)} ranks {ctx.target}'s {pct(ctx.p)} is split as measured: "
                f"{pct(ctx.wait_share)} of the step waiting for the slowest rank, "
                f"{pct(max(ctx.p - ctx.wait_share, 0.0))} of transfer, the only part a faster collective shortens."
            ),
        )
    if barrier.wait_fraction is not None and barrier.step_ms and barrier.target_ms is not None:
        p_distributed = min(barrier.target_ms / barrier.step_ms, 1.0)
        figures |= {
            "p_distributed": p_distributed,
            "rank_p": barrier.rank_p,
            "straggler": barrier.straggler,
            "step_ms": barrier.step_ms,
            "target_ms": barrier.target_ms,
            "rank_time_paid_ms": barrier.target_ms * barrier.ranks,
            "rank_time_paid": p_distributed * barrier.ranks,
        }
        on_rank = f"{pct(barrier.rank_p)} of one rank's device activity but " if barrier.rank_p else ""
        who = f"rank {barrier.straggler}" if barrier.straggler is not None else "the straggler"
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=(
                f"Measured across {num(barrier.ranks)} ranks: {ctx.target} on {who}, the straggler, is {on_rank}"
                f"{pct(p_distributed)} of the {num(barrier.step_ms)} ms step every rank waits for (ranks wait "
                f"{pct(barrier.wait_fraction)} of their step inside collectives), so p is taken against the step."
            ),
        )
    if barrier.wait_fraction is not None and ctx.target_is_comm:
        found = _transfer(ctx, barrier.wait_fraction, figures)
        if found is not None:
            return found
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
    if ctx.target_is_comm:
        message = (
            f"{ctx.target}'s {pct(ctx.p)} on one rank includes its wait for the slowest of {num(barrier.ranks)} "
            f"ranks, which a faster transfer does not shorten; trace the collective across all ranks (rocprofv3 "
            f"--rccl-trace, nsys with NCCL tracing) to split transfer from wait, and re-run p."
        )
    else:
        message = (
            f"On a barrier's critical path the straggler's {pct(ctx.p)} is paid by all {num(barrier.ranks)} "
            f"waiting ranks, so one rank's profile has the wrong denominator; trace the collective across all "
            f"ranks (rocprofv3 --rccl-trace, nsys with NCCL tracing) and re-run p."
        )
    return Finding(rule=ID, effect="remeasure", verdict="remeasure", figures=figures, message=message)


def _transfer(ctx: Context, wait: float, figures: dict[str, Figure]) -> Finding | None:
    """A collective's share holds the ranks' wait for the straggler, which no faster transfer shortens. With the
    wait measured (`wait_fraction`) but not split by collective, the worst case puts all of it in the target: the
    transfer is then p − wait. The verdict at that share is the pure verdict function's, the speedup of the
    transfer alone folded into an effective k on the whole share (so the breakdown still agrees with p)."""
    probe = ctx.probe
    if probe is None or math.isinf(ctx.k) or ctx.k <= 1:
        return None
    proposal, p, k, given = ctx.proposal, ctx.p, ctx.k, ctx.given_k

    def passes(transfer: float) -> bool:
        # the stated k: a probe derives the added work (added_work) again
        effective = 1 / (1 - transfer / p * (1 - 1 / given)) if given > 1 else given
        return probe(proposal, p, effective) in PASSING

    transfer = max(p - wait, 0.0)
    saved = transfer * (1 - 1 / k)
    figures |= {"transfer_low": transfer, "transfer_saving": saved}
    holds = f"up to {pct(min(wait, p))} of the step is that wait, which a faster transfer does not shorten"
    if transfer > 0 and passes(transfer):
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"Of {ctx.target}'s {pct(p)}, up to {pct(wait)} of the step may be the ranks' wait for the "
            f"straggler, which a faster transfer does not shorten, and on the {pct(transfer)} left {k_text(k)} still "
            f"pays.",
        )
    if not passes(p):
        return None  # it does not pay even if none of it were wait: the other checks say why
    edge = break_even(passes, transfer, p)
    figures["break_even_transfer"] = edge
    return condition(
        ID,
        figures,
        f"Fund if a trace across all ranks shows {ctx.target}'s transfer, without the wait for the straggler, at "
        f"{pct(edge)} of the step or more: {holds}"
        + (f", and on the {pct(transfer)} left {times(k)} saves {pct(saved)}." if transfer else "."),
        stage="condition",
    )
