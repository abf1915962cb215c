"""barrier_denominator — a straggler on a barrier's critical path is paid by every waiting rank.

What it checks: `flags.barrier` with `critical_path` (the target runs on the rank the others wait for). Remeasure
unless the collective was profiled (`wait_fraction`, the share of the step ranks spend waiting in the barrier, or
`arrivals`, each rank's arrival at it).
Without `critical_path`, a faster compute target the step cannot see (below).

Why it matters: with a barrier the step is set by the slowest rank, so a straggler's 2% is not 2% of one GPU's
work: it is 2% times every rank waiting. A single-GPU profile computed p against the wrong denominator. Profile
the collective, not the rank: trace all ranks (rocprofv3 --rccl-trace, or nsys with NCCL tracing) and measure how
long they wait inside the barrier.

When the barrier was measured from a distributed profile (`target_ms`, `step_ms`: the target's time on the
straggler and the step every rank waits for), the check computes the distributed p itself — the target's share of
the step all ranks are held to, against the share of one rank's device activity (`rank_p`) a single-GPU profile
gives — and the rank-time it costs, so no re-measurement is asked for: that is the seed's fix, done. Where the
share the arithmetic runs on (`p`, or `p_end_to_end`) is not that one (one rank's share, the wrong denominator) by
more than the policy's `breakdown_tolerance`, it says so and asks for the arithmetic re-run at the measured share.

A communication target (a `comm` phase, or an NCCL/RCCL kernel's name) is told the other half of the story: its
time on one rank includes that rank's wait for the slowest, which no faster transfer removes. With that wait
measured (`wait_fraction`) but not split by collective, the worst case puts all of it in the target: where the
transfer left (p − wait) does not pay at k, the answer is fund_if a trace shows the transfer at its break-even share.

With the collective's own wait measured (`target_wait`, given or read from all ranks' traces) the split is known:
info, and the value is the transfer's alone (collective_wait names the wait).

A collective measured on one rank's trace and replayed there (`replay`) asks for no trace across ranks when even the
replay does not pay: it made the collective's whole time faster, wait included, the most a faster transfer saves,
so splitting transfer from wait cannot change the answer (replayed_saving says why).

A compute target off the critical path (`critical_path` false: it runs on a rank that waits for the straggler) saves
the step nothing when it gets faster: its rank only waits longer in the collective. The value of the work is the
step's saving (rules.context `barrier_step`, one figure for every stage), so this is a redirect to the compute of the
rank that sets the step, with how much longer the target's rank would wait. With each rank's compute measured
(`arrivals`, read from all ranks' traces) the step after the change is the latest arrival over the ranks: on the
straggler, the saving stops where the next-slowest rank's compute sets the step (the amdahl and ceiling findings
say which rank).

Further targets (`more_targets`) behind the barrier go through the same arithmetic: each rank's compute less every
target's time on it times 1 − 1/k. Their shares are of the rank p is measured on; their time on the other ranks is
each arrival's `more_ms`. Without it the decision counts them on their own rank alone (what they save at least: the
step sees it only while that rank arrives last), and where the change pays only if they save on other ranks too,
their time there decides: remeasure, tracing them across all ranks.

Example: 2% on the critical path of an 8-rank all-reduce, from one rank's profile: remeasure across all ranks.
gemm_v1 on rank 1 of 8, rank 6 the straggler: 2× faster, rank 1 waits 1.2 ms more and the 3.4 ms step saves
nothing. gemm_v2, 3.12 ms of the straggler's 3.276 ms of compute, 2× faster: the step reaches 2.651 ms, not
1.847 ms, where rank 0's 2.52 ms sets it. With softmax (4% of rank 6's step) 2× faster too, its 68.1 µs saved on
rank 6 is unseen once rank 0 sets the step: at 22.5 engineer-weeks the 756 µs pays 33.6 µs a week against the 34.1 µs
funded, and with softmax's saving seen 36.6 µs: remeasure softmax across all ranks.
"""

