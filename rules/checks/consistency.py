"""consistency — the inputs checked against each other before any arithmetic is trusted.

What it checks: in this order, the shares of several targets (`p` and each of `more_targets`) against the whole
scope, which they cannot add up to more than (inclusive shares from a profiler's summary do); `p` against the
target's share of a breakdown of the same scope (within the policy's `breakdown_tolerance`); a target missing from a
breakdown that covers the whole step; a breakdown that leaves more than `max_unaccounted` of the step out;
`p_end_to_end` larger than a device-activity `p` (a part of the run cannot be a larger share of it than of the
device's busy time, which is shorter). Each is `remeasure`, naming both numbers. A breakdown a unit off its step
(`unit_slip_ratio`) is compared with nothing until its units are right.

Why it matters: a proposal funded on a p its own breakdown contradicts is funded on a typo or on a stale profile.
Amdahl's law is exact arithmetic on whatever it is given; the only defence is to check that what is given agrees
with itself.

Example: p = 25% with a breakdown that gives the target 12 ms of a 100 ms step: remeasure — the breakdown says 12%.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure, Finding
from worthit.rules.text import ms, pct

ID = "consistency"
_SUM_NOISE = 1e-9  # float noise in a sum of shares: 0.1 + 0.2 + 0.7 is not more than the scope
STAGE = "trust"

_STEP = [{"name": "gemm", "ms": 60}, {"name": "gelu", "ms": 12}, {"name": "copy", "ms": 28, "kind": "copy"}]

EXAMPLES = (
    Example(
        {"target": "gelu", "p": 0.25, "k": 4, "baseline_ms": 100, "breakdown": _STEP},
        fires=True,
        verdict="remeasure",
        figures={"p": 0.25, "breakdown_share": 0.12},
    ),
    Example(
        {"target": "softmax", "p": 0.1, "k": 4, "baseline_ms": 100, "breakdown": _STEP},
        fires=True,
        verdict="remeasure",
        figures={"breakdown_ms": 100, "baseline_ms": 100},
    ),
    Example(
        {"target": "gelu", "p": 0.06, "k": 4, "baseline_ms": 200, "breakdown": _STEP},
        fires=True,
        verdict="remeasure",
        figures={"unaccounted_share": 0.5},
    ),
    Example(
        {"target": "ln", "p": 0.02, "p_end_to_end": 0.05, "k": 5, "scope": {"measured": "device_activity"}},
        fires=True,
        verdict="remeasure",
        figures={"p": 0.02, "p_end_to_end": 0.05},
    ),
    Example(
        # inclusive shares from a summary table: 41% + 52% + 31% = 124% of the step
        {"target": "attention", "p": 0.41, "k": 1.5, "baseline_ms": 80}
        | {"more_targets": [{"name": "mlp", "p": 0.52, "k": 1.3}, {"name": "norm", "p": 0.31, "k": 2}]},
        fires=True,
        verdict="remeasure",
        figures={"targets_share": 1.24, "targets": 3},
    ),
    Example({"target": "gelu", "p": 0.12, "k": 4, "baseline_ms": 100, "breakdown": _STEP}, fires=False),
    Example({"target": "k", "p": 0.012, "p_end_to_end": 0.00014, "k": 10}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Remeasure when p, the breakdown, the baseline and p_end_to_end disagree with each other."""
    proposal, policy = ctx.proposal, ctx.policy
    tolerance = policy.breakdown_tolerance
    figures: dict[str, Figure]
    # A breakdown in another unit than its step (ctx.unit_slip) agrees with nothing; the units come first.
    measured = proposal.breakdown_scope == "measured" and bool(proposal.breakdown) and ctx.unit_slip is None
    base = proposal.baseline_ms
    more = ctx.more_targets
    total = ctx.p + sum(p for _, p, _ in more)
    if more and total > 1 + _SUM_NOISE:
        figures = {"targets_share": total, "targets": len(more) + 1, "p": ctx.p}
        scope = ctx.scope_noun
        step = f" ({ms(total * base)} of {ms(base)})" if base is not None else ""
        return _remeasure(
            figures,
            f"The {len(more) + 1} targets' shares add up to {pct(total)} of {scope}{step}, more than all of it, so "
            f"they overlap (inclusive shares from a summary table count a caller's time again in each callee); "
            f"measure each target's exclusive time on one timeline before deciding",
        )
    if measured and ctx.target_phase is not None and ctx.breakdown_total:
        share = ctx.share(ctx.target_phase)
        if abs(share - ctx.p) > tolerance:
            figures = {"p": ctx.p, "breakdown_share": share, "target_ms": ctx.target_phase.ms}
            return _remeasure(
                figures,
                f"p is {pct(ctx.p)} but the breakdown gives {ctx.target} {ms(ctx.target_phase.ms)} of "
                f"{ms(ctx.breakdown_total)}, {pct(share)}; measure which is right before deciding",
            )
    if measured and base is not None and proposal.target is not None:
        total = ctx.breakdown_ms
        figures = {"breakdown_ms": total, "baseline_ms": base}
        if ctx.target_phase is None and abs(total - base) <= tolerance * base:
            return _remeasure(
                figures,
                f"The breakdown covers the whole {ms(base)} step but has no {ctx.target} in it, so p = {pct(ctx.p)} "
                f"was measured somewhere else; profile the step that holds the target",
            )
        unaccounted = (base - total) / base
        if unaccounted > policy.max_unaccounted:
            figures |= {"unaccounted_share": unaccounted, "max_unaccounted": policy.max_unaccounted}
            return _remeasure(
                figures,
                f"The breakdown accounts for {ms(total)} of the {ms(base)} step, leaving {pct(unaccounted)} "
                f"unaccounted, so the largest phase may be the one not listed; profile the whole step first",
            )
    run = proposal.p_end_to_end
    if run is not None and proposal.scope.measured in (None, "device_activity") and run > ctx.p + tolerance * ctx.p:
        figures = {"p": ctx.p, "p_end_to_end": run}
        return _remeasure(
            figures,
            f"p_end_to_end ({pct(run)}) is larger than p of device activity ({pct(ctx.p)}), which the run's longer "
            f"time cannot give; one of the two was taken on another scope",
        )
    return None


def _remeasure(figures: dict[str, Figure], message: str) -> Finding:
    return Finding(rule=ID, effect="remeasure", verdict="remeasure", figures=figures, message=message + ".")
