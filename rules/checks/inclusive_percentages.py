"""inclusive_percentages — inclusive percentages overlap and do not sum to 100.

What it checks: `scope.method = inclusive_summary`, or `scope.inclusive` (set when `p` is read from a profile
whose percentages overlap, such as rocprofv3's summary PERCENT (INC) column). Remeasure. When the target is a
kernel of a summed kernel table (nsys cuda_gpu_kern_sum, rocprofv3 kernel_stats), the sentence says what is wrong
with that share instead: it is of summed kernel time, not of the step.

Why it matters: an inclusive percentage contains everything its call triggers: hipMemcpy's 62.6% contains the HSA
calls and the device copy beneath it. Such percentages say which operations dominate, not how the time divides;
read as a pie chart they double count. The arithmetic needs non-overlapping traces (kernel and copy traces).

Example: p = 0.626 read from the summary's PERCENT (INC): remeasure on the traces.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure
from worthit.rules.wording import Draft

ID = "inclusive_percentages"
STAGE = "trust"

EXAMPLES = (
    Example(
        {"target": "hipMemcpy", "p": 0.626, "k": 2, "scope": {"method": "inclusive_summary"}},
        fires=True,
        verdict="remeasure",
        figures={"p": 0.626},
    ),
    Example({"target": "hipMemcpy", "p": 0.626, "k": 2, "scope": {"inclusive": True}}, fires=True, verdict="remeasure"),
    Example({"p": 0.626, "k": 2, "scope": {"method": "timeline"}}, fires=False),
)


SUMMED = (
    "{p:the_share(target)} is of summed kernel time in a summary table, not of the step: it leaves out idle time, "
    "copies and host gaps, and concurrent streams count twice; re-run the arithmetic on a timeline of the whole step "
    "(a kernel trace with its copies)."
)
OVERLAPPING = (
    "{p:the_share(target)} is an inclusive percentage, which overlaps others and does not sum to 100 with them; "
    "re-run the arithmetic on non-overlapping kernel and copy traces."
)


def check(ctx: Context) -> Draft | None:
    """Remeasure a share read off inclusive (overlapping) percentages."""
    scope = ctx.proposal.scope
    if scope.method != "inclusive_summary" and not scope.inclusive:
        return None
    figures: dict[str, Figure] = {"p": ctx.p, "inclusive": True}
    if ctx.proposal.breakdown and ctx.breakdown_total:
        figures["breakdown_share_sum"] = ctx.breakdown_ms / ctx.breakdown_total
    target = ctx.target_phase
    # A kernel summary (nsys cuda_gpu_kern_sum, rocprofv3 kernel_stats): kernels do not nest, but the percentage is
    # of summed kernel time, whose denominator is not the step.
    summed = target is not None and target.kind in ("kernel", "comm")
    return Draft(ID, "remeasure", SUMMED if summed else OVERLAPPING, figures, {"target": ctx.target})
