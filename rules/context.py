"""What a check reads and the helpers checks share: the `Context` of one proposal under one policy, a rule's
`Example`, `opposition` (a finding naming where the effort belongs) and the `lazy` figures.

Checks import this module, never `rules.engine`: the engine imports the checks' registry, so the dependency points
one way (engine → checks → context).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from worthit.rules import amdahl
from worthit.rules.calibration import Calibration
from worthit.rules.errors import InvalidInput
from worthit.rules.model import (
    AmdahlFigures,
    Arrival,
    Figure,
    Finding,
    Phase,
    PhaseKind,
    Proposal,
    Range,
    Stage,
    Verdict,
    is_aggregate,
)
from worthit.rules.policy import Policy
from worthit.rules.profiles.naming import kernel_kind
from worthit.rules.text import break_even_weeks, label, ms, pct, share_bounds, significant_bounds, usd
from worthit.rules.worth import Money, Worth, pays_for_weeks, worth_of

__all__ = [
    "KIND_FIX",
    "KIND_LABEL",
    "NON_KERNEL",
    "PASSING",
    "POINT_FREE",
    "REST_OF_TRAFFIC",
    "SCOPE_NOUN",
    "SMALLEST_P",
    "UNSEEN",
    "Alternative",
    "BarrierStep",
    "Check",
    "Context",
    "Example",
    "MixPart",
    "Probe",
    "arrivals_step",
    "break_even",
    "break_even_below",
    "carried",
    "condition",
    "context",
    "derived_k",
    "effective_k",
    "engineering",
    "kinds_fix",
    "kinds_label",
    "lazy",
    "opposition",
    "said_k",
    "said_share",
]

T = TypeVar("T")

SCOPE_NOUN: dict[str, str] = {
    "step": "the step",
    "device_activity": "device activity",
    "end_to_end": "the run",
    "rank": "the rank's step",
}


@dataclass(frozen=True, slots=True)
class Example:
    """A rule's own example (Fixit's VALID/INVALID): a proposal, whether the rule fires, and what it argues.

    The examples run the rule alone (`rules.engine.check_alone`): `verdict` is the verdict the rule itself argues
    (None when it only informs), so reversing the rule fails its own example whatever the other rules say.
    `decision` is the whole engine's verdict on the same proposal, tested apart, where the example shows it.
    """

    proposal: dict[str, Any]
    fires: bool
    verdict: Verdict | None = None
    decision: Verdict | None = None
    figures: dict[str, float] = field(default_factory=dict)
    """Figures the finding must carry, compared with a relative tolerance of 1e-3."""
    policy: dict[str, Any] = field(default_factory=dict)
    """Overrides of the default policy for this example."""
    calibration: dict[str, Any] = field(default_factory=dict)
    """The team's calibration the service hands the engine (rules.calibration.Calibration), if any."""


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
    return f"against {usd(money.cost_usd)} of engineering"


def kinds_label(kinds: Sequence[str]) -> str:
    """`allocation and host↔device copy`: the non-kernel kinds present, in a fixed order."""
    words = [KIND_LABEL[kind] for kind in NON_KERNEL if kind in kinds]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


class lazy(Generic[T]):  # noqa: N801 - used like the decorator it replaces
    """`functools.cached_property` without its lock.

    Python 3.11's `cached_property` takes an `RLock` on each instance's first read (later reads never reach the
    descriptor: the value in `__dict__` shadows it, as here). Every proposal gets a new `Context`, so every figure
    is a first read: measured on 3.11.7, a first read costs about 780 ns through `cached_property` and 320 ns
    through this descriptor; later reads are the same 45 ns plain attribute lookups for both.
    """

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> lazy[T]: ...
    @overload
    def __get__(self, instance: object, owner: type) -> T: ...
    def __get__(self, instance: object | None, owner: type) -> T | lazy[T]:
        if instance is None:
            return self
        value = self.func(instance)
        instance.__dict__[self.name] = value  # bypasses the frozen dataclass's __setattr__ on purpose
        return value


