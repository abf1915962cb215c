"""ceiling — what the whole target is worth, and what a follow-up could still win.

What it checks: always fires. The ceiling S_max = 1 / (1 − p) and the floor the scope cannot drop below with the
target at zero; the share of the target's own time this k captures and what is left; where a breakdown is given,
the phase that becomes the bottleneck afterwards. For a follow-up (`prior_k`: the target was already sped up), it
opposes when everything that is left of the target is below the noise floor, or when even capturing all of it
would return less than `min_rate` per engineer-week.

Why it matters: compute the ceiling before funding the follow-up, not after. A 10× already captures 90% of the
target's headroom; a further 2× fights over the last 10%, no matter how brilliant the rewrite. And the bottleneck
moves: once attention drops from 60 ms to 20 ms, the MLP's unchanged 30 ms is half the step.

Example: attention 60 ms of a 100 ms step at 3× → 60 ms; the floor is 40 ms (2.5×) and the MLP becomes 50% of the
step. A follow-up on a kernel already 10× faster that is 0.5% of the step: decline.
"""

from __future__ import annotations

import math

from worthit.rules import amdahl
from worthit.rules.context import Context, context
from worthit.rules.examples import Example
from worthit.rules.findings import carried, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import label, ms, pct, span, times

ID = "ceiling"
STAGE = "worth"

_SEED = [{"name": "attention", "ms": 60}, {"name": "mlp", "ms": 30}, {"name": "rest", "ms": 10}]

EXAMPLES = (
    Example(
        {"target": "attention", "p": 0.6, "k": 3, "baseline_ms": 100, "breakdown": _SEED},
        fires=True,
        decision="fund",
        figures={"ceiling_speedup": 2.5, "floor_ms": 40, "remaining_ms": 20, "next_bottleneck_share": 0.5},
    ),
    Example(
        {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100},
        fires=True,
        decision="fund",
        figures={"headroom_captured": 0.9, "remaining_ms": 2.1, "floor_ms": 79},
    ),
    Example(
        {"target": "attention_softmax", "p": 0.005, "k": 2, "prior_k": 10, "baseline_ms": 81.1},
        fires=True,
        verdict="decline",
        figures={"prior_headroom_captured": 0.9, "follow_up_headroom": 0.005},
    ),
    Example(
        {"target": "attention_softmax", "p": 0.026, "k": 2, "prior_k": 10, "baseline_ms": 81.1, "cost_weeks": 4},
        fires=True,
        verdict="decline",
        figures={"follow_up_best_rate": 0.0065},
    ),
)


