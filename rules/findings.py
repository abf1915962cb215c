"""What checks build findings from: where the effort belongs instead (`Alternative`), the kinds of time no kernel
speedup touches, and the finding builders (`opposition`, `condition`, `carried`) with their shared clauses."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from worthit.rules.model import Figure, Finding, PhaseKind, Stage
from worthit.rules.text import break_even_weeks, label, ms, pct, usd
from worthit.rules.worth import Money, pays_for_weeks

if TYPE_CHECKING:
    from worthit.rules.context import Context

__all__ = [
    "KIND_FIX",
    "KIND_LABEL",
    "NON_KERNEL",
    "Alternative",
    "alternative_of",
    "carried",
    "condition",
    "cost_kind",
    "engineering",
    "is_productive",
    "kinds_fix",
    "kinds_label",
    "material_alternative_of",
    "opposition",
]


NON_KERNEL: tuple[PhaseKind, ...] = ("alloc", "copy", "host", "input", "cpu", "io")
KIND_LABEL: dict[str, str] = {
    "alloc": "allocation",
    "copy": "host↔device copy",
    "host": "host time",
    "input": "input-pipeline wait",
    "cpu": "CPU work",
    "io": "storage and network I/O",
}
KIND_FIX: dict[str, str] = {
    "alloc": "pool allocations",
    "copy": "keep data resident or overlap copies with compute",
    "host": "capture the step in a graph",
    "input": "prefetch input with more loader workers",
    "cpu": "take the CPU work off the step's path (more CPU workers, overlap with the GPU)",
    "io": "overlap or cache the I/O (asynchronous checkpoints, prefetched reads)",
}
"""The fix for each kind of time no kernel speedup touches, short enough to list in a sentence."""


_PRODUCTIVE = re.compile(
    r"\b(?:productive|goodput|useful work|forward[ _]?(?:and[ _]?)?backward|fwd[ _]?bwd|train(?:ing)?[ _]?step)\b",
    re.IGNORECASE,
)


def is_productive(name: str) -> bool:
    """A phase that is the productive work itself (`productive training` in a goodput breakdown, a whole
    `forward_backward` pass): what the other phases are overhead on, many kernels under one name, never an
    alternative one change could shorten instead of them."""
    return bool(_PRODUCTIVE.search(name))


def kinds_fix(kinds: Sequence[str]) -> str:
    """`capture the step in a graph, pool allocations`: the fixes of the non-kernel kinds present, in a fixed order."""
    return ", ".join(KIND_FIX[kind] for kind in NON_KERNEL if kind in kinds)


@dataclass(frozen=True, slots=True)
class Alternative:
    """Where the effort belongs instead: the largest other phase, or the non-kernel time taken together."""

    label: str
    share: float
    ms: float
    grouped: bool
    """True when the alternative is the allocation, copy and host-gap phases together (one fix family)."""
    kinds: tuple[str, ...] = ("kernel",)
    """The kinds of phase it is made of: a kernel phase has other fixes than copies or a stalled input pipeline."""
    fix: str | None = None
    """Its own fix, said after it (the ranks' wait inside a collective: balance the load)."""

    @property
    def non_kernel(self) -> bool:
        return all(kind in NON_KERNEL for kind in self.kinds)

    def phrase(self) -> str:
        """The alternative as a reviewer names it: `gemm_qkv at 34% (34 ms)` or `the 84.6% that is allocation…`."""
        fix = f" ({self.fix})" if self.fix else ""
        if self.grouped:
            return f"the {pct(self.share)} that is {self.label}{fix}"
        return f"{self.label} at {pct(self.share)} ({ms(self.ms)}){fix}"

    def figures(self) -> dict[str, Figure]:
        return {"alternative": self.label, "alternative_share": self.share, "alternative_ms": self.ms}


def opposition(
    ctx: Context,
    rule: str,
    head: str,
    figures: dict[str, Figure],
    *,
    then: str = "is where the effort belongs",
    alone: str | None = None,
) -> Finding:
    """A finding against the proposal: a redirect naming where the effort belongs when the breakdown knows (the
    statement ends `…; <alternative> <then>.`), else a plain decline (`alone`, or `head` as a sentence)."""
    alternative = ctx.alternative
    if alternative is None:
        return Finding(rule=rule, effect="opposes", verdict="decline", figures=figures, message=alone or f"{head}.")
    figures |= alternative.figures()
    return Finding(
        rule=rule,
        effect="opposes",
        verdict="redirect",
        figures=figures,
        message=f"{head}; {alternative.phrase()} {then}.",
    )


def condition(rule: str, figures: dict[str, Figure], message: str, *, stage: Stage | None = None) -> Finding:
    """A finding that funds on a condition (`fund_if`); `stage` when it answers another stage than its rule's."""
    return Finding(rule=rule, effect="condition", verdict="fund_if", stage=stage, figures=figures, message=message)


def carried(ctx: Context, rule: str, figures: dict[str, Figure], message: str) -> Finding:
    """A per-run objection that the value of the work answers (a fleet, a credible strategic workload, a kernel that
    is the product): info, with `overridden_by` naming the rule whose figure carries it."""
    return Finding(rule=rule, effect="info", figures=figures, overridden_by=ctx.worth.carried_by, message=message)


def engineering(ctx: Context, money: Money, figures: dict[str, Figure]) -> str:
    """What the value of the work is weighed against, as a clause: `against $15k of engineering`, `at no engineering
    cost`, or, with no cost stated, the most engineering the value pays for (`for an unstated cost; it pays for up
    to 262.8 engineer-weeks`, also put in `figures` as `pays_for_weeks`; with p or k a range, no figure: the one that
    holds over the range is unstated_cost's), never a cost of $0 nobody stated."""
    if ctx.worth.cost.weeks is None and ctx.range_ends is not None:
        # a range's value here is its midpoint's: the break-even that holds over the range is unstated_cost's, at its
        # low end, and one decision never states two ("up to 90.1" beside "under 52.5" engineer-weeks)
        return "for an unstated cost"
    if ctx.worth.cost.weeks is None:
        most = pays_for_weeks(money, ctx.worth.cost, ctx.policy)
        if most is None:
            return "for an unstated cost, which the policy prices at nothing"
        figures["pays_for_weeks"] = most
        return f"for an unstated cost; it pays for up to {break_even_weeks(most)}"
    if money.cost_usd <= 0:
        return "at no engineering cost"
    return f"against {usd(money.cost_usd)} of {cost_kind(ctx)}"


def cost_kind(ctx: Context) -> str:
    """What the one cost is made of, as `$X of …` says it: `engineering`, or `engineering and compute` when the work
    spends GPU-hours once (rules.worth: `Cost.usd` counts both)."""
    return "engineering and compute" if ctx.worth.cost.gpu_usd > 0 else "engineering"


def kinds_label(kinds: Sequence[str]) -> str:
    """`allocation and host↔device copy`: the non-kernel kinds present, in a fixed order."""
    words = [KIND_LABEL[kind] for kind in NON_KERNEL if kind in kinds]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def alternative_of(ctx: Context) -> Alternative | None:
    """The largest thing bigger than the target and above the noise floor: one phase, or the non-kernel
    phases together (the seed's "the 85% that is allocation and host↔device copy")."""
    floor, target = ctx.policy.noise_floor, ctx.target_share
    best: Alternative | None = None
    if ctx.unit_slip is not None:
        return None  # shares of a breakdown in another unit than its step are no shares at all
    if ctx.step_unseen:
        return _setter_compute(ctx)
    wait = ctx.collective_wait
    if wait > 0 and wait >= floor and wait > ctx.p - ctx.wait_share:
        # The wait inside the collective this proposal works on: when it dwarfs what the change saves it is the
        # alternative named, before any other phase (it is this effort's better use, on the same collective).
        base = ctx.baseline_ms
        best = Alternative(
            f"waiting for the slowest rank inside {ctx.target}",
            wait,
            wait * base if base is not None else 0.0,
            grouped=True,
            kinds=("wait",),
            fix="balance the load across ranks",
        )
        if wait >= ctx.policy.alternative_ratio * max(ctx.run_saving, 0.0):
            return best
    barrier = ctx.proposal.flags.barrier
    stall = barrier.wait_fraction if barrier is not None else None
    if stall is not None and stall >= floor and stall > target and (best is None or stall > best.share):
        # the ranks wait this share of the step for the slowest at the barrier: load balancing (or the straggler) is
        # a change of its own, and often the larger one
        base = ctx.baseline_ms
        best = Alternative(
            "the ranks' wait for the slowest at the barrier",
            stall,
            stall * base if base is not None else 0.0,
            grouped=True,
            kinds=("wait",),
            fix="balance the load across ranks or fix the straggler",
        )
    phase = ctx.largest_other
    if phase is not None:
        share = ctx.share(phase)
        if share > target and share >= floor and (best is None or share > best.share):
            best = Alternative(label(phase.name), share, phase.ms, grouped=False, kinds=(phase.kind,))
    group = [phase for phase in ctx.others if phase.kind in NON_KERNEL]
    if len(group) >= 2:
        total = sum(phase.ms for phase in group)
        share = total / ctx.breakdown_total if ctx.breakdown_total else 0.0
        if share > target and share >= floor and (best is None or share > best.share):
            kinds = tuple(kind for kind in NON_KERNEL if any(p.kind == kind for p in group))
            best = Alternative(kinds_label(list(kinds)), share, total, grouped=True, kinds=kinds)
    return best


def _setter_compute(ctx: Context) -> Alternative | None:
    """Behind a barrier the step does not see the target: the compute of the rank that sets the step is where the
    time is, not another phase of the breakdown (the target's rank's, which waits as well). None when the ranks'
    arrivals are not measured."""
    step, barrier = ctx.barrier_step, ctx.proposal.flags.barrier
    if step is None or barrier is None or step.setter is None or step.after_ms is None or not barrier.step_ms:
        return None
    return Alternative(f"rank {step.setter}'s compute", step.after_ms / barrier.step_ms, step.after_ms, grouped=False)


def material_alternative_of(ctx: Context) -> Alternative | None:
    """The alternative when it could win materially more than this proposal: its whole time at least
    `alternative_ratio` times the proposal's own end-to-end saving, or the capacity a memory fix frees (stage 4
    names it even when the proposal passes)."""
    alternative = ctx.alternative
    if alternative is None:
        return None
    # what the work is worth, as a share: the run's saving, or for a memory fix the capacity it frees (a phase
    # larger than a 4% slower step is not "materially more" than the 48% of the GPUs an FP8 KV cache frees)
    capacity = ctx.worth.capacity_saving
    value = capacity if capacity is not None else ctx.run_saving
    if alternative.share < ctx.policy.alternative_ratio * max(value, 0.0):
        return None
    return alternative