@dataclass(frozen=True)
class Context:
    """What a check reads: the proposal, the policy, and the figures derived once for all checks."""

    proposal: Proposal
    policy: Policy
    p: float
    k: float
    probe: Probe | None = None
    """The pure verdict function at another point, `probe(proposal, p, k)`, handed in by the engine for the checks
    that search for a break-even value (estimate); None where a check must not recurse (inside a probe). A check
    that does not call it answers as it would with None: the engine then takes the findings for the pure verdict
    function's at this point (a range's midpoint is not evaluated twice)."""
    calibration: Calibration | None = None
    """The team's calibration when the policy applies one: `proposal.k` is then the calibrated k."""
    proposed: Proposal | None = None
    """The proposal as proposed, when calibration changed its k."""

    stated_k: float | None = None
    """The proposal's own `k` when `added_work` derives `k` from it (`derived_k`); None when `k` is as stated."""
    verdict_only: bool = False
    """Only the verdict is asked (`rules.engine.verdict_at`: a range's corners, bisection, every probe): a check may
    then answer None where it would write a finding that argues `fund` or nothing, the lowest rank, which cannot
    change which verdict wins. The sentence is most of what a check costs, and nobody reads it here. A property test
    holds the verdict function equal to the whole engine's verdict (tests/property/test_verdict_function.py)."""

    @property
    def given_k(self) -> float:
        """The k the proposal states, before added work is counted: what a probe is handed back (it derives again)."""
        return self.k if self.stated_k is None else self.stated_k

    @lazy
    def amdahl(self) -> AmdahlFigures:
        """The figures of the change as one (p, k): the target's (p, k) unless it acts on more (see `acted`). The
        return per engineer-week counts upkeep, as the cost stage does: one cost for every figure (rules.worth)."""
        p, k = self.acted
        return amdahl.figures(p, k, baseline_ms=self.baseline_ms, cost_weeks=self.worth.cost.weeks)

    @lazy
    def range_ends(self) -> tuple[AmdahlFigures, AmdahlFigures] | None:
        """With p or k given as a range, the figures at its low end (low p, low k) and its high end (every figure of
        PRODUCT §2 is monotonic in each): what a statement quotes, never the midpoint. None for single values."""
        proposal, box = self.proposal, self.box
        if box is None:
            return None
        (p_low, p_high), (k_low, k_high) = box
        corners = self.corners
        if self.behind_barrier and corners is not None:
            # the step's saving behind a barrier is not p · (1 − 1/k): each end's figures are its own context's
            return corners[(p_low, k_low)].amdahl, corners[(p_high, k_high)].amdahl
        base, weeks = self.baseline_ms, self.worth.cost.weeks
        return (
            amdahl.figures(p_low, derived_k(proposal, p_low, k_low, base), baseline_ms=base, cost_weeks=weeks),
            amdahl.figures(p_high, derived_k(proposal, p_high, k_high, base), baseline_ms=base, cost_weeks=weeks),
        )

    @lazy
    def box(self) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """With p or k a range, its box as the proposal states it: (p_low, p_high) and (k_low, k_high), a single
        value at both ends of its own (this context's p, the k given). None when neither is a range."""
        p, k = self.proposal.p, self.proposal.k
        if not isinstance(p, Range) and not isinstance(k, Range):
            return None
        return (
            (p.low, p.high) if isinstance(p, Range) else (self.p, self.p),
            (k.low, k.high) if isinstance(k, Range) else (self.given_k, self.given_k),
        )

    @lazy
    def corners(self) -> dict[tuple[float, float], Context] | None:
        """With p or k a range, the context at each corner of its box, keyed by (p, k) as the proposal states them
        (k derived again at each, as every figure there uses it): what a figure quoted across the range reads, never
        the midpoint's. Two corners when one input is a single value; None when neither is a range."""
        box = self.box
        if box is None:
            return None
        (p_low, p_high), (k_low, k_high) = box
        return {
            (p_at, k_at): context(self.proposal, self.policy, p_at, k_at, verdict_only=True, like=self)
            for p_at in dict.fromkeys((p_low, p_high))
            for k_at in dict.fromkeys((k_low, k_high))
        }

    @lazy
    def baseline_ms(self) -> float | None:
        """The measured scope's time: given, else the breakdown's sum when the breakdown divides that scope."""
        if self.proposal.baseline_ms is not None:
            return self.proposal.baseline_ms
        if self.proposal.breakdown_scope != "measured":
            return None
        total = self.breakdown_ms
        return total if total else None

    @lazy
    def breakdown_ms(self) -> float:
        return sum(phase.ms for phase in self.proposal.breakdown or ())

    @lazy
    def breakdown_total(self) -> float:
        """The time the breakdown's shares are taken of: `baseline_ms` for the measured scope, else the sum."""
        if self.proposal.breakdown_scope == "measured" and self.proposal.baseline_ms is not None:
            return self.proposal.baseline_ms
        return self.breakdown_ms

    @lazy
    def target(self) -> str:
        """The target as a sentence names it (read by most checks: labelled once)."""
        return label(self.proposal.target) if self.proposal.target else "the target"

    @lazy
    def target_phase(self) -> Phase | None:
        for phase in self.proposal.breakdown or ():
            if phase.name == self.proposal.target:
                return phase
        return None

    @lazy
    def target_is_comm(self) -> bool:
        """Whether the target is communication: a `comm` phase, or a kernel (stated so or by default) named as NCCL/RCCL
        kernels and collectives are."""
        kind = self.target_phase.kind if self.target_phase is not None else "kernel"
        return kind == "comm" or (kind == "kernel" and kernel_kind(self.proposal.target or "") == "comm")

    def share(self, phase: Phase) -> float:
        """A phase's share of the time the breakdown divides (see `breakdown_total`)."""
        total = self.breakdown_total
        return phase.ms / total if total else 0.0

    @lazy
    def p_run(self) -> float:
        """The target's share of the whole run: `p_end_to_end`, else read off a whole-run breakdown, else `p`."""
        if self.proposal.p_end_to_end is not None:
            return self.proposal.p_end_to_end
        if self.proposal.breakdown_scope == "end_to_end" and self.target_phase is not None and self.breakdown_ms:
            return self.target_phase.ms / self.breakdown_ms
        return self.p

    @lazy
    def run_saving(self) -> float:
        """Share of the whole run removed: what noise, rate of return and fleet economics are judged on.

        The change as one (p, k) (`acted`: several targets, a collective's transfer without its wait) on the run's
        scope; with a fleet or traffic mix, the sum over its parts, each at its own p and k (`mix`)."""
        if self.mix is not None:
            return math.fsum(part.weight * part.saving for part in self.mix)
        return self.acted_run_saving

    # --- #25 (currencies-b): what the change acts on, and on which parts of the fleet or its traffic ---------------

    @lazy
    def wait_share(self) -> float:
        """The share of the step a collective target spends waiting for the slowest rank (0 when not split)."""
        barrier = self.proposal.flags.barrier
        if barrier is None or barrier.target_wait is None:
            return 0.0
        return min(barrier.target_wait, self.p)

    @lazy
    def collective_wait(self) -> float:
        """The wait a collective target's effort could remove by balancing the load instead: its own (`wait_share`),
        or, measured across all ranks on the straggler (whose collective is all transfer), the share of every rank's
        step spent waiting for it (`wait_fraction`). 0 when neither is known."""
        if self.wait_share > 0:
            return self.wait_share
        barrier = self.proposal.flags.barrier
        if barrier is None or not self.target_is_comm or barrier.wait_fraction is None:
            return 0.0
        if barrier.step_ms is None or barrier.target_ms is None:
            return 0.0
        return barrier.wait_fraction

    @lazy
    def barrier_step(self) -> BarrierStep | None:
        """A compute target's saving when every rank waits at a barrier for the slowest: what the step itself loses,
        where that is not the target's own saving (None where it is: plain Amdahl holds).

        With `flags.barrier.arrivals` (each rank's compute before the collective and the target's time in it, read
        from all ranks' traces) the step after is set by the latest arrival after the change: the straggler's saving
        stops where the next-slowest rank's compute sets the step, and a target off the straggler saves nothing
        (its rank only waits longer) unless, slower, its rank becomes the straggler. Stated without them,
        `critical_path` false says the same for a faster target: the step saves nothing; a slower one is counted in
        full, the rank's slack being unknown. Collectives (their wait is `target_wait`'s), and phases other than
        compute kernels (a rank's arrival is its compute: rules.profiles' `barrier_of`), are left to plain Amdahl.
        """
        barrier = self.proposal.flags.barrier
        if barrier is None or not self.behind_barrier:
            return None
        more = self.more_targets  # shares of the same rank's step as p
        if barrier.arrivals and barrier.step_ms and barrier.target_ms:
            rank = barrier.rank if barrier.rank is not None else barrier.straggler
            return arrivals_step(barrier.arrivals, barrier.step_ms, barrier.target_ms, self.p, self.k, more, rank)
        if self.k > 1:
            # Stated off the critical path: the further targets, on the same waiting rank, are no more seen; a slower
            # one is counted in full, as a slower target is (the rank's slack is not stated).
            faster = math.fsum(amdahl.saving_fraction(p, k) for _, p, k in more if k > 1)
            loss = -math.fsum(amdahl.saving_fraction(p, k) for _, p, k in more if k < 1)
            slowed = math.fsum(p for _, p, k in more if k < 1)
            return BarrierStep(
                saving=-loss, ceiling=0.0, own_ms=None, more=bool(more), more_plain=faster, slowed=slowed
            )
        return None

    @lazy
    def more_unseen_worth(self) -> Worth | None:
        """Behind a barrier, the value of the work if the step saw on every rank what the further targets save on the
        one they are measured on (`BarrierStep.more_unseen`: their time on the other ranks is not measured, and the
        decision counts what it knows). None when the step sees all they save, or with a fleet or traffic mix."""
        step = self.barrier_step
        if step is None or step.more_unseen <= UNSEEN or self.mix is not None:
            return None
        return worth_of(self.proposal, self.policy, self.run_saving + self.on_run(step.more_unseen), self.k)

    @lazy
    def step_unseen(self) -> bool:
        """A faster compute target whose saving the step behind a barrier does not see at all: its rank (or every
        rank running it) waits for one that still arrives as late (`barrier_step`)."""
        step = self.barrier_step
        return step is not None and self.k > 1 and abs(step.saving) <= UNSEEN

    @lazy
    def behind_barrier(self) -> bool:
        """Whether the step's saving may not be the target's own at some (p, k): a compute target (not a collective,
        whose wait is `target_wait`'s) with each rank's arrival measured, or stated off the critical path."""
        barrier = self.proposal.flags.barrier
        kind = self.target_phase.kind if self.target_phase is not None else "kernel"
        if barrier is None or barrier.target_wait is not None or kind != "kernel" or self.target_is_comm:
            return False
        return bool(barrier.arrivals and barrier.step_ms and barrier.target_ms) or not barrier.critical_path

    @lazy
    def more_targets(self) -> list[tuple[str, float, float]]:
        """The further targets as (name, p, k): p as stated, else the phase's share of the breakdown."""
        found: list[tuple[str, float, float]] = []
        phases = {phase.name: phase for phase in self.proposal.breakdown or ()}
        for extra in self.proposal.more_targets or ():
            if extra.p is not None:
                p = extra.p
            else:
                phase = phases.get(extra.name)
                p = self.share(phase) if phase is not None else 0.0
            k = math.inf if isinstance(extra.k, str) else extra.k
            found.append((extra.name, min(p, 1.0), k))
        return found

    @lazy
    def acted(self) -> tuple[float, float]:
        """The whole change as one (p, k) on the measured scope: the share it touches and the k that removes what it
        saves. Savings on disjoint phases add (the target's, on its transfer alone when a collective's wait is
        split out, and each further target's); speedups never multiply. A collective's wait is not touched: the
        ceiling, the headroom and what is left are the transfer's (a wait that is all of p leaves the target at
        1×)."""
        wait, more, step = self.wait_share, self.more_targets, self.barrier_step
        if not wait and not more and step is None:
            return self.p, self.k
        if step is not None:
            # Behind a barrier the target's saving is the step's (`barrier_step`): the share it touches is what the
            # step can lose through it at most (nothing, off the critical path), or for a slower target the share
            # the slowdown lands on, so that p_all · (1 − 1/k_all) is the step's saving either way. The further
            # targets are in it (`BarrierStep.more`): behind the barrier their savings are the step's too.
            own, saving = step.touched(self.k), step.saving
        else:
            own, saving = self.p - wait, amdahl.saving_fraction(self.p - wait, self.k)
        if step is None or not step.more:
            saving += math.fsum(amdahl.saving_fraction(p, k) for _, p, k in more)
            own += math.fsum(p for _, p, _ in more)
        p_all = min(own, 1.0)
        if p_all <= 0 and step is not None:
            return 0.0, self.k if self.k < 1 else 1.0  # the step sees none of it: no saving, no headroom, no ceiling
        if p_all <= 0:
            p_all = self.p
        k_all = effective_k(p_all, saving)
        # Each k is finite, but a further target's 1e-300× on a share of 1e-9 leaves no finite new time.
        if not math.isfinite(saving) or k_all <= 0 or not math.isfinite(1.0 / k_all):
            raise InvalidInput(
                "Expected `more_targets` k large enough that the step's new time is a finite number", "/more_targets"
            )
        return p_all, k_all

    @lazy
    def acted_run_saving(self) -> float:
        """`acted`'s saving on the run's scope: the target's share of the run (`p_run`) scales every part alike."""
        p_all, k_all = self.acted
        return amdahl.saving_fraction(self.on_run(p_all), k_all)

    def on_run(self, share: float) -> float:
        """A share of the measured scope as a share of the run, scaled as the target's is (`p_run` over `p`), at most
        all of it. Divided first: a p of 5e-324 beside a p_run of 1 overflows the ratio, and 0 × ∞ is NaN; a p_run of
        0 (a target of 0 ms in a whole-run breakdown) scales every share to 0, never ∞ × 0."""
        if self.p <= 0:
            return min(share, 1.0)
        return min(share / self.p * self.p_run, 1.0) if share and self.p_run else 0.0

    @lazy
    def mix(self) -> list[MixPart] | None:
        """The fleet's device kinds or the traffic's buckets, each with its own p, k and saving; None without a mix.

        A part's k is its own, else the proposal's on the part it was measured on (`scope.device`, `scope.input`),
        else unknown: counted as no gain, never assumed. A part where the change is slower is counted as kept on the
        old path (no gain) — which is the condition the mix rule puts on funding it."""
        flags = self.proposal.flags
        if flags.fleet_mix is not None:
            fleet = sum(part.gpus for part in flags.fleet_mix)
            measured = self.proposal.scope.device
            raw = [(part.name, part.gpus / fleet, part.p, part.k) for part in flags.fleet_mix]
        elif flags.traffic_mix is not None:
            measured = self.proposal.scope.input
            raw = [(part.name, part.share, part.p, part.k) for part in flags.traffic_mix]
            rest = 1.0 - math.fsum(part.share for part in flags.traffic_mix)
            if rest > 1e-9:
                raw.append((REST_OF_TRAFFIC, rest, None, None))
        else:
            return None
        p_all, k_all = self.acted
        parts: list[MixPart] = []
        for name, weight, p, k in raw:
            part_p = p if p is not None else self.on_run(p_all)
            part_k = _part_k(k, k_all if name == measured else None)
            saving = 0.0 if part_k is None else max(amdahl.saving_fraction(part_p, part_k), 0.0)
            parts.append(MixPart(name=name, weight=weight, p=part_p, k=part_k, saving=saving))
        return parts

    @lazy
    def unit_slip(self) -> float | None:
        """How many times the breakdown's sum and the step's time (`baseline_ms`) differ, when that is so far
        (`unit_slip_ratio`, about a unit: seconds or microseconds written as ms) that it cannot be overlap or an
        unlisted phase; None otherwise."""
        base, parts = self.proposal.baseline_ms, self.breakdown_ms
        if base is None or parts <= 0 or self.proposal.breakdown_scope != "measured":
            return None
        if parts / base >= self.policy.unit_slip_ratio:
            return parts / base  # no overlap multiplies a step a few hundred times
        if base / parts < self.policy.unit_slip_ratio:
            return None
        # Far less than its step: a breakdown in µs or s only when it is whole (its own share of the target is p);
        # one that lists a few phases of the step is partial, which the consistency rule says.
        target = self.target_phase
        if target is None or abs(target.ms / parts - self.p) > self.policy.breakdown_tolerance:
            return None
        return base / parts

    @lazy
    def target_share(self) -> float:
        """The target's share of the time the breakdown divides."""
        if self.target_phase is not None and self.breakdown_total:
            return self.share(self.target_phase)
        return self.p_run if self.proposal.breakdown_scope == "end_to_end" else self.p

    @lazy
    def others(self) -> list[Phase]:
        """The breakdown's phases other than the target."""
        changed = {self.proposal.target, *(extra.name for extra in self.proposal.more_targets or ())}
        return [phase for phase in self.proposal.breakdown or () if phase.name not in changed]

    @lazy
    def largest_other(self) -> Phase | None:
        """The largest phase other than the target that is one thing (not a folded rest or the unaccounted time)."""
        return max((p for p in self.others if not is_aggregate(p.name)), key=lambda phase: phase.ms, default=None)

    @lazy
    def alternative(self) -> Alternative | None:
        """The largest thing bigger than the target and above the noise floor: one phase, or the non-kernel
        phases together (the seed's "the 85% that is allocation and host↔device copy")."""
        floor, target = self.policy.noise_floor, self.target_share
        best: Alternative | None = None
        if self.unit_slip is not None:
            return None  # shares of a breakdown in another unit than its step are no shares at all
        if self.step_unseen:
            return self._setter_compute
        wait = self.collective_wait
        if wait > 0 and wait >= floor and wait > self.p - self.wait_share:
            # The wait inside the collective this proposal works on: when it dwarfs what the change saves it is the
            # alternative named, before any other phase (it is this effort's better use, on the same collective).
            base = self.baseline_ms
            best = Alternative(
                f"waiting for the slowest rank inside {self.target}",
                wait,
                wait * base if base is not None else 0.0,
                grouped=True,
                kinds=("wait",),
                fix="balance the load across ranks",
            )
            if wait >= self.policy.alternative_ratio * max(self.run_saving, 0.0):
                return best
        phase = self.largest_other
        if phase is not None:
            share = self.share(phase)
            if share > target and share >= floor and (best is None or share > best.share):
                best = Alternative(label(phase.name), share, phase.ms, grouped=False, kinds=(phase.kind,))
        group = [phase for phase in self.others if phase.kind in NON_KERNEL]
        if len(group) >= 2:
            total = sum(phase.ms for phase in group)
            share = total / self.breakdown_total if self.breakdown_total else 0.0
            if share > target and share >= floor and (best is None or share > best.share):
                kinds = tuple(kind for kind in NON_KERNEL if any(p.kind == kind for p in group))
                best = Alternative(kinds_label(list(kinds)), share, total, grouped=True, kinds=kinds)
        return best

    @property
    def _setter_compute(self) -> Alternative | None:
        """Behind a barrier the step does not see the target: the compute of the rank that sets the step is where the
        time is, not another phase of the breakdown (the target's rank's, which waits as well). None when the ranks'
        arrivals are not measured."""
        step, barrier = self.barrier_step, self.proposal.flags.barrier
        if step is None or barrier is None or step.setter is None or step.after_ms is None or not barrier.step_ms:
            return None
        return Alternative(
            f"rank {step.setter}'s compute", step.after_ms / barrier.step_ms, step.after_ms, grouped=False
        )

    @lazy
    def material_alternative(self) -> Alternative | None:
        """The alternative when it could win materially more than this proposal: its whole time at least
        `alternative_ratio` times the proposal's own end-to-end saving, or the capacity a memory fix frees (stage 4
        names it even when the proposal passes)."""
        alternative = self.alternative
        if alternative is None:
            return None
        # what the work is worth, as a share: the run's saving, or for a memory fix the capacity it frees (a phase
        # larger than a 4% slower step is not "materially more" than the 48% of the GPUs an FP8 KV cache frees)
        capacity = self.worth.capacity_saving
        value = capacity if capacity is not None else self.run_saving
        if alternative.share < self.policy.alternative_ratio * max(value, 0.0):
            return None
        return alternative

    @lazy
    def unportable(self) -> bool:
        return self.proposal.flags.portability in ("vendor_specific", "hand_asm")

    @lazy
    def worth(self) -> Worth:
        """Stages 2 and 3, once for every check: the value of the work, its full cost, and whether it pays."""
        return worth_of(self.proposal, self.policy, self.run_saving, self.k)

    @property
    def maintenance_weeks(self) -> float:
        """Engineer-weeks unportable code costs to keep correct over the policy's horizon (0 when portable)."""
        return self.worth.cost.upkeep_weeks

    @property
    def scope_noun(self) -> str:
        """What `p` is a share of, as the statement says it: the step, device activity, the run, one rank."""
        return SCOPE_NOUN.get(self.proposal.scope.measured or "step", "the step")


