"""The data of a decision: what comes in (a proposal) and what goes out (findings, figures, a verdict).

Field names are a contract (PRODUCT §8): clients depend on them, so extend freely but rename none.
Constraints live on the types (`Fraction`, `Speedup`, …) so that decoding at the boundary validates them;
code we own builds these objects directly and is trusted.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Annotated, Literal

import msgspec
import msgspec.inspect
from msgspec import Meta

from worthit.rules.names import LABEL_PATTERN

Fraction = Annotated[float, Meta(gt=0, le=1, description="A share of the measured scope's time, 0 < p ≤ 1.")]
OpenFraction = Annotated[float, Meta(ge=0, le=1)]
PositiveFloat = Annotated[float, Meta(gt=0)]
NonNegativeFloat = Annotated[float, Meta(ge=0)]
Milliseconds = Annotated[float, Meta(gt=0, description="A time in milliseconds.")]
# No NUL characters: PostgreSQL text cannot hold them, and no name or title of ours means one.
TEXT_PATTERN = "^[^\x00]*$"
NAME_MAX = 200
Name = Annotated[str, Meta(min_length=1, max_length=NAME_MAX, pattern=TEXT_PATTERN)]
# A phase a profile holds may be named in full: kernel names are C++ signatures of thousands of characters.
LONG_NAME_MAX = 16384
LongName = Annotated[str, Meta(min_length=1, max_length=LONG_NAME_MAX, pattern=TEXT_PATTERN)]
Target = Annotated[str, Meta(min_length=1, max_length=LONG_NAME_MAX, pattern=LABEL_PATTERN)]
"""A target's name: one line (rules/names.py), as long as a phase a profile holds may be named."""
# Steps of a profile by number (ProfilerStep#N): "2:5", "3", "2:", ":5", "all".
Steps = Annotated[str, Meta(min_length=1, max_length=41, pattern=r"^\s*(all|\d{0,19}\s*(:\s*\d{0,19}\s*)?)$")]
Title = Annotated[str, Meta(max_length=300, pattern=TEXT_PATTERN)]
Infinite = Literal["inf"]
"""`k = "inf"`: the target's work disappears (a copy removed by keeping data resident)."""

Verdict = Literal["fund", "fund_if", "remeasure", "redirect", "decline"]
Effect = Literal["supports", "opposes", "condition", "remeasure", "info"]
PhaseKind = Literal["kernel", "copy", "alloc", "host", "comm", "input", "other"]
"""`comm`: collectives (NCCL, RCCL); `input`: the GPU waiting on the data pipeline (loader, decode, feed)."""
Stage = Literal["trust", "worth", "cost", "alternative", "condition"]
"""Where a check stands in the argument a decision makes (PRODUCT §3), in this order."""
Figure = float | int | str | bool | None

VERDICTS: tuple[Verdict, ...] = ("fund", "fund_if", "remeasure", "redirect", "decline")

REST_PREFIX = "(the rest: "
"""How a phase that sums many others begins ("(the rest: 48,977 kernel phases)"): a bounded breakdown's fold."""
UNACCOUNTED = "rest of the recording"
"""The phase a profile's breakdown adds for the time no phase accounts for."""
INPUT_WAIT = "device idle (input pipeline)"
HOST_WAIT = "device idle (host)"
"""The phases a profile with a host timeline adds instead: the device's idle time, by what it waited for."""


def is_aggregate(name: str) -> bool:
    """A phase that stands for many (the folded rest, the unaccounted time): never a target to name instead."""
    return name.startswith(REST_PREFIX) or name == UNACCOUNTED


