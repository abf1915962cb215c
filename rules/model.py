"""The data of a decision: what comes in (a proposal) and what goes out (findings, figures, a verdict).

Field names are a contract (PRODUCT §8): clients depend on them, so extend freely but rename none.
Constraints live on the types (`Fraction`, `Speedup`, …) so that decoding at the boundary validates them;
code we own builds these objects directly and is trusted.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

Fraction = Annotated[float, Meta(gt=0, le=1, description="A share of the measured scope's time, 0 < p ≤ 1.")]
OpenFraction = Annotated[float, Meta(ge=0, le=1)]
PositiveFloat = Annotated[float, Meta(gt=0)]
NonNegativeFloat = Annotated[float, Meta(ge=0)]
Milliseconds = Annotated[float, Meta(gt=0, description="A time in milliseconds.")]
Name = Annotated[str, Meta(min_length=1, max_length=200)]
Title = Annotated[str, Meta(max_length=300)]
Infinite = Literal["inf"]
"""`k = "inf"`: the target's work disappears (a copy removed by keeping data resident)."""

Verdict = Literal["fund", "fund_if", "remeasure", "redirect", "decline"]
Effect = Literal["supports", "opposes", "condition", "remeasure", "info"]
PhaseKind = Literal["kernel", "copy", "alloc", "host", "other"]
Figure = float | int | str | bool | None

VERDICTS: tuple[Verdict, ...] = ("fund", "fund_if", "remeasure", "redirect", "decline")


class Base(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every API struct: keyword-only, unknown fields rejected, numbers finite."""

    def __post_init__(self) -> None:
        # JSON has no NaN or Infinity, but 1e999 decodes to inf; no field of ours means that.
        for field in self.__struct_fields__:
            value = getattr(self, field)
            if type(value) is float and not math.isfinite(value):
                raise ValueError(f"Expected `{field}` to be a finite number, got {value}")


class Range(Base):
    """An uncertain figure: the verdict is checked at both ends."""

    low: float
    high: float

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.low > self.high:
            raise ValueError(f"Expected `low` <= `high`, got low={self.low} and high={self.high}")


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


class Phase(Base):
    """One disjoint part of a breakdown of the scope's time."""

    name: Name
    ms: NonNegativeFloat
    kind: PhaseKind = "kernel"


class LatencySLO(Base):
    p99_ms: Milliseconds | None = None
    tail_risk: bool = False
    p99_measured_worse: bool | None = None


class Barrier(Base):
    ranks: Annotated[int, Meta(ge=2)]
    critical_path: bool = True
    wait_fraction: OpenFraction | None = None


class Strategic(Base):
    model: Name
    p: Fraction | None = None
    launch_committed: bool | None = None
    slips: Annotated[int, Meta(ge=0)] = 0


class Flags(Base):
    fleet_gpus: Annotated[int, Meta(gt=0)] | None = None
    portability: Literal["portable", "vendor_specific", "hand_asm"] | None = None
    portable_fallback: bool = False
    kernel_is_product: bool = False
    maintenance_weeks_per_year: NonNegativeFloat | None = None
    latency_slo: LatencySLO | None = None
    barrier: Barrier | None = None
    strategic: Strategic | None = None


class Goal(Base):
    latency_ms: Milliseconds | None = None
    throughput_per_s: PositiveFloat | None = None
    memory_required_gb: PositiveFloat | None = None
    device_memory_gb: PositiveFloat | None = None


class Proposal(Base, kw_only=True):
    """An optimization proposal: speed up `target`, which is `p` of the scope, by `k`, for `cost_weeks`."""

    title: Title | None = None
    target: Name | None = None
    p: Fraction | Range | None = None
    k: PositiveFloat | Infinite | Range
    baseline_ms: Milliseconds | None = None
    cost_weeks: NonNegativeFloat | None = None
    profile_id: Name | None = None
    p_end_to_end: Fraction | None = None
    scope: Scope = msgspec.field(default_factory=Scope)
    breakdown: list[Phase] | None = None
    flags: Flags = msgspec.field(default_factory=Flags)
    goal: Goal | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.p is None and self.profile_id is None:
            raise ValueError("Expected `p` (a share 0 < p <= 1) or `profile_id` with `target`, got neither")
        if self.profile_id is not None and self.target is None:
            raise ValueError("Expected `target` naming a phase of the profile when `profile_id` is given")
        if isinstance(self.p, Range) and not (0 < self.p.low and self.p.high <= 1):
            raise ValueError(f"Expected 0 < `p.low` <= `p.high` <= 1, got {self.p.low}..{self.p.high}")
        if isinstance(self.k, Range) and self.k.low <= 0:
            raise ValueError(f"Expected `k.low` > 0, got {self.k.low}")
        if self.breakdown is not None:
            names = [phase.name for phase in self.breakdown]
            if len(set(names)) != len(names):
                raise ValueError("Expected unique phase names in `breakdown`")


class Finding(msgspec.Struct, kw_only=True):
    """What one rule concluded, and on which numbers (provenance, never a bare bool).

    `verdict` is the verdict this finding argues for, when it argues for one; `overrides` names rules whose
    findings this one sets aside (fleet economics carry a poor rate of return, a portable fallback lifts the
    maintenance cost, …). `overridden_by` is filled by the engine.
    """

    rule: str
    effect: Effect
    message: str
    figures: dict[str, Figure] = msgspec.field(default_factory=dict)
    verdict: Verdict | None = None
    overrides: tuple[str, ...] = ()
    overridden_by: str | None = None


class AmdahlFigures(msgspec.Struct, kw_only=True):
    """Every figure of PRODUCT §2 for one (p, k)."""

    p: float
    k: float | Infinite
    speedup: float
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

