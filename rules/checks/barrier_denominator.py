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
from worthit.rules.model import Barrier, Figure, Range
from worthit.rules.search import PASSING, break_even
from worthit.rules.wording import Draft, names, opposed

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


SPLIT = (
    "Across {ranks:num} ranks {target}'s {p:pct} is split as measured: {target_wait:pct} of the step waiting for the "
    "slowest rank, {transfer_share:pct} of transfer, the only part a faster collective shortens."
)
RANK_STRAGGLER = "rank {straggler:int}"
THE_STRAGGLER = "the straggler"
WRONG_DENOMINATOR = (
    "Measured across {ranks:num} ranks, {target} on ",
    " is {target_ms:ms} of the {step_ms:ms} step every rank waits for, {p_distributed:pct}, not the {p_stated:pct} "
    "the arithmetic ran on; re-run it with p = {p_distributed:pct}.",
)
ON_RANK = "{rank_p:pct} of one rank's device activity but "
WAIT_INSIDE = "ranks wait {wait_fraction:pct} of their step inside collectives"
ARRIVALS = "arrivals at the collective measured on {arrival_ranks:count(rank_noun)}"
TAKEN = (
    "Measured across {ranks:num} ranks: {target} on ",
    ", the straggler, is ",
    "{p_distributed:pct} of the {step_ms:num} ms step every rank waits for (",
    "), so p is taken against the step.",
)
HOLDS = (
    "Across {ranks:num} ranks the barrier holds {wait_fraction:pct} of the step, so {target} on the critical path "
    "sets the step for every rank, as the collective shows."
)
COMM_WAIT = (
    "{target}'s {p:pct} on one rank includes its wait for the slowest of {ranks:num} ranks, which a faster transfer "
    "does not shorten; trace the collective across all ranks (rocprofv3 --rccl-trace, nsys with NCCL tracing) to "
    "split transfer from wait, and re-run p."
)
PAID_BY_ALL = (
    "On a barrier's critical path the straggler's {p:pct} is paid by all {ranks:num} waiting ranks, so one rank's "
    "profile has the wrong denominator; trace the collective across all ranks (rocprofv3 --rccl-trace, nsys with NCCL "
    "tracing) and re-run p."
)


def check(ctx: Context) -> Draft | None:
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
    words = {"target": ctx.target, "rank_noun": "rank"}
    if barrier.target_wait is not None and ctx.wait_share > 0:
        # The collective's own time is split into transfer and wait (given, or read from all ranks' traces): the
        # denominator question is answered, and the value is the transfer's alone (collective_wait says the rest).
        figures |= {"target_wait": ctx.wait_share, "transfer_share": max(ctx.p - ctx.wait_share, 0.0)}
        return Draft(ID, "info", SPLIT, figures, words)
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
        on_rank = ON_RANK if barrier.rank_p else ""
        who = RANK_STRAGGLER if barrier.straggler is not None else THE_STRAGGLER
        stated = ctx.p_run  # the share the decision's arithmetic runs on (p, or p_end_to_end when given)
        if not isinstance(ctx.proposal.p, Range) and abs(p_distributed - stated) > ctx.policy.breakdown_tolerance:
            # the measured barrier gives the share of the step every rank waits for; the arithmetic ran on another
            # (one rank's device activity, the seed's "wrong denominator"): not taken against the step, so re-run it
            figures |= {"p_stated": stated}
            first, last = WRONG_DENOMINATOR
            return Draft(ID, "remeasure", (first, who, last), figures, words)
        if barrier.wait_fraction is not None:
            how = WAIT_INSIDE
        else:
            figures["arrival_ranks"] = len(barrier.arrivals or ())
            how = ARRIVALS
        first, straggler, share, last = TAKEN
        return Draft(ID, "info", (first, who, straggler, on_rank, share, how, last), figures, words)
    if barrier.wait_fraction is not None and ctx.target_is_comm:
        found = _transfer(ctx, barrier.wait_fraction, figures, words)
        if found is not None:
            return found
    if barrier.wait_fraction is not None:
        return Draft(ID, "info", HOLDS, figures, words)
    if ctx.target_is_comm and ctx.proposal.replay is not None and not _pays(ctx):
        # The replay made the collective's whole time faster, its wait included: the most a faster transfer could
        # save. When even that does not pay, splitting transfer from wait cannot change the answer (replayed_saving
        # says why it does not).
        return None
    return Draft(ID, "remeasure", COMM_WAIT if ctx.target_is_comm else PAID_BY_ALL, figures, words)