from __future__ import annotations

import math

from worthit.rules.barrier import UNSEEN, BarrierStep
from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import condition, opposition
from worthit.rules.model import Barrier, Figure, Finding, Range
from worthit.rules.search import PASSING, break_even
from worthit.rules.text import STATEMENT_CHARS, count, k_text, label, ms, num, pct, times

ID = "barrier_denominator"
STAGE = "trust"

_OFF = {"ranks": 8, "critical_path": False}
# Eight ranks measured: rank 6 the straggler (3.276 ms of compute in a 3.407 ms step), the others 2.52 ms
_MEASURED = {"ranks": 8, "wait_fraction": 0.194, "straggler": 6, "step_ms": 3.407}
# gemm_v1 on rank 1 (2.4 ms of its 2.52): off the straggler's path
_RANK_1 = {
    **_MEASURED,
    "critical_path": False,
    "rank": 1,
    "target_ms": 2.4,
    "arrivals": [{"rank": 1, "compute_ms": 2.52, "target_ms": 2.4}, {"rank": 6, "compute_ms": 3.276}],
}
# gemm_v2 on the straggler (3.12 ms of its 3.276): rank 0's 2.52 ms caps its saving
_RANK_6 = {
    **_MEASURED,
    "rank": 6,
    "target_ms": 3.12,
    "arrivals": [{"rank": 6, "compute_ms": 3.276, "target_ms": 3.12}, {"rank": 0, "compute_ms": 2.52}],
}

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
    Example(
        {"target": "gemm", "p": 0.02, "k": 10, "baseline_ms": 100, "flags": {"barrier": _OFF}},
        fires=True,
        verdict="redirect",
        figures={"step_saving": 0.0, "longer_wait_ms": 1.8},
    ),
    Example(
        {"target": "gemm_v1", "p": 0.7044, "k": 2, "baseline_ms": 3.407, "flags": {"barrier": _RANK_1}},
        fires=True,
        verdict="redirect",
        figures={"step_saving": 0.0, "longer_wait_ms": 1.2, "step_setter": 6, "step_setter_ms": 3.276},
    ),
    Example(
        {
            "target": "gemm_v2",
            "p": 0.9158,
            "k": 2,
            "baseline_ms": 3.407,
            "cost_weeks": 2,
            "flags": {"barrier": _RANK_6},
        },
        fires=True,
        decision="fund",
        figures={"next_rank": 0, "next_rank_ms": 2.52, "step_saving": 0.2219},
    ),
    Example(
        {
            "target": "gemm_v2",
            "p": 0.9158,
            "k": 2,
            "baseline_ms": 3.407,
            "cost_weeks": 22.5,
            "more_targets": [{"name": "softmax", "p": 0.04, "k": 2}],
            "flags": {"barrier": _RANK_6},
        },
        fires=True,
        verdict="remeasure",
        figures={"more_saving_ms": 0.06814, "more_unseen_ms": 0.06814, "step_setter": 0, "step_setter_ms": 2.52},
    ),
    Example({"target": "gemm", "p": 0.02, "k": 0.5, "flags": {"barrier": _OFF}}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Remeasure a share taken on one rank when the target sits on a barrier's critical path; oppose a faster
    compute target the step behind the barrier cannot see (its rank waits for the straggler)."""
    barrier = ctx.proposal.flags.barrier
    if barrier is None:
        return None
    step = ctx.barrier_step
    unmeasured = ctx.more_unseen_worth
    if step is not None and unmeasured is not None and unmeasured.clears and not ctx.worth.clears:
        return _more_unmeasured(ctx, barrier, step)
    if step is not None and ctx.step_unseen:
        return _unseen(ctx, barrier, step)
    if not barrier.critical_path:
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
    # measured across all ranks: the collective's wait, or each rank's arrival at it (which holds the wait)
    measured = barrier.wait_fraction is not None or bool(barrier.arrivals)
    if measured and barrier.step_ms and barrier.target_ms is not None:
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
        if step is not None and step.setter is not None and step.after_ms is not None:
            # the straggler's saving stops where the next-slowest rank sets the step (amdahl and ceiling say it)
            figures |= {"next_rank": step.setter, "next_rank_ms": step.after_ms, "step_saving": step.saving}
        on_rank = f"{pct(barrier.rank_p)} of one rank's device activity but " if barrier.rank_p else ""
        who = f"rank {barrier.straggler}" if barrier.straggler is not None else "the straggler"
        stated = ctx.p_run  # the share the decision's arithmetic runs on (p, or p_end_to_end when given)
        if not isinstance(ctx.proposal.p, Range) and abs(p_distributed - stated) > ctx.policy.breakdown_tolerance:
            # the measured barrier gives the share of the step every rank waits for; the arithmetic ran on another
            # (one rank's device activity, the seed's "wrong denominator"): not taken against the step, so re-run it
            figures |= {"p_stated": stated}
            return Finding(
                rule=ID,
                effect="remeasure",
                verdict="remeasure",
                figures=figures,
                message=(
                    f"Measured across {num(barrier.ranks)} ranks, {ctx.target} on {who} is {ms(barrier.target_ms)} "
                    f"of the {ms(barrier.step_ms)} step every rank waits for, {pct(p_distributed)}, not the "
                    f"{pct(stated)} the arithmetic ran on; re-run it with p = {pct(p_distributed)}."
                ),
            )
        if barrier.wait_fraction is not None:
            how = f"ranks wait {pct(barrier.wait_fraction)} of their step inside collectives"
        else:
            how = f"arrivals at the collective measured on {count(len(barrier.arrivals or ()), 'rank')}"
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=(
                f"Measured across {num(barrier.ranks)} ranks: {ctx.target} on {who}, the straggler, is {on_rank}"
                f"{pct(p_distributed)} of the {num(barrier.step_ms)} ms step every rank waits for ({how}), so p is "
                f"taken against the step."
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
    if ctx.target_is_comm and ctx.proposal.replay is not None and not _pays(ctx):
        # The replay made the collective's whole time faster, its wait included: the most a faster transfer could
        # save. When even that does not pay, splitting transfer from wait cannot change the answer (replayed_saving
        # says why it does not).
        return None
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


def _unseen(ctx: Context, barrier: Barrier, step: BarrierStep) -> Finding:
    """A faster compute target the step does not see: its rank waits for the straggler, which still sets the step
    (measured per rank: `arrivals`; stated: `critical_path` false), so the rank only waits longer. A redirect to the
    compute of the rank that sets the step (`Context.alternative`) — not to another phase of the target's rank, which
    waits as well; info where the value of the work rests on something else (a strategic workload, a memory fix)."""
    stated = ctx.proposal.k
    # a range of k is said at its high end (the most waiting), never at its midpoint
    k = stated.high if isinstance(stated, Range) else ctx.k
    cut = 1.0 if math.isinf(k) else 1.0 - 1.0 / k
    how = "removed" if math.isinf(k) else f"at {'up to ' if isinstance(stated, Range) else ''}{times(k)}"
    figures: dict[str, Figure] = {
        "ranks": barrier.ranks,
        "p": ctx.p,
        "step_saving": max(step.saving, 0.0),
        "end_to_end_saving": ctx.run_saving,
    }
    if step.own_ms is not None and step.setter is not None and barrier.step_ms is not None:
        longer = step.own_ms * cut
        figures |= {
            "rank": barrier.rank,
            "straggler": barrier.straggler,
            "step_setter": step.setter,
            "step_setter_ms": step.after_ms,
            "step_ms": barrier.step_ms,
            "longer_wait_ms": longer,
        }
        who = f"rank {barrier.rank}" if barrier.rank is not None else "its rank"
        head = (
            f"{ctx.target} is off the straggler's path: {how} {who} waits {ms(longer)} more in the collective and "
            f"the {ms(barrier.step_ms)} step saves nothing"
        )
    else:
        base = ctx.baseline_ms
        longer_ms = ctx.p * base * cut if base is not None else None
        figures["longer_wait_ms"] = longer_ms
        waits = f"waits {ms(longer_ms)} more" if longer_ms is not None else "only waits longer"
        head = (
            f"{ctx.target}'s {pct(ctx.p)} is off the critical path of the {num(barrier.ranks)}-rank barrier: {how} "
            f"its rank {waits} for the slowest and the step saves nothing"
        )
    if ctx.worth.clears:
        return Finding(rule=ID, effect="info", stage="worth", figures=figures, message=f"{head}.")
    if ctx.alternative is None:  # not measured per rank: the slowest rank's compute, unnamed
        message = f"{head}; the slowest rank's compute is where the effort belongs."
        return Finding(rule=ID, effect="opposes", verdict="redirect", stage="worth", figures=figures, message=message)
    finding = opposition(ctx, ID, head, figures)  # the compute of the rank that sets the step (Context.alternative)
    finding.stage = "worth"  # what the work is worth, not whether p can be trusted
    return finding


def _more_unmeasured(ctx: Context, barrier: Barrier, step: BarrierStep) -> Finding:
    """Further targets measured on one rank behind a barrier, whose saving there the step does not see once another
    rank sets it, and without which the change does not pay: their time on the other ranks decides (if they run there
    too, the step sees it), and only a trace across all ranks gives it (`flags.barrier.arrivals[].more_ms`)."""
    more = ctx.more_targets
    whose = label(more[0][0]) if len(more) == 1 else "the further targets"
    rank = barrier.rank if barrier.rank is not None else barrier.straggler
    where = f"rank {rank}" if rank is not None else "its rank"
    base = barrier.step_ms or ctx.baseline_ms
    figures: dict[str, Figure] = {
        "ranks": barrier.ranks,
        "rank": rank,
        "more_saving": step.more_plain,
        "more_unseen": step.more_unseen,
        "end_to_end_saving": ctx.run_saving,
    }
    if ctx.more_unseen_worth is not None:
        figures["end_to_end_saving_if_seen"] = ctx.more_unseen_worth.saving

    def said(share: float) -> str:
        return ms(share * base) if base is not None else f"{pct(share)} of the step"

    if base is not None:
        figures |= {"more_saving_ms": step.more_plain * base, "more_unseen_ms": step.more_unseen * base}
    one = len(more) == 1
    if step.more_seen > UNSEEN:
        figures["more_seen"] = step.more_seen
        if base is not None:
            figures["more_seen_ms"] = step.more_seen * base
        seen = f"{said(step.more_plain)} there, of which the step sees {said(step.more_seen)}"
    else:
        seen = f"{said(step.more_plain)} there that the step does not see"
    if step.setter is not None and step.after_ms is not None:
        figures |= {"step_setter": step.setter, "step_setter_ms": step.after_ms}
        seen += f" once rank {step.setter}'s {ms(step.after_ms)} sets it"
    else:
        seen += " while its rank waits for the slowest"
    given = "time as `more_ms`" if barrier.arrivals else "arrival with it (`arrivals`, `more_ms`)"
    head = (
        f"{whose}, measured on {where} alone, {'saves' if one else 'save'} {seen}; the change pays only if "
        f"{'it saves' if one else 'they save'} on other ranks too: trace {'it' if one else 'them'} across all ranks"
    )
    message = f"{head} (rocprofv3 --rccl-trace, nsys with NCCL tracing) and give each rank's {given}."
    if len(message) > STATEMENT_CHARS:
        message = f"{head} and give each rank's {given}."
    return Finding(rule=ID, effect="remeasure", verdict="remeasure", figures=figures, message=message)


def _pays(ctx: Context) -> bool:
    """Whether the run's saving clears the noise floor, or the value of the work carries it."""
    return ctx.run_saving >= ctx.policy.noise_floor or ctx.worth.clears


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