@dataclass(frozen=True, slots=True)
class BarrierStep:
    """What the step behind a barrier loses when a compute target changes (`Context.barrier_step`)."""

    saving: float
    """Share of the step removed at k (negative when the change makes the step longer)."""
    ceiling: float
    """Share of the step removed with the target at zero: what the step can lose through it at most."""
    own_ms: float | None
    """The target's time per step on its own rank, at this p (None when stated without per-rank figures)."""
    before_ms: float | None = None
    """The latest arrival at the collective before the change: the straggler's compute."""
    after_ms: float | None = None
    """The latest arrival after it: the compute of the rank that then sets the step."""
    setter: int | None = None
    """The rank whose arrival sets the step after the change (the lowest of equal ones)."""
    floor_setter: int | None = None
    """The rank that sets the step with the target at zero."""
    more: bool = False
    """The further targets (`more_targets`) are counted in `saving` and `ceiling`, through the same arrivals
    (`arrivals_step`): rank by rank where the arrivals give their time (`more_ms`), else a faster one on the rank p is
    measured on alone and a slower one in full; stated off the critical path, a faster one is no more seen than the
    target."""
    more_measured: bool = False
    """The arrivals give the further targets' time on every rank (`more_ms`): they are counted rank by rank."""
    more_plain: float = 0.0
    """What the further targets that get faster save on the rank p is measured on: Σ p · (1 − 1/k), as if no barrier
    were."""
    more_seen: float = 0.0
    """What the step sees of the further targets' change once the target's own is made (0: another rank then sets
    it, and their time there is not measured)."""
    slowed: float = 0.0
    """The share of the step in targets made slower: what a change the step sees none of the gain of acts on."""

    @property
    def more_unseen(self) -> float:
        """What the further targets save on the rank p is measured on that the step behind the barrier does not see,
        their time on the other ranks not measured (0 when it is: the step's saving is then theirs as measured)."""
        return 0.0 if self.more_measured else max(self.more_plain - self.more_seen, 0.0)

    def touched(self, k: float) -> float:
        """The share of the step the change acts on, as one (p, k) reads it: what the step can lose through the
        target (and the further targets, with `more`) at most; where that is nothing (off the critical path) and the
        change is slower, the share whose slowdown makes the step's loss."""
        if self.more:
            return self.ceiling if self.ceiling > 0 or self.saving >= 0 else max(self.slowed, UNSEEN)
        if k >= 1 or self.ceiling > 0:
            return self.ceiling
        return self.saving / (1.0 - 1.0 / k)  # nothing to gain, but the slowdown can still reach the step


