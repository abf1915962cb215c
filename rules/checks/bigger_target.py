"""bigger_target — rank targets by p first.

What it checks: a breakdown is given, the change speeds its target up (k > 1: a slower kernel's value is elsewhere,
in memory, and offers no k to another phase), and another phase that a speedup applies to (not copies, host,
allocation or input-pipeline time, which `non_kernel_time` names with their own fixes) is larger than the target. It
reports what the same k on the largest such phase would give (for communication, what hiding it behind compute would
give: NCCL is overlapped, not tuned). The proposal's k is offered there only when that phase is of the kind the
change acts on (a kernel speedup on another kernel); a launch-gap fix, a copy removed (k = ∞) or a CPU change says
nothing of a kernel phase, which is then named with its own fix and the most it holds. Info; a redirect when the
target itself is under the noise floor, to the decision's alternative: that phase, or what is larger still (the
copies and allocations together, the wait inside a collective), with that phase named before it.

Why it matters: a mediocre speedup on the dominant phase beats a heroic one on a small phase; this is the single
most valuable habit Amdahl's law gives. The cheaper, smaller project is not the better one by default.

Example: layernorm (6 ms of 100) at 10× gives 1.057×; gemm_qkv (34 ms) at the same 10× gives 69.4 ms, 1.441×.
"""

from __future__ import annotations

import math
import re

from worthit.rules import amdahl
from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import NON_KERNEL, condition, is_productive, opposition
from worthit.rules.model import Figure, Finding, is_aggregate
from worthit.rules.text import label, ms, pct, times

ID = "bigger_target"
STAGE = "alternative"

_SEED = [
    {"name": "gemm_qkv", "ms": 34},
    {"name": "attention_softmax", "ms": 21},
    {"name": "matmul_out", "ms": 12},
    {"name": "layernorm", "ms": 6},
    {"name": "elementwise_gelu", "ms": 4},
    {"name": "H2D copy", "ms": 18, "kind": "copy"},
    {"name": "host gaps", "ms": 5, "kind": "host"},
]

EXAMPLES = (
    Example(
        {"target": "layernorm", "p": 0.06, "k": 10, "baseline_ms": 100, "breakdown": _SEED},
        fires=True,
        verdict="fund_if",
        figures={"largest_share": 0.34, "largest_new_ms": 69.4, "largest_speedup": 1.4409222},
    ),
    Example(
        {
            "target": "tiny",
            "p": 0.004,
            "k": 10,
            "breakdown": [{"name": "tiny", "ms": 0.4}, {"name": "gemm", "ms": 99.6}],
        },
        fires=True,
        verdict="redirect",
        figures={"largest_share": 0.996},
    ),
    Example(
        {
            "target": "bias_add",
            "p": 0.005,
            "k": 4,
            "baseline_ms": 200,
            "breakdown": [
                {"name": "H2D copy", "ms": 110, "kind": "copy"},
                {"name": "hipMalloc", "ms": 50, "kind": "alloc"},
                {"name": "gemm", "ms": 30},
                {"name": "bias_add", "ms": 1},
                {"name": "softmax", "ms": 9},
            ],
        },
        fires=True,
        verdict="redirect",
        figures={"largest_share": 0.15, "alternative_share": 0.8, "alternative_ms": 160},
    ),
    Example({"target": "gemm_qkv", "p": 0.34, "k": 10, "baseline_ms": 100, "breakdown": _SEED}, fires=False),
    Example({"target": "layernorm", "p": 0.06, "k": 10}, fires=False),
)


_LIBRARY = re.compile(r"cublas|cutlass|hipblas|rocblas|cijk_|xmma|nvjet|\bsm\d{2}_|ampere_|hopper_", re.IGNORECASE)
"""Kernel names of vendor GEMM libraries (cuBLAS, CUTLASS, hipBLASLt, rocBLAS's Tensile `Cijk_`)."""

_DOES = {
    "kernel": "kernel speedup",
    "copy": "change to copies",
    "alloc": "change to allocation",
    "host": "launch or host-time fix",
    "input": "input-pipeline fix",
    "cpu": "CPU-side change",
    "io": "I/O change",
    "other": "change to this phase",
    "comm": "communication change",
}
_OWN_FIX = {
    "kernel": "tuning or fusing its kernels",
    "other": "a profile of what it is",
}


