"""The step behind a barrier: what it loses when a compute target changes, rank by rank, as the latest arrival at the
collective sets it (`BarrierStep`, `arrivals_step`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from worthit.rules import amdahl
from worthit.rules.model import Arrival

if TYPE_CHECKING:
    from worthit.rules.context import Context

__all__ = ["UNSEEN", "BarrierStep", "arrivals_step", "barrier_step_of", "behind_barrier", "collective_wait_of"]


@dataclass(frozen=True, slots=True)
class BarrierStep:
    """What the step behind a barrier loses when a compute target changes (`Context.barrier_step`)."""

    saving: float
    """Share of the step removed at k (negative when the change makes the step longer)."""
    ceiling: float
    """Share of the step removed with the target at zero: what the step can lose through it at most."""
    own_ms: float | None
    """The target's time per step on its own rank, at this p (None when stated without per-rank figures)."""
    before_ms: float | None = None
    """The latest arrival at the collective before the change: the straggler's compute."""
    after_ms: float | None = None
    """The latest arrival after it: the compute of the rank that then sets the step."""
    setter: int | None = None
    """The rank whose arrival sets the step after the change (the lowest of equal ones)."""
    floor_setter: int | None = None
    """The rank that sets the step with the target at zero."""
    more: bool = False
    """The further targets (`more_targets`) are counted in `saving` and `ceiling`, through the same arrivals
    (`arrivals_step`): rank by rank where the arrivals give their time (`more_ms`), else a faster one on the rank p is
    measured on alone and a slower one in full; stated off the critical path, a faster one is no more seen than the
    target."""
    more_measured: bool = False
    """The arrivals give the further targets' time on every rank (`more_ms`): they are counted rank by rank."""
    more_plain: float = 0.0
    """What the further targets that get faster save on the rank p is measured on: Σ p · (1 − 1/k), as if no barrier
    were."""
    more_seen: float = 0.0
    """What the step sees of the further targets' change once the target's own is made (0: another rank then sets
    it, and their time there is not measured)."""
    slowed: float = 0.0
    """The share of the step in targets made slower: what a change the step sees none of the gain of acts on."""

    @property
    def more_unseen(self) -> float:
        """What the further targets save on the rank p is measured on that the step behind the barrier does not see,
        their time on the other ranks not measured (0 when it is: the step's saving is then theirs as measured)."""
        return 0.0 if self.more_measured else max(self.more_plain - self.more_seen, 0.0)

    def touched(self, k: float) -> float:
        """The share of the step the change acts on, as one (p, k) reads it: what the step can lose through the
        target (and the further targets, with `more`) at most; where that is nothing (off the critical path) and the
        change is slower, the share whose slowdown makes the step's loss."""
        if self.more:
            return self.ceiling if self.ceiling > 0 or self.saving >= 0 else max(self.slowed, UNSEEN)
        if k >= 1 or self.ceiling > 0:
            return self.ceiling
        return self.saving / (1.0 - 1.0 / k)  # nothing to gain, but the slowdown can still reach the step


def arrivals_step(
    arrivals: Sequence[Arrival],
    step_ms: float,
    target_ms: float,
    p: float,
    k: float,
    more: Sequence[tuple[str, float, float]] = (),
    rank: int | None = None,
) -> BarrierStep | None:
    """The step's saving when ranks wait at a barrier for the latest arrival, each rank's with the target's time on it
    divided by k: max over ranks of compute − target · (1 − 1/k), the target's times scaled by p over the measured p
    (`target_ms` of `step_ms`). None when that is the plain p · (1 − 1/k) at k and at zero (the target's rank stays the
    straggler whatever k).

    `more`, the further targets as (name, p, k), p a share of the step of `rank` (the rank p is measured on; by
    default the latest arrival), go through the same arithmetic: each rank's compute less every target's time on it
    times 1 − 1/k. Their time on the other ranks is each arrival's `more_ms`; where no arrival gives it, it is not
    measured, so a faster one is taken off `rank`'s arrival alone (what it saves behind the barrier at least: the step
    sees it only while that rank arrives last), and a slower one's loss is added to the step in full."""
    own = p * step_ms
    cut = 1.0 if math.isinf(k) else 1.0 - 1.0 / k
    # each rank's target time at this p, never past its compute (a ratio first: a tiny target_ms must not overflow)
    times = [min(a.target_ms / target_ms * own, a.compute_ms) if a.target_ms else 0.0 for a in arrivals]
    if rank is None:
        rank = -max((a.compute_ms, -a.rank) for a in arrivals)[1]
    measured = any(a.more_ms for a in arrivals)
    cuts = [1.0 if math.isinf(k_at) else 1.0 - 1.0 / k_at for _, _, k_at in more]
    at_k: list[float] = []  # each rank's further targets' time taken off (added, slower) at their k
    at_zero: list[float] = []  # and with them removed
    for a, t in zip(arrivals, times, strict=True):
        if a.rank == rank:
            spent = [share * step_ms for _, share, _ in more]
        else:
            spent = [(a.more_ms or {}).get(name, 0.0) for name, _, _ in more]
        room = max(a.compute_ms - t, 0.0)
        total = math.fsum(spent)
        if total > room:  # the stated shares never past the rank's compute
            spent = [value * room / total for value in spent]
        counted = [(value, c) for value, c in zip(spent, cuts, strict=True) if measured or c >= 0]
        at_k.append(math.fsum(value * c for value, c in counted))
        at_zero.append(math.fsum(spent))
    loss = (
        0.0
        if measured
        else math.fsum(share * step_ms * -c for (_, share, _), c in zip(more, cuts, strict=True) if c < 0)
    )

    def latest(cut: float, extra: Sequence[float] | None = None) -> tuple[float, int]:
        value, setter = max(
            (a.compute_ms - t * cut - (extra[i] if extra is not None else 0.0), -a.rank)
            for i, (a, t) in enumerate(zip(arrivals, times, strict=True))
        )
        return value, -setter

    before, _ = latest(0.0)
    alone, _ = latest(cut)
    after, setter = latest(cut, at_k)
    floor, floor_setter = latest(1.0, at_zero)
    saving, ceiling = (before - after - loss) / step_ms, (before - floor) / step_ms
    plain = amdahl.saving_fraction(p, k) + math.fsum(amdahl.saving_fraction(share, k_at) for _, share, k_at in more)
    reach = p + math.fsum(share for _, share, _ in more)
    if math.isclose(saving, plain, rel_tol=1e-9, abs_tol=1e-12) and math.isclose(ceiling, reach, rel_tol=1e-9):
        return None
    faster = math.fsum(share * c for (_, share, _), c in zip(more, cuts, strict=True) if c > 0)
    return BarrierStep(
        saving=saving,
        ceiling=ceiling,
        own_ms=own,
        before_ms=before,
        after_ms=after + loss,
        setter=setter,
        floor_setter=floor_setter,
        more=bool(more),
        more_measured=measured,
        more_plain=faster,
        more_seen=(alone - after) / step_ms,
        slowed=math.fsum(share for (_, share, _), c in zip(more, cuts, strict=True) if c < 0) + (p if k < 1 else 0.0),
    )