def arrivals_step(
    arrivals: Sequence[Arrival],
    step_ms: float,
    target_ms: float,
    p: float,
    k: float,
    more: Sequence[tuple[str, float, float]] = (),
    rank: int | None = None,
) -> BarrierStep | None:
    """The step's saving when ranks wait at a barrier for the latest arrival, each rank's with the target's time on it
    divided by k: max over ranks of compute − target · (1 − 1/k), the target's times scaled by p over the measured p
    (`target_ms` of `step_ms`). None when that is the plain p · (1 − 1/k) at k and at zero (the target's rank stays the
    straggler whatever k).

    `more`, the further targets as (name, p, k), p a share of the step of `rank` (the rank p is measured on; by
    default the latest arrival), go through the same arithmetic: each rank's compute less every target's time on it
    times 1 − 1/k. Their time on the other ranks is each arrival's `more_ms`; where no arrival gives it, it is not
    measured, so a faster one is taken off `rank`'s arrival alone (what it saves behind the barrier at least: the step
    sees it only while that rank arrives last), and a slower one's loss is added to the step in full."""
    own = p * step_ms
    cut = 1.0 if math.isinf(k) else 1.0 - 1.0 / k
    # each rank's target time at this p, never past its compute (a ratio first: a tiny target_ms must not overflow)
    times = [min(a.target_ms / target_ms * own, a.compute_ms) if a.target_ms else 0.0 for a in arrivals]
    if rank is None:
        rank = -max((a.compute_ms, -a.rank) for a in arrivals)[1]
    measured = any(a.more_ms for a in arrivals)
    cuts = [1.0 if math.isinf(k_at) else 1.0 - 1.0 / k_at for _, _, k_at in more]
    at_k: list[float] = []  # each rank's further targets' time taken off (added, slower) at their k
    at_zero: list[float] = []  # and with them removed
    for a, t in zip(arrivals, times, strict=True):
        if a.rank == rank:
            spent = [share * step_ms for _, share, _ in more]
        else:
            spent = [(a.more_ms or {}).get(name, 0.0) for name, _, _ in more]
        room = max(a.compute_ms - t, 0.0)
        total = math.fsum(spent)
        if total > room:  # the stated shares never past the rank's compute
            spent = [value * room / total for value in spent]
        counted = [(value, c) for value, c in zip(spent, cuts, strict=True) if measured or c >= 0]
        at_k.append(math.fsum(value * c for value, c in counted))
        at_zero.append(math.fsum(spent))
    loss = (
        0.0
        if measured
        else math.fsum(share * step_ms * -c for (_, share, _), c in zip(more, cuts, strict=True) if c < 0)
    )

    def latest(cut: float, extra: Sequence[float] | None = None) -> tuple[float, int]:
        value, setter = max(
            (a.compute_ms - t * cut - (extra[i] if extra is not None else 0.0), -a.rank)
            for i, (a, t) in enumerate(zip(arrivals, times, strict=True))
        )
        return value, -setter

    before, _ = latest(0.0)
    alone, _ = latest(cut)
    after, setter = latest(cut, at_k)
    floor, floor_setter = latest(1.0, at_zero)
    saving, ceiling = (before - after - loss) / step_ms, (before - floor) / step_ms
    plain = amdahl.saving_fraction(p, k) + math.fsum(amdahl.saving_fraction(share, k_at) for _, share, k_at in more)
    reach = p + math.fsum(share for _, share, _ in more)
    if math.isclose(saving, plain, rel_tol=1e-9, abs_tol=1e-12) and math.isclose(ceiling, reach, rel_tol=1e-9):
        return None
    faster = math.fsum(share * c for (_, share, _), c in zip(more, cuts, strict=True) if c > 0)
    return BarrierStep(
        saving=saving,
        ceiling=ceiling,
        own_ms=own,
        before_ms=before,
        after_ms=after + loss,
        setter=setter,
        floor_setter=floor_setter,
        more=bool(more),
        more_measured=measured,
        more_plain=faster,
        more_seen=(alone - after) / step_ms,
        slowed=math.fsum(share for (_, share, _), c in zip(more, cuts, strict=True) if c < 0) + (p if k < 1 else 0.0),
    )


