"""non_kernel_time — the time no kernel speedup touches, and its fix.

What it checks: a breakdown whose copies, allocations, host gaps, input waits, CPU work and storage or network I/O
(other than the phases the proposal itself changes) hold at least the policy's `non_kernel_share` of the step.
Info: it names the fix for each kind present — CPU work and I/O get their own (more CPU workers or overlap; cached,
prefetched or asynchronous I/O), never a GPU one.

Why it matters: a counter profile describes what happens inside kernels; a copy is not a kernel, and host gaps are
the time between kernels. Every kernel can run at full speed while the GPU idles a quarter of the step. The fixes
differ by kind: overlap copies with compute (streams, pinned memory, double buffering) or keep the data resident;
graph capture or fusion for launch gaps; pooled allocations instead of allocating per call.

Example: an 18 ms H2D copy and 5 ms of host gaps are 23% of a 100 ms step: overlap or remove the copy, and capture
the step in a graph.
"""

from __future__ import annotations

from collections.abc import Sequence

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import NON_KERNEL
from worthit.rules.model import Figure, PhaseKind
from worthit.rules.wording import Draft, Template, clause

ID = "non_kernel_time"
STAGE = "alternative"

EXAMPLES = (
    Example(
        {
            "target": "attention_softmax",
            "p": 0.21,
            "k": 10,
            "baseline_ms": 100,
            "breakdown": [
                {"name": "gemm_qkv", "ms": 34},
                {"name": "attention_softmax", "ms": 21},
                {"name": "matmul_out", "ms": 12},
                {"name": "layernorm", "ms": 6},
                {"name": "elementwise_gelu", "ms": 4},
                {"name": "H2D copy", "ms": 18, "kind": "copy"},
                {"name": "host gaps", "ms": 5, "kind": "host"},
            ],
        },
        fires=True,
        decision="fund",
        figures={"non_kernel_share": 0.23, "copy_ms": 18, "host_ms": 5, "alloc_ms": 0},
    ),
    Example(
        {"p": 0.2, "k": 10, "breakdown": [{"name": "a", "ms": 90}, {"name": "c", "ms": 10, "kind": "copy"}]},
        fires=False,
    ),
    Example(
        {"p": 0.2, "k": 10, "breakdown": [{"name": "a", "ms": 90}, {"name": "c", "ms": 10, "kind": "copy"}]},
        fires=True,
        policy={"non_kernel_share": 0.1},
        figures={"non_kernel_ms": 10},
    ),
)

_FIX = {
    "copy": "overlap the {copy_ms:ms} of copies with compute (streams, pinned memory, double buffering) or keep data "
    "resident",
    "host": "graph-capture or fuse where the {host_ms:ms} of host time is launch gaps",
    "alloc": "pool the {alloc_ms:ms} of allocations",
    "input": "feed the GPU the {input_ms:ms} it waits on the input pipeline (loader workers, prefetch, pinned memory, "
    "GPU decode)",
    "cpu": "take the {cpu_ms:ms} of CPU work off the step's path (more CPU workers, overlap it with GPU work, a faster "
    "CPU implementation)",
    "io": "overlap or cache the {io_ms:ms} of storage and network I/O (asynchronous checkpoints, prefetched or cached "
    "reads)",
}

_SHORT = {
    "copy": "overlap or remove the {copy_ms:ms} of copies",
    "host": "graph-capture the {host_ms:ms} of launch gaps",
    "alloc": "pool the {alloc_ms:ms} of allocations",
    "input": "prefetch the {input_ms:ms} of input",
    "cpu": "move the {cpu_ms:ms} of CPU work off the step's path",
    "io": "overlap or cache the {io_ms:ms} of I/O",
}
"""Each fix in a few words, for a sentence with no room for the full one (whose figures keep it in full)."""

ELSEWHERE = (
    "Fund, but the bigger win is elsewhere: {non_kernel_share:pct} of the step ({non_kernel_ms:ms}) is not kernel "
    "time, against the {end_to_end_saving:pct} this saves, so "
)
UNTOUCHED = (
    "{non_kernel_share:pct} of the step ({non_kernel_ms:ms}) is not kernel time, which no kernel speedup touches: "
)


def check(ctx: Context) -> Draft | None:
    """Names the fix when copies, allocation and host gaps hold at least `non_kernel_share` of the step."""
    total = ctx.breakdown_total
    if not ctx.proposal.breakdown or not total or ctx.unit_slip is not None:
        return None
    by_kind = {kind: sum(p.ms for p in ctx.others if p.kind == kind) for kind in NON_KERNEL}
    non_kernel = sum(by_kind.values())
    share = non_kernel / total
    if share < ctx.policy.non_kernel_share or non_kernel <= 0:
        return None
    material = ctx.material_alternative
    conditional = ctx.worth.clears and material is not None and material.non_kernel
    if ctx.verdict_only and not conditional:
        return None  # it only informs
    figures: dict[str, Figure] = {
        "non_kernel_ms": non_kernel,
        "non_kernel_share": share,
        "non_kernel_threshold": ctx.policy.non_kernel_share,
    }
    figures |= {f"{kind}_ms": value for kind, value in by_kind.items()}
    present = sorted((kind for kind in NON_KERNEL if by_kind[kind] > 0), key=lambda kind: -by_kind[kind])
    figures |= {f"fix_{kind}": clause(_FIX[kind], figures) for kind in present}
    head = UNTOUCHED
    if conditional and material is not None:
        figures |= material.figures() | {"alternative_ratio": ctx.policy.alternative_ratio}
        figures["end_to_end_saving"] = ctx.run_saving
        head = ELSEWHERE
    first, *fallbacks = _with_fixes(head, present)
    if conditional:
        return Draft(ID, "condition", first, figures, fallbacks=tuple(fallbacks))
    return Draft(ID, "info", first, figures, fallbacks=tuple(fallbacks))


def _with_fixes(head: str, present: Sequence[PhaseKind]) -> list[Template]:
    """`head` and the fixes of the two largest kinds (every one is in the figures: three do not fit one sentence),
    each in full where the sentence has room, else in its short form: never a sentence cut inside a parenthesis."""
    full = [_FIX[kind] for kind in present[:2]]
    short = [_SHORT[kind] for kind in present[:2]]
    return [(head, "; ".join(fixes), ".") for fixes in (full, full[:1] + short[1:], short, short[:1])]