def check(ctx: Context) -> Finding | None:
    """The ceiling, the floor, the headroom left and the next bottleneck; opposes a follow-up with too little left."""
    prior = ctx.proposal.prior_k
    if prior is None and ctx.verdict_only:
        return None  # without an earlier speedup it only informs
    f = ctx.amdahl
    # The change as one (p, k): several targets, or a collective's transfer, reach their ceiling together.
    p, _ = ctx.acted
    several = bool(ctx.more_targets)
    figures: dict[str, Figure] = {
        "ceiling_speedup": f.ceiling_speedup,
        "floor_fraction": 1 - p,
        "headroom_captured": f.headroom_captured,
        "remaining_fraction": f.remaining_fraction,
    }
    base = ctx.baseline_ms
    if base is not None:
        figures |= {"floor_ms": base * (1 - p), "remaining_ms": base * f.remaining_fraction}
    after = _next_bottleneck(ctx, figures)
    if prior is not None:
        return _follow_up(ctx, figures, math.inf if prior == "inf" else prior)
    noun = ctx.scope_noun  # what p is a share of: the step, device activity, the run
    ceiling = "unbounded" if f.ceiling_speedup is None else times(f.ceiling_speedup)
    floor = f"{ms(base * (1 - p))} ({ceiling})" if base is not None else ceiling
    # with the target all of the scope (p = 1) there is no floor to stop at: nothing of it would be left
    at_zero = (
        f"even at zero {noun} stops at {floor}"
        if f.ceiling_speedup is not None
        else f"at zero nothing of {noun} would be left"
    )
    if several and not (ctx.barrier_step is not None and p <= 0):  # behind a barrier the step may see none of it
        left = ms(base * f.remaining_fraction) if base is not None else f"{pct(f.remaining_fraction)} of {noun}"
        head = (
            f"Together the change captures {pct(f.headroom_captured)} of the headroom of the {pct(p)} of {noun} it "
            f"touches, leaving {left} there for any follow-up, and {at_zero}"
        )
    elif ctx.wait_share:
        # A faster transfer never shortens the wait for the slowest rank: its ceiling is the transfer's.
        left = ms(base * f.remaining_fraction) if base is not None else f"{pct(f.remaining_fraction)} of {noun}"
        how = "Removed" if math.isinf(ctx.k) else f"At {times(ctx.k)}"
        captured = f"{pct(f.headroom_captured)} of its headroom" if ctx.k > 1 else "none of its headroom"
        head = (
            f"{how} {ctx.target}'s transfer ({pct(p)} of {noun}) captures {captured}, leaving {left} for any "
            f"follow-up, and {at_zero}, the {pct(ctx.wait_share)} spent waiting for the "
            f"slowest rank untouched"
        )
    elif (ranged := _over_range(ctx, figures)) is not None:
        head, after = ranged
    elif ctx.barrier_step is not None and ctx.k > 1:
        head = _behind_barrier(ctx, figures, p, at_zero)
    elif math.isinf(ctx.k):
        head = f"Removing {ctx.target} takes all of its {pct(ctx.p)} of {noun}, the ceiling of {floor}"
    elif ctx.k <= 1:
        head = f"At {times(ctx.k)} {ctx.target} captures none of its headroom, and {at_zero}"
    else:
        left = ms(base * f.remaining_fraction) if base is not None else f"{pct(f.remaining_fraction)} of {noun}"
        head = (
            f"At {times(ctx.k)} {ctx.target} captures {pct(f.headroom_captured)} of its own headroom, leaving "
            f"{left} for any follow-up, and {at_zero}"
        )
    return Finding(rule=ID, effect="info", figures=figures, message=f"{head}{after}.")


def _over_range(ctx: Context, figures: dict[str, Figure]) -> tuple[str, str] | None:
    """The ceiling of a proposal whose k (or p) is a range, every k of it faster: what it captures and leaves from one
    end of the range to the other, never at the midpoint (a 2–10× is not "at 6×"). None for a single k and p, a range
    reaching k ≤ 1, and a ranged p behind a barrier (what the step can lose is then a range too: the end the decision
    is argued at speaks there)."""
    proposal, box = ctx.proposal, ctx.box
    if box is None:
        return None
    (p_low, p_high), (k_low, k_high) = box
    behind = ctx.barrier_step is not None
    if k_low <= 1 or (behind and p_high > p_low):
        return None
    ends = [
        context(proposal, ctx.policy, p, k, verdict_only=True, like=ctx)
        for p in sorted({p_low, p_high})
        for k in sorted({k_low, k_high})
    ]
    after = _next_over_range(ends, figures)
    captured = [end.amdahl.headroom_captured for end in ends]
    left = [end.amdahl.remaining_fraction for end in ends]
    floor = [1 - end.acted[0] for end in ends]
    ceiling = [end.amdahl.ceiling_speedup for end in ends]
    base, noun = ctx.baseline_ms, ctx.scope_noun
    figures |= {
        "headroom_captured_low": min(captured),
        "headroom_captured_high": max(captured),
        "remaining_fraction_low": min(left),
        "remaining_fraction_high": max(left),
        "floor_fraction_low": min(floor),
        "floor_fraction_high": max(floor),
    }
    if base is not None:
        figures |= {"remaining_ms_low": base * min(left), "remaining_ms_high": base * max(left)}
        figures |= {"floor_ms_low": base * min(floor), "floor_ms_high": base * max(floor)}
        leaving = span(ms(base * min(left)), ms(base * max(left)))
    else:
        leaving = f"{span(pct(min(left)), pct(max(left)))} of {noun}"
    how = "removed" if math.isinf(k_low) else f"at {span(times(k_low), times(k_high))}"
    share = span(pct(min(captured)), pct(max(captured)))
    if None in ceiling:
        at_zero = f"at zero nothing of {noun} would be left"
    else:
        speeds = [c for c in ceiling if c is not None]
        stop = span(times(min(speeds)), times(max(speeds)))
        stops = f"{span(ms(base * min(floor)), ms(base * max(floor)))} ({stop})" if base is not None else stop
        at_zero = f"even at zero {noun} stops at {stops}"
    if behind:
        step = ctx.barrier_step
        setter = step.floor_setter if step is not None else None
        figures |= {"target_p": ctx.p, "floor_setter": setter}
        where = f", where rank {setter} sets it" if setter is not None else ""
        p_acted = ends[0].acted[0]
        if p_acted <= 0:
            return None
        return (
            f"Behind the barrier the step can lose {pct(p_acted)} of itself through {ctx.target}'s {pct(ctx.p)}: "
            f"{how} it captures {share} of that, leaving {leaving} for any follow-up, and {at_zero}{where}"
        ), after
    return (
        f"{how[0].upper()}{how[1:]} {ctx.target} captures {share} of its own headroom, leaving {leaving} for any "
        f"follow-up, and {at_zero}"
    ), after