UNSEEN = 1e-12
"""A step saving no larger than this is none: the latest arrival at the barrier is the same before and after."""


REST_OF_TRAFFIC = "the rest of the traffic"
"""The part of a traffic mix no bucket names: time the change was not measured on."""


@dataclass(frozen=True, slots=True)
class MixPart:
    """One part of a fleet mix or a traffic mix: its weight (share of the GPUs, or of the time), p, k, saving."""

    name: str
    weight: float
    p: float
    k: float | None
    """None: no k measured on this part (counted as no gain)."""
    saving: float
    """Share of this part's time removed: p · (1 − 1/k), 0 where k is unknown or the change is slower."""


def _part_k(stated: float | str | None, measured: float | None) -> float | None:
    """A mix part's k: its own (`"inf"` as ∞), else the proposal's where it was measured (`measured`), else None."""
    if stated is None:
        return measured
    return math.inf if isinstance(stated, str) else stated


def effective_k(p: float, saving: float) -> float:
    """The k that removes `saving` of the scope from a share `p` of it: 1 / (1 − saving / p), ∞ when all of p."""
    if p <= 0:
        return 1.0
    left = 1.0 - saving / p
    return math.inf if left <= 0 else 1.0 / left


def derived_k(proposal: Proposal, p: float, k: float, baseline_ms: float | None) -> float:
    """The target's end-to-end speedup once the work the change adds is counted (`added_work`): speculative decoding
    as the formula of `amdahl.speculative_k` gives it (in place of the tokens-per-pass `k` teams quote), then each
    added phase's ms on top of the target's new time (`amdahl.with_added_ms`, which needs the scope's time)."""
    added = proposal.added_work
    if added is None:
        return k
    spec = added.speculative
    if spec is not None:
        k = amdahl.speculative_k(spec.draft_tokens, spec.acceptance, spec.draft_cost, spec.verify_cost)
    extra = sum(phase.ms for phase in added.phases or ())
    if extra > 0:
        if baseline_ms is None:
            raise InvalidInput(
                "Expected `baseline_ms` (or a breakdown of the step) with `added_work.phases`: added ms are weighed "
                "against the target's own time",
                "/added_work/phases",
            )
        k = amdahl.with_added_ms(baseline_ms * p, k, extra)
    # extreme inputs (a verify pass of 1e-300 steps, 1e308 ms added) must still give a k whose figures are finite:
    # the new time, and the headroom 1 − 1/k (an acceptance of 2e-308 gives k = 5.6e-309, whose 1/k overflows), as
    # the boundary requires of a stated k
    positive = k > 0 and not math.isnan(k)
    remaining = (1 - p) + p / k if positive else math.inf
    step = baseline_ms if baseline_ms is not None else 1.0
    finite = positive and math.isfinite(1.0 / k) and math.isfinite(remaining) and math.isfinite(step * remaining)
    if not finite or (math.isinf(k) and spec is not None):
        raise InvalidInput(
            f"Expected `added_work` that leaves the target a finite, positive speedup, got {k}", "/added_work"
        )
    return k


