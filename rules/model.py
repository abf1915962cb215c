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
from worthit.rules.phase_names import REST_PREFIX
from worthit.rules.step_grammar import STEPS_MAX_LENGTH, STEPS_PATTERN

__all__ = [
    "HOST_WAIT",
    "INPUT_WAIT",
    "LONG_NAME_MAX",
    "MAX_ARRIVALS",
    "NAME_MAX",
    "TEXT_PATTERN",
    "UNACCOUNTED",
    "VERDICTS",
    "AddedPhase",
    "AddedWork",
    "AmdahlFigures",
    "Arrival",
    "Barrier",
    "Base",
    "Comparison",
    "DevicePart",
    "Effect",
    "Evaluation",
    "Figure",
    "Finding",
    "Flags",
    "Fraction",
    "Goal",
    "Infinite",
    "Interval",
    "LatencySLO",
    "Milliseconds",
    "MoreTarget",
    "Name",
    "NonNegativeFloat",
    "OpenFraction",
    "Phase",
    "PhaseKind",
    "PolicyRef",
    "PositiveFloat",
    "Power",
    "Proposal",
    "QualityGate",
    "Range",
    "Replay",
    "ReplayLosses",
    "Scope",
    "Sentence",
    "Speculative",
    "Stage",
    "StageAnswer",
    "Steps",
    "Strategic",
    "Target",
    "Title",
    "TrafficPart",
    "Unowned",
    "Verdict",
    "is_aggregate",
]

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
Target = Annotated[str, Meta(min_length=1, max_length=LONG_NAME_MAX, pattern=LABEL_PATTERN)]
"""A target's name: one line (rules/names.py), as long as a phase a profile holds may be named."""
# Steps of a profile by number (ProfilerStep#N): "2:5", "3", "2:", ":5", "all"; the profile readers' one grammar.
Steps = Annotated[str, Meta(min_length=1, max_length=STEPS_MAX_LENGTH, pattern=STEPS_PATTERN)]
Title = Annotated[str, Meta(max_length=300, pattern=TEXT_PATTERN)]
Infinite = Literal["inf"]
"""`k = "inf"`: the target's work disappears (a copy removed by keeping data resident)."""

Verdict = Literal["fund", "fund_if", "remeasure", "redirect", "decline"]
Effect = Literal["supports", "opposes", "condition", "remeasure", "info"]
PhaseKind = Literal["kernel", "copy", "alloc", "host", "comm", "input", "other", "cpu", "io"]
"""`comm`: collectives (NCCL, RCCL); `input`: the GPU waiting on the data pipeline (loader, decode, feed);
`cpu`: work done on the CPU itself (a tokenizer, a sampler, pre- and post-processing); `io`: storage or network
I/O (a checkpoint write, an object-store read)."""
Stage = Literal["trust", "worth", "cost", "alternative", "condition"]
"""Where a check stands in the argument a decision makes (PRODUCT §3), in this order."""
Figure = float | int | str | bool | None