def _next_over_range(ends: list[Context], figures: dict[str, Figure]) -> str:
    """`_next_bottleneck` over a range: the phase that leads after the change at both its ends, with its share from
    one end to the other (empty where the ends disagree on the phase, or the breakdown cannot say)."""
    said = []
    for end in (min(ends, key=lambda c: c.run_saving), max(ends, key=lambda c: c.run_saving)):
        found: dict[str, Figure] = {}
        _next_bottleneck(end, found)
        said.append(found)
    low, high = said
    name = low.get("next_bottleneck")
    if name is None or name != high.get("next_bottleneck"):
        return ""
    before, one, other = (
        low["next_bottleneck_share_before"],
        low["next_bottleneck_share"],
        high["next_bottleneck_share"],
    )
    if not (isinstance(before, float) and isinstance(one, float) and isinstance(other, float)):
        return ""  # pragma: no cover - the shares are floats whenever the phase is named
    least, most = min(one, other), max(one, other)
    figures |= {
        "next_bottleneck": name,
        "next_bottleneck_share_before": before,
        "next_bottleneck_share_low": least,
        "next_bottleneck_share_high": most,
    }
    share = span(pct(least), pct(most))
    phase = ends[0].proposal.breakdown or ()
    target = next((p.ms for p in phase if p.name == ends[0].proposal.target), None)
    top = next((p.ms for p in phase if p.name == name), None)
    if target is not None and top is not None and top < target:
        return f"; {label(str(name))} then becomes the bottleneck, {pct(before)} → {share}"
    return f"; {label(str(name))} stays the bottleneck at {share}"


def _behind_barrier(ctx: Context, figures: dict[str, Figure], p: float, at_zero: str) -> str:
    """The ceiling of a compute target behind a barrier: what the step can lose through it (`p`, the acted share),
    never more than the next-slowest rank lets it, and the rank that then sets the step."""
    step, f, base = ctx.barrier_step, ctx.amdahl, ctx.baseline_ms
    setter = step.floor_setter if step is not None else None
    figures |= {"target_p": ctx.p, "floor_setter": setter}
    where = f", where rank {setter} sets it" if setter is not None else ""
    if p <= 0:
        return f"Behind the barrier the step loses nothing through {ctx.target}'s {pct(ctx.p)}: {at_zero}{where}"
    left = ms(base * f.remaining_fraction) if base is not None else f"{pct(f.remaining_fraction)} of the step"
    how = "removed" if math.isinf(ctx.k) else f"at {times(ctx.k)}"
    return (
        f"Behind the barrier the step can lose {pct(p)} of itself through {ctx.target}'s {pct(ctx.p)}: {how} it "
        f"captures {pct(f.headroom_captured)} of that, leaving {left} for any follow-up, and {at_zero}{where}"
    )