UNSEEN = 1e-12
"""A step saving no larger than this is none: the latest arrival at the barrier is the same before and after."""


def barrier_step_of(ctx: Context) -> BarrierStep | None:
    """A compute target's saving when every rank waits at a barrier for the slowest: what the step itself loses,
    where that is not the target's own saving (None where it is: plain Amdahl holds).

    With `flags.barrier.arrivals` (each rank's compute before the collective and the target's time in it, read
    from all ranks' traces) the step after is set by the latest arrival after the change: the straggler's saving
    stops where the next-slowest rank's compute sets the step, and a target off the straggler saves nothing
    (its rank only waits longer) unless, slower, its rank becomes the straggler. Stated without them,
    `critical_path` false says the same for a faster target: the step saves nothing; a slower one is counted in
    full, the rank's slack being unknown. Collectives (their wait is `target_wait`'s), and phases other than
    compute kernels (a rank's arrival is its compute: rules.profiles' `barrier_of`), are left to plain Amdahl.
    """
    barrier = ctx.proposal.flags.barrier
    if barrier is None or not ctx.behind_barrier:
        return None
    more = ctx.more_targets  # shares of the same rank's step as p
    if barrier.arrivals and barrier.step_ms and barrier.target_ms:
        rank = barrier.rank if barrier.rank is not None else barrier.straggler
        return arrivals_step(barrier.arrivals, barrier.step_ms, barrier.target_ms, ctx.p, ctx.k, more, rank)
    if ctx.k > 1:
        # Stated off the critical path: the further targets, on the same waiting rank, are no more seen; a slower
        # one is counted in full, as a slower target is (the rank's slack is not stated).
        faster = math.fsum(amdahl.saving_fraction(p, k) for _, p, k in more if k > 1)
        loss = -math.fsum(amdahl.saving_fraction(p, k) for _, p, k in more if k < 1)
        slowed = math.fsum(p for _, p, k in more if k < 1)
        return BarrierStep(saving=-loss, ceiling=0.0, own_ms=None, more=bool(more), more_plain=faster, slowed=slowed)
    return None


def behind_barrier(ctx: Context) -> bool:
    """Whether the step's saving may not be the target's own at some (p, k): a compute target (not a collective,
    whose wait is `target_wait`'s) with each rank's arrival measured, or stated off the critical path."""
    barrier = ctx.proposal.flags.barrier
    kind = ctx.target_phase.kind if ctx.target_phase is not None else "kernel"
    if barrier is None or barrier.target_wait is not None or kind != "kernel" or ctx.target_is_comm:
        return False
    return bool(barrier.arrivals and barrier.step_ms and barrier.target_ms) or not barrier.critical_path


def collective_wait_of(ctx: Context) -> float:
    """The wait a collective target's effort could remove by balancing the load instead: its own (`wait_share`),
    or, measured across all ranks on the straggler (whose collective is all transfer), the share of every rank's
    step spent waiting for it (`wait_fraction`). 0 when neither is known."""
    if ctx.wait_share > 0:
        return ctx.wait_share
    barrier = ctx.proposal.flags.barrier
    if barrier is None or not ctx.target_is_comm or barrier.wait_fraction is None:
        return 0.0
    if barrier.step_ms is None or barrier.target_ms is None:
        return 0.0
    return barrier.wait_fraction
