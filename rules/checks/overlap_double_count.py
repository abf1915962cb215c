"""overlap_double_count — summed parts double count overlapped work.

What it checks: a breakdown of the measured scope whose parts add up to more than its wall time (`baseline_ms`)
by more than the policy's `breakdown_tolerance`, or `scope.overlap` (copies run while kernels compute). Remeasure.
With `scope.profiler_overhead` (a heavy profiler's own time in host gaps, the step timed without it) the excess is
said to be that overhead, not overlapped work.
A sum about a unit off the step (`unit_slip_ratio`, seconds written as ms) is not overlap and is not called so.

Why it matters: when the next batch's data is fetched while the current computation runs, adding compute time and
copy time counts the overlapped time twice, and every share computed from that sum is too small or too large. The
reference is the time from the start of the step until all its work has completed.

Example: 70 ms of kernels and 45 ms of copies in a 100 ms step: 15 ms counted twice; remeasure.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure, Finding
from worthit.rules.text import a, ms, pct

ID = "overlap_double_count"
STAGE = "trust"

EXAMPLES = (
    Example(
        {
            "target": "gemm",
            "p": 0.7,
            "k": 2,
            "baseline_ms": 100,
            "breakdown": [{"name": "gemm", "ms": 70}, {"name": "copy", "ms": 45, "kind": "copy"}],
        },
        fires=True,
        verdict="remeasure",
        figures={"breakdown_ms": 115, "double_counted_ms": 15},
    ),
    Example({"target": "gemm", "p": 0.7, "k": 2, "scope": {"overlap": True}}, fires=True, verdict="remeasure"),
    Example(
        {
            "target": "gemm",
            "p": 0.7,
            "k": 2,
            "baseline_ms": 100,
            "breakdown": [{"name": "gemm", "ms": 70}, {"name": "copy", "ms": 30.5, "kind": "copy"}],
        },
        fires=False,
    ),
)


def check(ctx: Context) -> Finding | None:
    """Remeasure when the parts of the breakdown exceed the wall time, or the scope says work overlaps."""
    wall = ctx.proposal.baseline_ms if ctx.proposal.breakdown_scope == "measured" else None
    parts = ctx.breakdown_ms
    # A breakdown a unit off its step (`ctx.unit_slip`: about 1,000×) is not overlap: no part is counted twice.
    over = (
        bool(ctx.proposal.breakdown)
        and wall is not None
        and parts > wall * (1 + ctx.policy.breakdown_tolerance)
        and ctx.unit_slip is None
    )
    if not over and not ctx.proposal.scope.overlap:
        return None
    figures: dict[str, Figure] = {"p": ctx.p, "overlap": ctx.proposal.scope.overlap}
    if over and wall is not None and ctx.proposal.scope.profiler_overhead:
        # nothing overlaps: the profiler's own time is in the parts (host gaps), and not in the step timed without it
        figures |= {"breakdown_ms": parts, "wall_ms": wall, "overhead_ms": parts - wall}
        host = sum(phase.ms for phase in ctx.proposal.breakdown or () if phase.kind == "host")
        where = f", most of it in the {ms(host)} of host gaps" if host >= (parts - wall) / 2 else ""
        message = (
            f"The parts add up to {ms(parts)} in {a(ms(wall))} step: {ms(parts - wall)} is the profiler's own "
            f"overhead{where}, not work; re-record with a lighter profiler (no stacks or shapes) and re-run the shares."
        )
    elif over and wall is not None:
        figures |= {"breakdown_ms": parts, "wall_ms": wall, "double_counted_ms": parts - wall}
        message = (
            f"The parts add up to {ms(parts)} in {a(ms(wall))} step, so {ms(parts - wall)} of overlapped work "
            f"is counted twice; re-run the shares on the step's start-to-completion time."
        )
    else:
        message = (
            f"Work overlaps in this step, so the {pct(ctx.p)} share of {ctx.target} from summed parts double "
            f"counts; measure from the step's start to the completion of all its work and re-run it."
        )
    return Finding(rule=ID, effect="remeasure", verdict="remeasure", figures=figures, message=message)