def _next_bottleneck(ctx: Context, figures: dict[str, Figure]) -> str:
    """Where the bottleneck goes after the change, as a clause (empty when the breakdown cannot say)."""
    target = ctx.target_phase
    if target is None or ctx.proposal.breakdown_scope != "measured" or not ctx.breakdown_total:
        return ""
    if ctx.barrier_step is not None:
        return ""  # the breakdown is one rank's; behind the barrier another rank sets the step (said with the floor)
    new_target = target.ms / ctx.k
    new_total = ctx.breakdown_total - (target.ms - new_target)
    if ctx.more_targets or ctx.wait_share:
        # Several phases change at once (or only a collective's transfer): the step after is the change's own.
        new_total = ctx.breakdown_total * (1 - amdahl.saving_fraction(*ctx.acted))
        new_target = target.ms - ctx.breakdown_total * amdahl.saving_fraction(ctx.p - ctx.wait_share, ctx.k)
    top = ctx.largest_other
    if top is None or new_total <= 0 or top.ms <= new_target:
        return ""
    share_after = top.ms / new_total
    if not share_after <= 1 + 1e-9:
        return ""  # the step after no longer holds the phase: cancellation in extreme times (1e308 ms at 5e-324×)
    figures |= {
        "next_bottleneck": top.name,
        "next_bottleneck_share_before": ctx.share(top),
        "next_bottleneck_share": share_after,
    }
    if top.ms < target.ms:
        return f"; {label(top.name)} then becomes the bottleneck, {pct(ctx.share(top))} → {pct(share_after)}"
    return f"; {label(top.name)} stays the bottleneck at {pct(share_after)}"


def _follow_up(ctx: Context, figures: dict[str, Figure], prior: float) -> Finding:
    """A follow-up on a target already sped up: everything it can still win is the target's current share."""
    floor = ctx.policy.noise_floor
    left = ctx.p_run
    captured = amdahl.headroom_captured(prior)
    cost = ctx.worth.cost.weeks  # build and upkeep: the one cost stage 3 counts, and its one return
    best_rate = None if cost is None else (left / cost if cost > 0 else math.inf)
    figures |= {
        "prior_k": ctx.proposal.prior_k,
        "prior_headroom_captured": captured,
        "follow_up_headroom": left,
        "follow_up_best_rate": best_rate,
        "noise_floor": floor,
        "min_rate": ctx.policy.min_rate,
    }
    base = ctx.baseline_ms
    if base is not None:
        figures["follow_up_headroom_ms"] = base * ctx.p
    what = f"the last {ms(base * ctx.p)} ({pct(left)} of the step)" if base is not None else f"the last {pct(left)}"
    earlier = "removal" if math.isinf(prior) else times(prior)
    further = "removing the rest" if math.isinf(ctx.k) else f"a further {times(ctx.k)}"
    head = (
        f"The earlier {earlier} already captured {pct(captured)} of {ctx.target}'s headroom, "
        f"so {further} fights over {what}"
    )
    if ctx.worth.clears and ctx.worth.basis != "measured":
        return carried(ctx, ID, figures, f"{head}, which the value of the work carries.")
    if left < floor:
        reason = f"below the {pct(floor)} noise floor no matter how brilliant the rewrite"
    elif best_rate is not None and best_rate < ctx.policy.min_rate:
        reason = f"and even infinitely fast would return {pct(best_rate)} of the step per engineer-week"
    else:
        return Finding(
            rule=ID, effect="info", figures=figures, message=f"{head}, winning {pct(ctx.run_saving)} of the step."
        )
    return opposition(ctx, ID, f"{head}, {reason}", figures)