POINT_FREE = (
    "baseline_ms",
    "breakdown_ms",
    "breakdown_total",
    "target",
    "target_phase",
    "target_is_comm",
    "others",
    "largest_other",
    "more_targets",
    "unportable",
    "behind_barrier",
)
"""The figures of a Context that depend on the proposal and the policy but not on the point (p, k): a context of the
same proposal at another point may take them as they are (`context(..., like=...)`; a test holds them equal)."""


def context(
    proposal: Proposal,
    policy: Policy,
    p: float,
    k: float,
    probe: Probe | None = None,
    *,
    calibration: Calibration | None = None,
    proposed: Proposal | None = None,
    verdict_only: bool = False,
    like: Context | None = None,
) -> Context:
    """The context of one point (p, k as the proposal states it), with k derived end to end when work is added;
    `calibration` and `proposed` when the engine evaluates at a team's calibrated k (rules.calibration);
    `verdict_only` when only the verdict is asked (`Context.verdict_only`); `like`, a context of the same proposal
    under the same policy at another point, whose `POINT_FREE` figures are taken rather than computed again (a
    range's corners and its bisection)."""
    plain = Context(
        proposal=proposal,
        policy=policy,
        p=p,
        k=k,
        probe=probe,
        calibration=calibration,
        proposed=proposed,
        verdict_only=verdict_only,
    )
    if like is not None and like.proposal is proposal and like.policy is policy:
        known, mine = like.__dict__, plain.__dict__
        for name in POINT_FREE:
            if name in known:
                mine[name] = known[name]
    if proposal.added_work is None:
        return plain
    effective = dataclasses.replace(plain, k=derived_k(proposal, p, k, plain.baseline_ms), stated_k=k)
    effective.__dict__.update((name, value) for name, value in plain.__dict__.items() if name in POINT_FREE)
    return effective


