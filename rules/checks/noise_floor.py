"""noise_floor — a saving below the noise floor is a rounding error.

What it checks: the end-to-end saving, p_end_to_end · (1 − 1/k) when the target's share of the whole run is
known (else p · (1 − 1/k)), against the policy's `noise_floor` (default 1% of the step).

Why it matters: a saving smaller than run-to-run noise cannot be seen, let alone sold; the effort belongs to the
largest phase of the breakdown, which the statement names where one is known.

Example: a kernel that is 0.014% of the profiled run, made infinitely fast, saves 0.014%: decline, or redirect to
the allocation and copies that take 85% of the run.
"""

from __future__ import annotations

from rules.engine import Context, Example
from rules.model import Finding
from rules.text import ms, pct

ID = "noise_floor"

EXAMPLES = (
    Example({"target": "k", "p": 0.012, "k": 10, "p_end_to_end": 0.00014}, fires=True, verdict="decline",
            figures={"end_to_end_saving": 0.000126}),
    Example(
        {"target": "small", "p": 0.005, "k": 10, "baseline_ms": 100,
         "breakdown": [{"name": "small", "ms": 0.5}, {"name": "copy", "ms": 60, "kind": "copy"},
                       {"name": "gemm", "ms": 39.5}]},
        fires=True, verdict="redirect",
    ),
    Example({"p": 0.21, "k": 10}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Opposes a proposal whose end-to-end saving is below the policy's noise floor."""
    share = ctx.proposal.p_end_to_end if ctx.proposal.p_end_to_end is not None else ctx.p
    saving = share * (1 - 1 / ctx.k)
    floor = ctx.policy.noise_floor
    if saving >= floor:
        return None
    figures: dict[str, float | str | None] = {"end_to_end_saving": saving, "noise_floor": floor}
    others = [phase for phase in ctx.proposal.breakdown or () if phase.name != ctx.proposal.target]
    biggest = max(others, key=lambda phase: phase.ms, default=None)
    head = f"Even {'removing' if ctx.k == float('inf') else 'speeding up'} {ctx.target} saves {pct(saving)} end to end"
    if biggest is not None and ctx.share(biggest) >= floor:
        figures |= {"alternative": biggest.name, "alternative_share": ctx.share(biggest)}
        return Finding(
            rule=ID, effect="opposes", verdict="redirect", figures=figures,
            message=f"{head}, a rounding error below the {pct(floor)} noise floor; "
                    f"{biggest.name} at {pct(ctx.share(biggest))} ({ms(biggest.ms)}) is where the effort belongs.",
        )
    return Finding(
        rule=ID, effect="opposes", verdict="decline", figures=figures,
        message=f"{head}, a rounding error below the {pct(floor)} noise floor.",
    )
