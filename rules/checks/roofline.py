"""roofline — a kernel already near its roofline cannot go much faster at the same bytes or FLOPs.

What it checks: `flags.roofline_fraction`, the target's achieved fraction of its bound (of peak HBM bandwidth for a
memory-bound kernel, of peak FLOPs for a compute-bound one). At the same work the target goes at most 1 ÷ that
faster, so a `k` above it is named, and every figure of the decision is computed at the ceiling (rules.context caps
k there): fund only at the ceiling, on the condition that what is funded is that, unless the change moves fewer bytes
or does fewer FLOPs (then state the k that follows from the work it removes).

Why it matters: "3× on a fused layernorm" that already moves 80% of peak HBM bandwidth is physics, not ambition:
1.25× is the most the same bytes allow, and a plan, a fleet's dollars and a schedule built on 3× are built on a
number no kernel can reach. A reviewer's first question is how far the kernel is from its roofline.

Example: layernorm at 80% of peak HBM bandwidth, 3× claimed: at most 1.25×, and the decision is made at 1.25×.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import condition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import pct, times

ID = "roofline"
STAGE = "trust"

_LN = {"target": "fused_layernorm", "p": 0.3, "k": 3, "baseline_ms": 40, "cost_weeks": 2}

EXAMPLES = (
    Example(
        _LN | {"flags": {"roofline_fraction": 0.8, "roofline_bound": "memory"}},
        fires=True,
        verdict="fund_if",
        figures={"claimed_k": 3, "roofline_k": 1.25},
    ),
    Example(_LN | {"k": 1.2, "flags": {"roofline_fraction": 0.8}}, fires=False),
    Example(_LN, fires=False),
)

_BOUND = {"memory": "peak memory bandwidth", "compute": "peak compute", None: "its roofline"}


def check(ctx: Context) -> Finding | None:
    """Names a k above the target's roofline; the decision is made at the ceiling."""
    claimed = ctx.claimed_k
    flags = ctx.proposal.flags
    fraction = flags.roofline_fraction
    if claimed is None or fraction is None:
        return None
    ceiling = 1.0 / fraction
    figures: dict[str, Figure] = {
        "claimed_k": claimed,
        "roofline_k": ceiling,
        "roofline_fraction": fraction,
        "saving_at_ceiling": ctx.run_saving,
    }
    bound = _BOUND[flags.roofline_bound]
    work, go, less = {
        "memory": ("bytes", "go", "moves fewer bytes"),
        "compute": ("FLOPs", "go", "does fewer FLOPs"),
    }.get(flags.roofline_bound or "", ("work", "goes", "does less work"))
    at = f"at {pct(fraction)} of {bound}" if flags.roofline_bound else f"at {pct(fraction)} of its roofline"
    claim = "removing it" if claimed == float("inf") else f"the {times(claimed)} claimed"
    if ceiling <= 1.0:  # at its roofline already: there is no faster to fund
        message = (
            f"{ctx.target} already runs {at}, so the same {work} cannot go any faster and {claim} saves nothing; "
            f"more needs a change that {less}."
        )
    else:
        message = (
            f"Fund only the {times(ceiling)} its roofline allows, not {claim}: {ctx.target} already runs {at}, so the "
            f"same {work} {go} at most {times(ceiling)} faster, saving {pct(ctx.run_saving)}; more needs a change "
            f"that {less}."
        )
    return condition(ID, figures, message[0].upper() + message[1:])