REMOVED = "removed"
AT_K = "at {k:times}"
AT_UP_TO_K = "at up to {k:times}"
OFF_PATH = "{target} is off the straggler's path: "
RANK_WAITS = " {who} waits {longer_wait_ms:ms} more in the collective and the {step_ms:ms} step saves nothing"
RANK_WAITS_NUMBERED = (
    " rank {rank:int} waits {longer_wait_ms:ms} more in the collective and the {step_ms:ms} step saves nothing"
)
OFF_CRITICAL = "{target}'s {p:pct} is off the critical path of the {ranks:num}-rank barrier: "
WAITS_MORE = " its rank waits {longer_wait_ms:ms} more for the slowest and the step saves nothing"
WAITS_LONGER = " its rank only waits longer for the slowest and the step saves nothing"
SLOWEST_COMPUTE = "; the slowest rank's compute is where the effort belongs."


def _unseen(ctx: Context, barrier: Barrier, step: BarrierStep) -> Draft:
    """A faster compute target the step does not see: its rank waits for the straggler, which still sets the step
    (measured per rank: `arrivals`; stated: `critical_path` false), so the rank only waits longer. A redirect to the
    compute of the rank that sets the step (`Context.alternative`) — not to another phase of the target's rank, which
    waits as well; info where the value of the work rests on something else (a strategic workload, a memory fix)."""
    stated = ctx.proposal.k
    # a range of k is said at its high end (the most waiting), never at its midpoint
    k = stated.high if isinstance(stated, Range) else ctx.k
    cut = 1.0 if math.isinf(k) else 1.0 - 1.0 / k
    figures: dict[str, Figure] = {
        "ranks": barrier.ranks,
        "p": ctx.p,
        "step_saving": max(step.saving, 0.0),
        "end_to_end_saving": ctx.run_saving,
    }
    words = {"target": ctx.target}
    if math.isinf(k):
        how = REMOVED
    else:
        figures["k"] = k
        how = AT_UP_TO_K if isinstance(stated, Range) else AT_K
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
        head: tuple[str, ...] = (OFF_PATH, how, RANK_WAITS_NUMBERED if barrier.rank is not None else RANK_WAITS)
    else:
        base = ctx.baseline_ms
        longer_ms = ctx.p * base * cut if base is not None else None
        figures["longer_wait_ms"] = longer_ms
        head = (OFF_CRITICAL, how, WAITS_MORE if longer_ms is not None else WAITS_LONGER)
    if ctx.worth.clears:
        return Draft(ID, "info", (*head, "."), figures, words, stage="worth")
    if ctx.alternative is None:  # not measured per rank: the slowest rank's compute, unnamed
        return Draft(ID, "opposes", (*head, SLOWEST_COMPUTE), figures, words, verdict="redirect", stage="worth")
    draft = opposed(ctx, ID, head, figures, words)  # the compute of the rank that sets the step (Context.alternative)
    draft.stage = "worth"  # what the work is worth, not whether p can be trusted
    return draft


MORE_HEAD = "{whose}, measured on "
ON_RANK_ALONE = "rank {rank:int}"
ITS_RANK = "its rank"
ALONE_SAVES = (" alone, saves ", " alone, save ")
SAID_MS = {"plain": "{more_saving_ms:ms}", "seen": "{more_seen_ms:ms}"}
SAID_SHARE = {"plain": "{more_saving:pct} of the step", "seen": "{more_seen:pct} of the step"}
THERE_SEEN = (" there, of which the step sees ", "")
THERE_UNSEEN = " there that the step does not see"
ONCE_SETS = " once rank {step_setter:int}'s {step_setter_ms:ms} sets it"
WHILE_WAITS = " while its rank waits for the slowest"
PAYS_ONLY = (
    "; the change pays only if it saves on other ranks too: trace it across all ranks",
    "; the change pays only if they save on other ranks too: trace them across all ranks",
)
HOW_TO_TRACE = " (rocprofv3 --rccl-trace, nsys with NCCL tracing)"
GIVE = " and give each rank's {given}."