class Base(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every API struct: keyword-only, unknown fields rejected, numbers finite."""

    def __post_init__(self) -> None:
        # JSON has no NaN or Infinity, but 1e999 decodes to inf; no field of ours means that.
        for field in _number_fields(type(self)):
            value = getattr(self, field)
            if type(value) is float and not math.isfinite(value):
                raise ValueError(f"Expected `{field}` to be a finite number, got {value}")


@cache
def _number_fields(cls: type[msgspec.Struct]) -> tuple[str, ...]:
    """The fields of `cls` that can hold a float: the only ones the finiteness check needs to read (it runs for every
    struct of every request)."""

    def holds_float(kind: object) -> bool:
        if isinstance(kind, msgspec.inspect.Metadata):
            return holds_float(kind.type)
        if isinstance(kind, msgspec.inspect.FloatType):
            return True
        return isinstance(kind, msgspec.inspect.UnionType) and any(holds_float(t) for t in kind.types)

    info = msgspec.inspect.type_info(cls)
    if isinstance(info, msgspec.inspect.Metadata):
        info = info.type
    if not isinstance(info, msgspec.inspect.StructType):  # pragma: no cover - every Base subclass is a Struct
        return tuple(cls.__struct_fields__)
    return tuple(field.name for field in info.fields if holds_float(field.type))


class Range(Base):
    """An uncertain figure: the verdict is checked at both ends."""

    low: float
    high: float

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.low > self.high:
            raise ValueError(f"Expected `low` <= `high`, got low={self.low} and high={self.high}")


class Comparison(Base):
    """The configuration of the other side of a before/after comparison (`scope.compared_to`)."""

    model: Name | None = None
    input: Name | None = None
    dtype: Name | None = None
    device: Name | None = None


class Scope(Base):
    """What was measured, how, and on which configuration."""

    workload: Name | None = None
    model: Name | None = None
    input: Name | None = None
    dtype: Name | None = None
    device: Name | None = None
    measured: Literal["step", "device_activity", "end_to_end", "rank"] | None = None
    method: Literal["timeline", "counters", "inclusive_summary", "estimate"] | None = None
    timing: Literal["device_events", "host_wall", "host_submit"] | None = None
    overlap: bool = False
    target_input: Name | None = None
    """The input that matters, when it differs from `input` (the one measured): batching changes what dominates."""
    compared_to: Comparison | None = None
    """The configuration the other side of a before/after comparison was measured on; any field that differs from
    this scope's own (model, input, dtype, device) makes the comparison unlike (measurement_scope rule)."""
    inclusive: bool = False
    """The shares come from inclusive percentages that overlap (a profiler's summary table); set by the service
    when `p` is read from such a profile (inclusive_percentages rule)."""


class Phase(Base):
    """One disjoint part of a breakdown of the scope's time."""

    name: Name
    ms: NonNegativeFloat
    kind: PhaseKind = "kernel"
    k: PositiveFloat | Infinite | None = None
    """The speedup a plan may assume for this phase; the plan's (or the policy's) default when absent."""


class LatencySLO(Base):
    """The service's latency SLO: its p99, whether the change may raise the tail, and whether p99 was measured."""

    p99_ms: Milliseconds | None = None
    tail_risk: bool = False
    p99_measured_worse: bool | None = None


class Barrier(Base):
    """The target runs between multi-GPU barriers: how many ranks wait, and (once profiled) how long."""

    ranks: Annotated[int, Meta(ge=2)]
    critical_path: bool = True
    wait_fraction: OpenFraction | None = None
    straggler: Annotated[int, Meta(ge=0)] | None = None
    """The rank whose compute sets the step (measured from a distributed profile)."""
    step_ms: Milliseconds | None = None
    """The step's time as the straggler sets it, which every rank waits for."""
    target_ms: NonNegativeFloat | None = None
    """The target's time per step on the straggler's critical path."""
    rank_p: Fraction | None = None
    """The target's share of one rank's device activity: the p a single-GPU profile would give."""


class Strategic(Base):
    """The workload the work is really for, its share there, and how firm its launch is."""

    model: Name
    p: Fraction | None = None
    launch_committed: bool | None = None
    slips: Annotated[int, Meta(ge=0)] = 0


class Flags(Base):
    """Facts beyond one run's arithmetic: fleet size, portability, latency SLO, barriers, strategic workload."""

    fleet_gpus: Annotated[int, Meta(gt=0)] | None = None
    portability: Literal["portable", "vendor_specific", "hand_asm"] | None = None
    portable_fallback: bool = False
    kernel_is_product: bool = False
    maintenance_weeks_per_year: NonNegativeFloat | None = None
    architectures: Annotated[int, Meta(ge=1)] | None = None
    """Architectures the unportable path must be kept correct on (maintenance_cost rule); 1 when absent."""
    latency_slo: LatencySLO | None = None
    barrier: Barrier | None = None
    strategic: Strategic | None = None
    run_days: Annotated[float, Meta(gt=0, le=36_500)] | None = None
    """A fixed job rather than recurring capacity: `fleet_gpus` GPUs for this many days (a pretraining run, a
    batch backfill). The freed capacity is valued over the job only, not over the policy's horizon."""


class Goal(Base):
    """What the work is meant to achieve: a latency, a throughput, or fitting in memory (resource_goal rule)."""

    latency_ms: Milliseconds | None = None
    throughput_per_s: PositiveFloat | None = None
    memory_required_gb: PositiveFloat | None = None
    device_memory_gb: PositiveFloat | None = None


class Proposal(Base, kw_only=True):
    """An optimization proposal: speed up `target`, which is `p` of the scope, by `k`, for `cost_weeks`."""

    title: Title | None = None
    team: Name | None = None
    """The team proposing the work: outcomes are calibrated per team (and workload)."""
    target: Target | None = None
    """The phase the work speeds up; longer than 200 characters only when it names a phase of `profile_id`."""
    p: Fraction | Range | None = None
    k: PositiveFloat | Infinite | Range
    baseline_ms: Milliseconds | None = None
    cost_weeks: NonNegativeFloat | None = None
    profile_id: Name | None = None
    steps: Steps | None = None
    """With `profile_id`: measure `p` over these steps of the profile (``"2:5"``: ProfilerStep#2 to #5)."""
    p_end_to_end: Fraction | None = None
    scope: Scope = msgspec.field(default_factory=Scope)
    breakdown: list[Phase] | None = None
    flags: Flags = msgspec.field(default_factory=Flags)
    goal: Goal | None = None
    breakdown_scope: Literal["measured", "end_to_end"] = "measured"
    """Which time `breakdown` divides: the measured scope (that of `p` and `baseline_ms`, the default) or the whole
    run (when `p` is measured on a narrower scope such as device activity)."""
    prior_k: PositiveFloat | Infinite | None = None
    """The speedup `target` already received from earlier work: this proposal is a follow-up, and `p` and
    `baseline_ms` are measured after that work (ceiling rule)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.p is None and self.profile_id is None:
            raise ValueError("Expected `p` (a share 0 < p <= 1) or `profile_id` with `target`, got neither")
        if self.profile_id is not None and self.target is None:
            raise ValueError("Expected `target` naming a phase of the profile when `profile_id` is given")
        if self.profile_id is None and self.target is not None and len(self.target) > NAME_MAX:
            raise ValueError(
                f"Expected `target` of length <= {NAME_MAX}, got {len(self.target)} (a longer name may name a phase "
                "of the profile given by `profile_id`)"
            )
        if self.steps is not None and self.profile_id is None:
            raise ValueError("Expected `steps` only with `profile_id`: steps are those of a profile")
        if isinstance(self.p, Range) and not (self.p.low > 0 and self.p.high <= 1):
            raise ValueError(f"Expected 0 < `p.low` <= `p.high` <= 1, got {self.p.low}..{self.p.high}")
        if isinstance(self.k, Range) and self.k.low <= 0:
            raise ValueError(f"Expected `k.low` > 0, got {self.k.low}")
        if self.breakdown is not None:
            names = [phase.name for phase in self.breakdown]
            if len(set(names)) != len(names):
                raise ValueError("Expected unique phase names in `breakdown`")
        self._check_magnitudes()

    def _check_magnitudes(self) -> None:
        """Every figure the engine derives stays a finite number: each input is finite, but sums and products of
        extreme ones (three phases of 1e308 ms, k = 5e-324) overflow, and an infinity where a count or a ratio is
        computed was a 500. Checked here, once, naming the field that makes it overflow."""
        step = self.baseline_ms
        if self.breakdown:
            total = sum(phase.ms for phase in self.breakdown)
            if not math.isfinite(total):
                raise ValueError("Expected `breakdown` phase times (`ms`) that add up to a finite number of ms")
            step = step if step is not None else total
        remaining = 1.0  # the scope's time after the work, as a share of before, at its worst end
        p = self.p.high if isinstance(self.p, Range) else self.p
        k = self.k.low if isinstance(self.k, Range) else self.k
        if p is not None and isinstance(k, float | int):
            remaining = (1.0 - p) + p / k
            finite = math.isfinite(1.0 / k) and math.isfinite(remaining)  # 1/k: the headroom, 1 − 1/k
            if not finite or (step is not None and not math.isfinite(step * remaining)):
                raise ValueError(f"Expected `k` large enough that the step's new time is a finite number, got {k}")
        goal = self.goal
        memory = (goal.memory_required_gb, goal.device_memory_gb) if goal is not None else (None, None)
        if memory[0] is not None and memory[1] is not None and not math.isfinite(memory[0] / memory[1]):
            raise ValueError(
                f"Expected `goal.device_memory_gb` large enough that the devices the goal needs are a finite "
                f"number, got {memory[1]}"
            )
        throughput = goal.throughput_per_s if goal is not None else None
        if throughput is not None and step is not None and not math.isfinite(throughput * step * max(remaining, 1.0)):
            raise ValueError(
                f"Expected `goal.throughput_per_s` small enough that the replicas it needs are a finite number, "
                f"got {throughput}"
            )


class Finding(msgspec.Struct, kw_only=True):
    """What one rule concluded, and on which numbers (provenance, never a bare bool).

    `verdict` is the verdict this finding argues for, when it argues for one. `stage` is the question of the
    decision it answers (filled by the engine from the rule's `STAGE`). `overridden_by` names the rule whose
    figure answered this finding's objection: a per-run bar carried by the value of the work (a fleet, a credible
    strategic workload, a kernel that is the product), or the finding that spoke for the same verdict first.
    """

    rule: str
    effect: Effect
    message: str
    figures: dict[str, Figure] = msgspec.field(default_factory=dict)
    verdict: Verdict | None = None
    stage: Stage | None = None
    overridden_by: str | None = None


class AmdahlFigures(msgspec.Struct, kw_only=True):
    """Every figure of PRODUCT §2 for one (p, k)."""

    p: float
    k: float | Infinite
    speedup: float | None
    """`None` when unbounded (p = 1 and k = ∞: nothing is left of the step). JSON has no infinity, and a float
    field that reads back `null` poisoned every read of a stored decision."""
    ceiling_speedup: float | None
    """`None` when unbounded (p = 1)."""
    saving_fraction: float
    headroom_captured: float
    remaining_fraction: float
    baseline_ms: float | None = None
    saving_ms: float | None = None
    new_ms: float | None = None
    remaining_ms: float | None = None
    cost_weeks: float | None = None
    rate: float | None = None
    rate_unit: Literal["ms/week", "fraction/week"] | None = None


class StageAnswer(msgspec.Struct, kw_only=True):
    """One step of the argument a decision makes: its question, its answer, the checks that spoke, their figures."""

    stage: Stage
    question: str
    answer: str
    rules: list[str]
    figures: dict[str, Figure] = msgspec.field(default_factory=dict)


class Interval(msgspec.Struct, kw_only=True):
    low: float | None
    high: float | None


class PolicyRef(msgspec.Struct, kw_only=True):
    name: str
    version: int


class Evaluation(msgspec.Struct, kw_only=True):
    """The engine's answer: a verdict, one sentence to read out, the figures and the findings behind it."""

    verdict: Verdict
    statement: str
    deciding_rule: str
    amdahl: AmdahlFigures
    findings: list[Finding]
    policy: PolicyRef
    ranges: dict[str, Interval] | None = None
    holds_across_range: bool | None = None
    reasoning: list[StageAnswer] | None = None
    """The stages of the decision in order (trust, worth, cost, alternative, condition), each answered."""