VERDICTS: tuple[Verdict, ...] = ("fund", "fund_if", "remeasure", "redirect", "decline")

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
    """The input that matters, when it differs from `input` (the one measured): its size changes what dominates."""
    compared_to: Comparison | None = None
    """The configuration the other side of a before/after comparison was measured on; any field that differs from
    this scope's own (model, input, dtype, device) makes the comparison unlike (measurement_scope rule)."""
    inclusive: bool = False
    """The shares come from inclusive percentages that overlap (a profiler's summary table); set by the service
    when `p` is read from such a profile (inclusive_percentages rule)."""
    profiler_overhead: bool = False
    """The breakdown was recorded with a heavy profiler (stacks, shapes, memory) whose own overhead lands in host
    gaps, while `baseline_ms` was timed without it: parts over the step are overhead, not overlap
    (overlap_double_count rule)."""
    load: Literal["burst", "sustained"] | None = None
    """How long the measurement ran: a burst (seconds: cool clocks, warm caches) or sustained load (the clocks a
    GPU holds once hot and power-limited)."""
    target_load: Literal["burst", "sustained"] | None = None
    """The load that matters, when it differs from `load` (input_shift rule: thermal and power throttling)."""
    k_measured: Literal["in_step", "microbenchmark"] | None = None
    """Where `k` was measured: inside the step, or on a microbenchmark of the kernel alone (one shape, warm caches,
    nothing beside it); a before/after across unlike runs then is about k, not the share (measurement_scope)."""


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
    p99_before_ms: Milliseconds | None = None
    """The p99 measured before the change: above `p99_ms`, the SLO is violated today."""
    p99_after_ms: Milliseconds | None = None
    """The p99 measured with the change: at or under `p99_ms` while it was above before, the change meets the SLO,
    which is what it is worth even when each step is slower (slo_met rule). Given both, `p99_measured_worse` is
    read off them when unsaid."""
    gpus_otherwise: Annotated[int, Meta(gt=0, le=100_000_000)] | None = None
    """GPUs the service would add to meet the SLO without this change (more replicas at a smaller batch): what
    meeting it is worth when the policy prices no SLO itself."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.p99_before_ms is None) != (self.p99_after_ms is None):
            raise ValueError("Expected `flags.latency_slo.p99_before_ms` and `p99_after_ms` together")
        if self.p99_measured_worse is None and self.p99_before_ms is not None and self.p99_after_ms is not None:
            self.p99_measured_worse = self.p99_after_ms > self.p99_before_ms


class Power(Base):
    """A site whose capacity is limited by power, not by GPUs: its power and each GPU's draw before and after the
    change (a power cap). The GPUs it can run are the power over the draw (power_capacity rule)."""

    site_mw: Annotated[float, Meta(gt=0, le=100_000)]
    watts_per_gpu_before: Annotated[float, Meta(ge=1, le=100_000)]
    watts_per_gpu_after: Annotated[float, Meta(ge=1, le=100_000)]


class Unowned(Base):
    """Devices the change ships to that the company does not pay for (users' phones, customers' GPUs): their
    number, what they are, and the device generations the change must ship to (unowned_devices rule)."""

    devices: Annotated[int, Meta(gt=0, le=10_000_000_000)]
    kind: Name = "devices"
    """What they are, as a sentence says it: `phones`, `customer GPUs`."""
    generations: Annotated[int, Meta(ge=1, le=100)] = 1
    """Device generations (NPU, SoC or GPU families) the change must be built and kept correct on."""
    port_weeks: NonNegativeFloat | None = None
    """Engineer-weeks to ship to each generation beyond the first; the policy's `port_weeks_per_generation` when
    absent."""


MAX_ARRIVALS = 64
"""Ranks a barrier's `arrivals` lists at most: the ranks that can set the step at some k (see `Barrier.arrivals`)."""