def _more_unmeasured(ctx: Context, barrier: Barrier, step: BarrierStep) -> Draft:
    """Further targets measured on one rank behind a barrier, whose saving there the step does not see once another
    rank sets it, and without which the change does not pay: their time on the other ranks decides (if they run there
    too, the step sees it), and only a trace across all ranks gives it (`flags.barrier.arrivals[].more_ms`)."""
    more = ctx.more_targets
    rank = barrier.rank if barrier.rank is not None else barrier.straggler
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
    words = {
        "whose": names([more[0][0]]) if len(more) == 1 else "the further targets",
        "given": "time as `more_ms`" if barrier.arrivals else "arrival with it (`arrivals`, `more_ms`)",
    }
    said = SAID_SHARE
    if base is not None:
        figures |= {"more_saving_ms": step.more_plain * base, "more_unseen_ms": step.more_unseen * base}
        said = SAID_MS
    one = len(more) == 1
    seen: tuple[str, ...]
    if step.more_seen > UNSEEN:
        figures["more_seen"] = step.more_seen
        if base is not None:
            figures["more_seen_ms"] = step.more_seen * base
        seen = (said["plain"], THERE_SEEN[0], said["seen"])
    else:
        seen = (said["plain"], THERE_UNSEEN)
    if step.setter is not None and step.after_ms is not None:
        figures |= {"step_setter": step.setter, "step_setter_ms": step.after_ms}
        seen += (ONCE_SETS,)
    else:
        seen += (WHILE_WAITS,)
    where = ON_RANK_ALONE if rank is not None else ITS_RANK
    head = (MORE_HEAD, where, ALONE_SAVES[0 if one else 1], *seen, PAYS_ONLY[0 if one else 1])
    full, short = (*head, HOW_TO_TRACE, GIVE), (*head, GIVE)
    return Draft(ID, "remeasure", full, figures, words, fallbacks=(short,))


LEFT_PAYS = (
    "Of {target}'s {p:pct}, up to {wait_fraction:pct} of the step may be the ranks' wait for the straggler, which a "
    "faster transfer does not shorten, and on the {transfer_low:pct} left {k:k} still pays."
)
FUND_IF_TRANSFER = (
    "Fund if a trace across all ranks shows {target}'s transfer, without the wait for the straggler, at "
    "{break_even_transfer:pct} of the step or more: up to "
)
IS_THAT_WAIT = " of the step is that wait, which a faster transfer does not shorten"
AND_LEFT = ", and on the {transfer_low:pct} left {k:times} saves {transfer_saving:pct}."


def _pays(ctx: Context) -> bool:
    """Whether the run's saving clears the noise floor, or the value of the work carries it."""
    return ctx.run_saving >= ctx.policy.noise_floor or ctx.worth.clears


def _transfer(ctx: Context, wait: float, figures: dict[str, Figure], words: dict[str, str]) -> Draft | None:
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
    figures |= {"transfer_low": transfer, "transfer_saving": saved, "k": k}
    if transfer > 0 and passes(transfer):
        return Draft(ID, "info", LEFT_PAYS, figures, words)
    if not passes(p):
        return None  # it does not pay even if none of it were wait: the other checks say why
    edge = break_even(passes, transfer, p)
    figures["break_even_transfer"] = edge
    most = "{wait_fraction:pct}" if wait <= p else "{p:pct}"  # the wait, at most the whole share
    template = (FUND_IF_TRANSFER, most, IS_THAT_WAIT, AND_LEFT if transfer else ".")
    return Draft(ID, "condition", template, figures, words, stage="condition")
