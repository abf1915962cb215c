"""What the change acts on as one (p, k): k derived end to end once added work is counted, and the k that removes a
saving from a share."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from worthit.rules import amdahl
from worthit.rules.errors import InvalidInput
from worthit.rules.model import Proposal

if TYPE_CHECKING:
    from worthit.rules.context import Context

__all__ = ["acted_of", "derived_k", "effective_k"]


def effective_k(p: float, saving: float) -> float:
    """The k that removes `saving` of the scope from a share `p` of it: 1 / (1 − saving / p), ∞ when all of p."""
    if p <= 0:
        return 1.0
    left = 1.0 - saving / p
    return math.inf if left <= 0 else 1.0 / left


def derived_k(proposal: Proposal, p: float, k: float, baseline_ms: float | None) -> float:
    """The target's end-to-end speedup once the work the change adds is counted (`added_work`): speculative decoding
    as the formula of `amdahl.speculative_k` gives it (in place of the tokens-per-pass `k` teams quote), then each
    added phase's ms on top of the target's new time (`amdahl.with_added_ms`, which needs the scope's time)."""
    added = proposal.added_work
    if added is None:
        return k
    spec = added.speculative
    if spec is not None:
        k = amdahl.speculative_k(spec.draft_tokens, spec.acceptance, spec.draft_cost, spec.verify_cost)
    extra = sum(phase.ms for phase in added.phases or ())
    if extra > 0:
        if baseline_ms is None:
            raise InvalidInput(
                "Expected `baseline_ms` (or a breakdown of the step) with `added_work.phases`: added ms are weighed "
                "against the target's own time",
                "/added_work/phases",
            )
        k = amdahl.with_added_ms(baseline_ms * p, k, extra)
    # extreme inputs (a verify pass of 1e-300 steps, 1e308 ms added) must still give a k whose figures are finite:
    # the new time, and the headroom 1 − 1/k (an acceptance of 2e-308 gives k = 5.6e-309, whose 1/k overflows), as
    # the boundary requires of a stated k
    positive = k > 0 and not math.isnan(k)
    remaining = (1 - p) + p / k if positive else math.inf
    step = baseline_ms if baseline_ms is not None else 1.0
    finite = positive and math.isfinite(1.0 / k) and math.isfinite(remaining) and math.isfinite(step * remaining)
    if not finite or (math.isinf(k) and spec is not None):
        raise InvalidInput(
            f"Expected `added_work` that leaves the target a finite, positive speedup, got {k}", "/added_work"
        )
    return k


def acted_of(ctx: Context) -> tuple[float, float]:
    """The whole change as one (p, k) on the measured scope: the share it touches and the k that removes what it
    saves. Savings on disjoint phases add (the target's, on its transfer alone when a collective's wait is
    split out, and each further target's); speedups never multiply. A collective's wait is not touched: the
    ceiling, the headroom and what is left are the transfer's (a wait that is all of p leaves the target at
    1×)."""
    wait, more, step = ctx.wait_share, ctx.more_targets, ctx.barrier_step
    if not wait and not more and step is None:
        return ctx.p, ctx.k
    if step is not None:
        # Behind a barrier the target's saving is the step's (`barrier_step`): the share it touches is what the
        # step can lose through it at most (nothing, off the critical path), or for a slower target the share
        # the slowdown lands on, so that p_all · (1 − 1/k_all) is the step's saving either way. The further
        # targets are in it (`BarrierStep.more`): behind the barrier their savings are the step's too.
        own, saving = step.touched(ctx.k), step.saving
    else:
        own, saving = ctx.p - wait, amdahl.saving_fraction(ctx.p - wait, ctx.k)
    if step is None or not step.more:
        saving += math.fsum(amdahl.saving_fraction(p, k) for _, p, k in more)
        own += math.fsum(p for _, p, _ in more)
    p_all = min(own, 1.0)
    if p_all <= 0 and step is not None:
        return 0.0, ctx.k if ctx.k < 1 else 1.0  # the step sees none of it: no saving, no headroom, no ceiling
    if p_all <= 0:
        p_all = ctx.p
    k_all = effective_k(p_all, saving)
    # Each k is finite, but a further target's 1e-300× on a share of 1e-9 leaves no finite new time, nor does a
    # 2e-308× on a step of 1e23 ms once the fraction left is put in ms.
    scale = ctx.baseline_ms if ctx.baseline_ms is not None else 1.0
    if (
        not math.isfinite(saving)
        or k_all <= 0
        or not math.isfinite(1.0 / k_all)
        or not math.isfinite(scale * max(1.0 - saving, p_all / k_all))
    ):
        raise InvalidInput(
            "Expected `more_targets` k large enough that the step's new time is a finite number", "/more_targets"
        )
    return p_all, k_all