Check = Callable[[Context], Finding | None]
Probe = Callable[[Proposal, float, float], Verdict]

PASSING: frozenset[Verdict] = frozenset({"fund", "fund_if"})
"""The verdicts that pass the review gate: what a break-even value separates from the rest."""


SMALLEST_P = 1e-9
"""The share break-even searches stop at: a proposal passing here passes at any share."""


def break_even_below(passes: Callable[[float], bool], p: float, margin: float) -> tuple[float, bool] | None:
    """The smallest share at which `passes` still holds, searched below `p` (None when `p` itself fails), and
    whether it lies below ``p / margin``: then no error of that size in a p that stands in for the real one (an
    estimate, a share of device activity alone) changes the answer. Bisection on the pure verdict function."""
    if not passes(p):
        return None
    if passes(p / margin):
        return (SMALLEST_P if passes(SMALLEST_P) else break_even(passes, SMALLEST_P, p / margin)), True
    return break_even(passes, p / margin, p), False


def said_share(passes: Callable[[float], bool], edge: float) -> float:
    """A break-even share as a condition states it: the lower of its two printed figures (`text.share_bounds`) at
    which `passes` holds, so that a share equal to the printed one passes ("p ≥ 4.3%" for an edge of 4.304% would
    fail at 4.3%: it says 4.4%; an edge of 4.5003%, bisection's side of an exact 4.5%, stays 4.5%)."""
    if edge <= SMALLEST_P:
        return edge
    return _said(passes, share_bounds(edge))


def said_k(passes: Callable[[float], bool], edge: float) -> float:
    """A break-even k as a condition states it, as `said_share` states a share: the lower of its two printed figures
    (three significant, `text.significant_bounds`) at which `passes` holds ("k ≥ 1.07" for an edge of 1.0714 would
    fail at 1.07: it says 1.08)."""
    if not math.isfinite(edge) or edge <= 0:
        return edge
    return _said(passes, significant_bounds(edge))


def _said(passes: Callable[[float], bool], bounds: tuple[float, float]) -> float:
    """Of a break-even's two printed figures (rounded down, rounded up), the lower where it passes, else the upper."""
    down, up = bounds
    return down if down > 0 and passes(down) else up


def break_even(passes: Callable[[float], bool], fail: float, ok: float, *, rel: float = 1e-3) -> float:
    """The boundary between a failing and a passing value, by bisection (`passes(ok)` and not `passes(fail)`)."""
    for _ in range(40):
        if abs(ok - fail) <= rel * max(abs(ok), abs(fail), 1e-12):
            break
        mid = (fail + ok) / 2
        if passes(mid):
            ok = mid
        else:
            fail = mid
    return ok
