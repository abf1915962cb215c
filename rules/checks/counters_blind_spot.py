"""counters_blind_spot — counters never show copies or the gaps between kernels.

What it checks: `scope.method = counters`. Remeasure, unless a whole-step timeline is given: a breakdown that
shows non-kernel time (copies, allocation, host gaps), or whose parts add up to the step's wall time within the
policy's `breakdown_tolerance`.

Why it matters: counters describe what happens inside a kernel while it runs. A copy is not a kernel, and the
gaps between kernels are nobody's counters; every kernel can be at 100% speed-of-light while the GPU idles for a
quarter of the step. A share read off counters has the kernels' sum as its denominator, not the step.

Example: "attention is 21% of the step, per our counter profile" with no timeline: remeasure. The same with a
breakdown that includes an 18 ms H2D copy and 5 ms of host gaps: fine.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import NON_KERNEL
from worthit.rules.model import Figure
from worthit.rules.wording import Draft

ID = "counters_blind_spot"
STAGE = "trust"

EXAMPLES = (
    Example(
        {"target": "attention_softmax", "p": 0.21, "k": 10, "scope": {"method": "counters"}},
        fires=True,
        verdict="remeasure",
        figures={"p": 0.21},
    ),
    Example(
        {
            "target": "attention_softmax",
            "p": 0.21,
            "k": 10,
            "baseline_ms": 100,
            "scope": {"method": "counters"},
            "breakdown": [
                {"name": "attention_softmax", "ms": 21},
                {"name": "rest", "ms": 61},
                {"name": "H2D copy", "ms": 18, "kind": "copy"},
            ],
        },
        fires=True,
        decision="fund_if",
        figures={"timeline_ms": 100},
    ),
    Example({"p": 0.21, "k": 10, "scope": {"method": "timeline"}}, fires=False),
)


BACKED = (
    "Counters found {target}, and a whole-step timeline of {timeline_ms:ms}, copies and gaps included, backs its "
    "{p:pct} share."
)
BLIND = (
    "{p:the_share(target)} comes from counters, which never show copies or the gaps between kernels, so its "
    "denominator is not the step; take a whole-step timeline and re-run it."
)


def check(ctx: Context) -> Draft | None:
    """Remeasure a share read off counters unless a whole-step timeline backs it."""
    if ctx.proposal.scope.method != "counters":
        return None
    breakdown = ctx.proposal.breakdown or []
    base = ctx.proposal.baseline_ms
    shows_gaps = any(phase.kind in NON_KERNEL for phase in breakdown)
    whole = base is not None and abs(ctx.breakdown_ms - base) <= ctx.policy.breakdown_tolerance * base
    figures: dict[str, Figure] = {"p": ctx.p, "method": "counters"}
    words = {"target": ctx.target}
    if breakdown and (shows_gaps or whole):
        figures["timeline_ms"] = ctx.breakdown_ms
        return Draft(ID, "info", BACKED, figures, words)
    return Draft(ID, "remeasure", BLIND, figures, words)