def check(ctx: Context) -> Finding | None:
    """Reports the largest phase when it is larger than the target; redirects when the target is under the floor."""
    if ctx.unit_slip is not None:
        return None  # shares of a breakdown in another unit than its step mean nothing
    if ctx.k <= 1:
        return None  # a change that speeds nothing up (its value is elsewhere: memory) has no k to offer a phase
    largest = max(
        (p for p in ctx.others if p.kind not in NON_KERNEL and not is_aggregate(p.name) and not is_productive(p.name)),
        key=lambda phase: phase.ms,
        default=None,
    )
    if largest is None or not ctx.breakdown_total or ctx.share(largest) <= ctx.target_share:
        return None
    share = ctx.share(largest)
    name = label(largest.name)
    floor = ctx.policy.noise_floor
    material = ctx.material_alternative
    # fund on the condition of ranking first, redirect from a target under the floor, or only inform
    conditional = ctx.worth.clears and material is not None and not material.non_kernel and material.label == name
    redirect = not conditional and ctx.target_share < floor and not ctx.worth.clears
    if ctx.verdict_only and not (conditional or redirect):
        return None  # it only informs
    # Communication is not made faster by kernel tuning but hidden behind compute: its lever is the overlap, at
    # most all of it.
    comm = largest.kind == "comm"
    target_kind = ctx.target_phase.kind if ctx.target_phase is not None else "kernel"
    # A k is a property of what the change does: it carries over only to a phase of the same kind.
    same_kind = largest.kind == target_kind
    # A vendor library's GEMM is already tuned near its peak: another kernel's k says nothing of what it can reach.
    library = largest.kind == "kernel" and bool(_LIBRARY.search(largest.name)) and not _LIBRARY.search(ctx.target)
    same_kind = same_kind and not library
    k = math.inf if comm or not same_kind else ctx.k
    speedup = amdahl.speedup(share, k)
    new_ms = ctx.breakdown_total * (1 - amdahl.saving_fraction(share, k))
    figures: dict[str, Figure] = {
        "largest": largest.name,
        "largest_share": share,
        "largest_speedup": speedup,
        "largest_new_ms": new_ms,
        "target_share": ctx.target_share,
        "target_speedup": amdahl.speedup(ctx.target_share, ctx.k),
        "alternative": name,
        "alternative_share": share,
        "alternative_ms": largest.ms,
    }
    if comm:
        same = (
            f"hiding it behind compute (overlap, fewer or larger messages) gives up to {times(speedup)} ({ms(new_ms)})"
        )
    elif library:
        figures["largest_kind"] = "library"
        same = (
            f"a vendor library's GEMMs are near their peak already, so {ctx.target}'s {times(ctx.k)} says nothing of "
            f"them (fewer, larger or fused GEMMs, at most {ms(largest.ms)})"
        )
    elif not same_kind:
        figures["largest_kind"] = largest.kind
        same = (
            f"a {_DOES[target_kind]} does not act on it, which needs work of its own "
            f"({_OWN_FIX.get(largest.kind, 'its own fix')}, at most {ms(largest.ms)})"
        )
    else:
        how = "removing it" if math.isinf(ctx.k) else f"the same {times(ctx.k)} there"
        same = f"{how} gives {times(speedup)} ({ms(new_ms)})"
    mine = times(amdahl.speedup(ctx.target_share, ctx.k))
    against = (
        f" against {mine} for {ctx.target} at {pct(ctx.target_share)}"
        if (same_kind or comm) and not library
        else f", while {ctx.target} at {pct(ctx.target_share)} gives {mine}"
    )
    if conditional:
        return condition(
            ID,
            figures | {"alternative_ratio": ctx.policy.alternative_ratio},
            (
                f"Fund, though {name} at {pct(share)} of the step is the larger target: {same}{against}, so rank "
                f"targets by share first"
            ),
        )
    if redirect:
        alternative = ctx.alternative
        if alternative is not None and alternative.label != name:
            # Something larger than any phase a speedup acts on (the copies and allocations together, the wait inside
            # a collective) is the decision's alternative: name it, as the statement does, with this phase beside it.
            head = (
                f"{ctx.target} is {pct(ctx.target_share)} of the step, under the {pct(floor)} noise floor, so rank "
                f"targets by share first: {name} at {pct(share)} comes before it"
            )
            return opposition(ctx, ID, head, figures)
        return Finding(
            rule=ID,
            effect="opposes",
            verdict="redirect",
            figures=figures,
            message=(
                f"{ctx.target} is {pct(ctx.target_share)} of the step, under the {pct(floor)} noise floor, "
                f"while {name} is {pct(share)} and {same}, so rank targets by share first."
            ),
        )
    return Finding(
        rule=ID,
        effect="info",
        figures=figures,
        message=(
            f"{name} is {pct(share)} of the step against {pct(ctx.target_share)} for {ctx.target}, and {same}"
            + (f" instead of {mine}" if (same_kind or comm) and not library else "")
            + ": rank targets by share first."
        ),
    )