class Arrival(Base):
    """One rank's arrival at a barrier, per step: its compute before the collective and the target's part of it."""

    rank: Annotated[int, Meta(ge=0)]
    compute_ms: NonNegativeFloat
    """The rank's compute per step: when it reaches the collective, which finishes when the last rank does."""
    target_ms: NonNegativeFloat = 0.0
    """The target's time per step on this rank, part of `compute_ms` (0: the rank does not run it)."""
    more_ms: dict[Name, NonNegativeFloat] | None = None
    """Each further target's time per step on this rank, by its `more_targets` name, part of `compute_ms` (a name
    left out: the rank does not run it). Given on any arrival, the further targets are counted rank by rank; else
    only on the rank `p` is measured on, where their shares are taken (a lower bound behind the barrier)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.target_ms > self.compute_ms:
            raise ValueError(
                f"Expected `target_ms` <= `compute_ms` (the target is part of the rank's compute), got "
                f"{self.target_ms} > {self.compute_ms}"
            )
        more = sum((self.more_ms or {}).values())
        if self.target_ms + more > self.compute_ms * (1 + 1e-9):
            raise ValueError(
                f"Expected `target_ms` and `more_ms` together <= `compute_ms` (the targets are part of the rank's "
                f"compute), got {self.target_ms + more:.6g} > {self.compute_ms:.6g}"
            )


class Barrier(Base):
    """The target runs between multi-GPU barriers: how many ranks wait, and (once profiled) how long.

    `critical_path` false says the target (a compute kernel) runs on a rank that waits for the slowest: faster, that
    rank only waits longer, so the step saves nothing. With `arrivals` (read from all ranks' traces) the engine
    computes the step after the change itself: the latest arrival over the ranks, each with the target's time on it
    divided by k, so a straggler's saving stops where the next-slowest rank sets the step."""

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
    # --- #25: a collective's own time, split (currencies-b) ---
    target_wait: OpenFraction | None = None
    """Of the target's own time (a collective), the share of the step it spends waiting for the slowest rank: a
    faster transfer acts only on p − this, and the wait is the load-balancing target (collective_wait rule)."""
    # --- the straggler's saving is capped by the next-slowest rank ---
    rank: Annotated[int, Meta(ge=0)] | None = None
    """The rank the target's `p` and `target_ms` are measured on: the straggler when it runs the target."""
    arrivals: Annotated[list[Arrival], Meta(min_length=1, max_length=MAX_ARRIVALS)] | None = None
    """The ranks that can set the step at some k: each rank's compute per step before the collective and the
    target's time in it (a profile lists only the ranks on top for some k, at most `MAX_ARRIVALS`). The step after
    the change is `step_ms` less the latest arrival before plus the latest after (max over ranks of
    compute − target · (1 − 1/k)); the target's times are scaled with `p` (its `target_ms` at the measured p)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.arrivals is None:
            return
        if self.step_ms is None or not self.target_ms:
            raise ValueError(
                "Expected `step_ms` and a positive `target_ms` with `arrivals`: the step the ranks wait for and the "
                "target's time on its rank, which the arrivals' target times are scaled from"
            )
        if any(not math.isfinite(arrival.compute_ms / self.step_ms) for arrival in self.arrivals):
            # a step of 5e-324 ms beside 1 ms of compute: a rank's share of it was ∞, in a sentence
            raise ValueError(
                f"Expected `step_ms` large enough that each rank's compute is a finite share of it, got {self.step_ms}"
            )
        ranks = [arrival.rank for arrival in self.arrivals]
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"Expected `arrivals` to name each rank once, got ranks {ranks}")


class Strategic(Base):
    """The workload the work is really for, its share there, and how firm its launch is."""

    model: Name
    p: Fraction | None = None
    launch_committed: bool | None = None
    slips: Annotated[int, Meta(ge=0)] = 0


# --- #25: the parts of a fleet or of its traffic, each with its own p and k (currencies-b) ---


class DevicePart(Base):
    """One device kind of the fleet: its GPUs, and its own p and k where they differ from the proposal's.

    `k` absent: the proposal's k when `name` is the device measured (`scope.device`), else not measured there —
    counted as no gain, never assumed (mix rule). `p` absent: the proposal's p."""

    name: Name
    gpus: Annotated[int, Meta(gt=0, le=100_000_000)]
    p: Fraction | None = None
    k: PositiveFloat | Infinite | None = None


class TrafficPart(Base):
    """One bucket of the production traffic (a batch size, a sequence length): its share of the time, its p and k.

    `k` absent: the proposal's k when `name` is the input measured (`scope.input`), else not measured there —
    counted as no gain (mix rule). `p` absent: the proposal's p."""

    name: Name
    share: Fraction
    p: Fraction | None = None
    k: PositiveFloat | Infinite | None = None


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
    # --- #25: fleet and traffic mixes (currencies-b) ---
    fleet_mix: Annotated[list[DevicePart], Meta(min_length=1, max_length=64)] | None = None
    """The fleet by device kind, each with its GPUs and (where they differ) its own p and k; `fleet_gpus` is their
    sum when absent (mix rule)."""
    traffic_mix: Annotated[list[TrafficPart], Meta(min_length=1, max_length=64)] | None = None
    """The production time by batch size or sequence length, each bucket with its share and its own p and k; the
    time no bucket names is traffic with no measured k (mix rule)."""

    # issue #25 (part a): what the change costs in GPU time on every start, and whether the work recurs
    gpu_minutes_per_start: PositiveFloat | None = None
    """GPU-minutes the change costs on each deploy or replica start (an autotuned compile, a cache warm-up)."""
    starts_per_day: PositiveFloat | None = None
    """Deploys or replica starts a day that pay `gpu_minutes_per_start` (recurring_gpu_cost rule)."""
    recurring: bool | None = None
    """True: the workload runs continuously (serving, a standing fleet); False: a one-off job (say `run_days`).
    Unsaid, a fleet is valued over the policy's horizon and the statement says that is an assumption."""
    # what a change may trade besides time on GPUs the company pays for
    power: Power | None = None
    """The site is limited by power: a change that lowers each GPU's draw lets it run more GPUs (power_capacity)."""
    unowned: Unowned | None = None
    """The change runs on devices the company does not pay for: valued per device as the policy says, never as
    GPU-equivalents freed; `fleet_gpus` is capacity the company pays for (unowned_devices rule)."""
    roofline_fraction: Fraction | None = None
    """The target's achieved fraction of its bound (of peak memory bandwidth or of peak compute): the same work can
    go at most 1 / this faster (roofline rule)."""
    roofline_bound: Literal["memory", "compute"] | None = None
    """Which bound `roofline_fraction` is a fraction of, as the statement says it."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.gpu_minutes_per_start is None) != (self.starts_per_day is None):
            raise ValueError("Expected `flags.gpu_minutes_per_start` and `flags.starts_per_day` together")
        if self.roofline_bound is not None and self.roofline_fraction is None:
            raise ValueError("Expected `flags.roofline_fraction` with `flags.roofline_bound`")
        self._check_mixes()

    def _check_mixes(self) -> None:
        if self.fleet_mix is not None and self.traffic_mix is not None:
            raise ValueError("Expected one of `flags.fleet_mix` or `flags.traffic_mix`, got both")
        for field, parts in (("fleet_mix", self.fleet_mix), ("traffic_mix", self.traffic_mix)):
            names = [part.name for part in parts or ()]
            if len(set(names)) != len(names):
                raise ValueError(f"Expected unique names in `flags.{field}`")
        if self.fleet_mix is not None:
            total = sum(part.gpus for part in self.fleet_mix)
            if self.fleet_gpus is None:
                self.fleet_gpus = total
            elif self.fleet_gpus != total:
                raise ValueError(
                    f"Expected `flags.fleet_gpus` to be the sum of `flags.fleet_mix` GPUs ({total}), got "
                    f"{self.fleet_gpus}"
                )
        if self.traffic_mix is not None:
            total_share = math.fsum(part.share for part in self.traffic_mix)
            if total_share > 1 + 1e-9:
                raise ValueError(f"Expected `flags.traffic_mix` shares that add up to at most 1, got {total_share:.6g}")


class Goal(Base):
    """What the work is meant to achieve: a latency, a throughput, or fitting in memory (resource_goal rule)."""

    latency_ms: Milliseconds | None = None
    throughput_per_s: PositiveFloat | None = None
    memory_required_gb: PositiveFloat | None = None
    device_memory_gb: PositiveFloat | None = None
    # --- #25: requests per step (currencies-b) ---
    requests_per_step: Annotated[int, Meta(ge=1, le=1_000_000)] | None = None
    """Requests one step (pass) serves, for a throughput goal: a batch of 48 serves 48 per step, not 1."""

    # issue #25 (part a): the proposal may be the capacity fix
    memory_after_gb: PositiveFloat | None = None
    """What the chosen execution needs after the change (`memory_required_gb` is before it): a smaller KV cache,
    activation recompute, a memory-lean kernel. Fitting is then the change's value (memory_fit rule)."""
    memory_headroom_gb: NonNegativeFloat | None = None
    """Memory to keep free on each device (fragmentation, spikes): the need must fit under capacity minus this."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.memory_after_gb is not None and (self.memory_required_gb is None or self.device_memory_gb is None):
            raise ValueError(
                "Expected `goal.memory_required_gb` (the need before) and `goal.device_memory_gb` with "
                "`goal.memory_after_gb`"
            )
        headroom, device = self.memory_headroom_gb, self.device_memory_gb
        if headroom is not None and device is not None and headroom >= device:
            raise ValueError(
                f"Expected `goal.memory_headroom_gb` below `goal.device_memory_gb` ({device}), got {headroom}"
            )


class MoreTarget(Base, kw_only=True):
    """A further phase the change speeds up: its name, its share of the measured scope (from the breakdown when it
    names a phase there), and its own k."""

    name: Name
    p: Fraction | None = None
    k: PositiveFloat | Infinite


# --- currencies a proposal trades besides time (issue #25, part a): memory, quality, added work, GPU time ----------


class QualityGate(Base):
    """The launch gate on an offline quality metric: the change may not regress it by more than `max_regression`
    (quality_gate rule). Points in the metric's own unit (accuracy points, BLEU, a perplexity)."""

    metric: Name
    baseline: float
    candidate: float
    max_regression: NonNegativeFloat
    """The largest regression allowed, in the metric's units (0.3: three tenths of a point)."""
    higher_is_better: bool = True
    """False for a metric where lower is better (perplexity, word error rate)."""


class AddedPhase(Base):
    """Work the change adds to the measured scope, per step: a dequantize, an extra copy, a second kernel."""

    name: Name
    ms: NonNegativeFloat


class Speculative(Base):
    """Speculative decoding as teams state it (added_work rule): a draft model proposes `draft_tokens` tokens, the
    target model verifies them in one pass and accepts each with probability `acceptance`."""

    draft_tokens: Annotated[int, Meta(ge=1, le=64)]
    """γ: tokens the draft model proposes per verify pass."""
    acceptance: OpenFraction
    """α: the chance each drafted token is accepted."""
    draft_cost: NonNegativeFloat
    """One draft step's time, as a multiple of one plain decode step of the target model (0.1: a tenth)."""
    verify_cost: PositiveFloat
    """One verify pass over γ + 1 tokens, as a multiple of one plain decode step (1.3: 30% longer)."""


class AddedWork(Base):
    """What the change adds to the target's own time, so that `k` is derived end to end (added_work rule)."""

    phases: list[AddedPhase] | None = None
    speculative: Speculative | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.phases and self.speculative is None:
            raise ValueError("Expected `added_work.phases` or `added_work.speculative`, got neither")


Sentence = Annotated[str, Meta(min_length=1, max_length=1000, pattern=TEXT_PATTERN)]


class ReplayLosses(Base):
    """Where the saving Amdahl's share promises went in the replay, ms per step: hidden under other streams' work
    (`overlap`), eaten by the GPU waiting on the host (`launch`), by device work the host does not wait for
    (`sync`), by ranks waiting for a slower one (`ranks`). They add up to Amdahl's saving less the replay's."""

    overlap: float = 0.0
    launch: float = 0.0
    sync: float = 0.0
    ranks: float = 0.0


class Replay(Base):
    """The change replayed on the trace of the proposal's profile (`rules.profiles.proposal.replayed`): each step's
    mean over `steps`, measured, as Amdahl's share says it becomes, and as the replay of the trace's schedule with
    the targets k times faster predicts it. Set by worthit from the profile, never by a client (see `Proposal`)."""

    steps: Name
    """The steps replayed (``ProfilerStep#5..ProfilerStep#10``): the step the figures speak of is one of them."""
    step_ms: Milliseconds
    amdahl_ms: NonNegativeFloat
    predicted_ms: NonNegativeFloat
    lost_ms: ReplayLosses = msgspec.field(default_factory=ReplayLosses)
    reason: Sentence | None = None
    """Why the replay saves less than Amdahl's share (the largest loss), as a clause."""
    better_target: Sentence | None = None
    """Where the replay finds the step's time instead (None when Amdahl's share holds)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.amdahl_ms > self.step_ms:
            raise ValueError(f"Expected `amdahl_ms` <= `step_ms`, got {self.amdahl_ms} > {self.step_ms}")

    @property
    def amdahl_saving_ms(self) -> float:
        """What Amdahl's share takes off each step."""
        return self.step_ms - self.amdahl_ms

    @property
    def saving_ms(self) -> float:
        """What the replay takes off each step (negative when it predicts a longer step)."""
        return self.step_ms - self.predicted_ms


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
    # --- #25: several targets in one proposal (currencies-b) ---
    more_targets: Annotated[list[MoreTarget], Meta(min_length=1, max_length=64)] | None = None
    """Further phases the same change speeds up, each with its own k (a grouped GEMM removes both GEMM time and the
    launch gaps between per-expert calls): their savings add to the target's in ms, speedups never multiply (amdahl
    rule)."""
    # issue #25 (part a): effects besides time on the target
    quality: QualityGate | None = None
    """The quality metric the change moves and its launch gate (quality_gate rule)."""
    added_work: AddedWork | None = None
    """Work the change adds (added_work rule): `k` is then the target's own speedup before it."""
    # costs besides engineer-weeks
    cost_gpu_hours: Annotated[float, Meta(ge=0, le=1e12)] | None = None
    """One-off GPU-hours the work costs (a distillation or QAT run, an autotuning campaign), priced at the
    policy's `gpu_hour_usd` and added to the one cost (rules.worth)."""
    cost_people: Annotated[int, Meta(ge=1, le=100_000)] | None = None
    """People on the work for `cost_calendar_weeks`: `cost_weeks` is their product (3 people for 6 weeks: 18)."""
    cost_calendar_weeks: Annotated[float, Meta(ge=0, le=10_000)] | None = None
    """Calendar weeks the `cost_people` work for."""
    replay: Replay | None = None
    """The change replayed on the profile's trace, which the engine then decides on (replayed_saving rule). Only
    worthit sets it, from `profile_id` or `review --profile`; a client's is refused without `profile_id` and
    replaced by the profile's own with it."""

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
        self._check_people()
        if self.replay is not None and self.profile_id is None:
            raise ValueError("Expected no `replay`: worthit replays the trace of `profile_id`, never a client")
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
        self._check_more_targets()
        self._check_magnitudes()

    def _check_people(self) -> None:
        """People × calendar weeks is the engineer-weeks: derived when `cost_weeks` is unsaid, else it must agree."""
        people, calendar = self.cost_people, self.cost_calendar_weeks
        if (people is None) != (calendar is None):
            raise ValueError("Expected `cost_people` and `cost_calendar_weeks` together")
        if people is None or calendar is None:
            return
        derived = people * calendar
        if self.cost_weeks is None:
            self.cost_weeks = derived
        elif not math.isclose(self.cost_weeks, derived, rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(
                f"Expected `cost_weeks` to be `cost_people` × `cost_calendar_weeks` ({derived:.6g}), got "
                f"{self.cost_weeks}"
            )

    def _check_more_targets(self) -> None:
        """Several targets are disjoint phases of one scope: distinct, each with a share (their sum is checked against
        the scope by the consistency rule, a decision rather than a refusal)."""
        more = self.more_targets
        barrier = self.flags.barrier
        p_high = self.p.high if isinstance(self.p, Range) else self.p
        if barrier is not None and barrier.target_wait is not None and p_high is not None:
            p_low = self.p.low if isinstance(self.p, Range) else self.p
            if p_low is not None and barrier.target_wait > p_low:
                raise ValueError(
                    f"Expected `flags.barrier.target_wait` <= `p` (the wait is inside the target's own time), got "
                    f"{barrier.target_wait} > {p_low}"
                )
        arrivals = (barrier.arrivals if barrier is not None else None) or ()
        per_rank = {name for arrival in arrivals for name in arrival.more_ms or ()}
        unknown = sorted(per_rank - {extra.name for extra in more or ()})
        if unknown:
            raise ValueError(
                f"Expected `flags.barrier.arrivals[].more_ms` to name `more_targets`, got {', '.join(unknown)}"
            )
        if not more:
            return
        names = [extra.name for extra in more]
        if len(set(names)) != len(names) or self.target in names:
            raise ValueError("Expected `more_targets` names distinct from each other and from `target`")
        phases = {phase.name: phase for phase in self.breakdown or ()}
        # Shares that add up to more than the scope are a contradiction in what was measured (inclusive shares from a
        # profiler's summary), not a malformed request: the consistency rule asks to remeasure, naming the sum.
        for i, extra in enumerate(more):
            if extra.p is None and extra.name not in phases:
                raise ValueError(
                    f"Expected `more_targets[{i}].p`, or a phase named `{extra.name}` in `breakdown` to read it from"
                )

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
        prior = self.prior_k
        if isinstance(prior, float | int) and not math.isfinite(1.0 / prior):
            raise ValueError(
                f"Expected `prior_k` large enough that its headroom (1 − 1/k) is a finite share, got {prior}"
            )
        goal = self.goal
        memory = (goal.memory_required_gb, goal.device_memory_gb) if goal is not None else (None, None)
        usable = memory[1]
        if usable is not None and goal is not None and goal.memory_headroom_gb is not None:
            usable -= goal.memory_headroom_gb
        if memory[0] is not None and usable is not None and not math.isfinite(memory[0] / usable):
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
