"""The breakdown every reader produces: phases with totals, calls and honest shares.

Shares are computed against two denominators, because the seeds' sharpest lesson is that p measured
against the wrong one leads to the wrong decision: `share_of_device` (of the time any device was busy)
and `share_of_wall` (of the span of the whole recording).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import msgspec

# "comm": collective/point-to-point communication kernels (NCCL, RCCL), kept apart from compute as HTA does;
# "annotation": a user range on the device timeline (gpu_user_annotation) that contains other device work.
Kind = Literal["kernel", "comm", "copy", "alloc", "api", "cpu_op", "annotation", "other"]
KINDS: tuple[Kind, ...] = ("kernel", "comm", "copy", "alloc", "api", "cpu_op", "annotation", "other")


class Phase(msgspec.Struct, kw_only=True, frozen=True):
    """One named piece of the recording: a kernel, a copy direction, an API call, a CPU op.

    `total_ns` is the union of the phase's own intervals when the format has intervals (concurrent calls of
    the same kernel on two queues count once), else the summed duration printed by the profiler.
    `inclusive` is True for summed totals: they may overlap other phases and must not be added up.
    `share_of_sum` is the total over the summed durations of its table (what the profiler's own
    Percentage / Time (%) / PERCENT (INC) column shows); None for phases from intervals.
    """

    name: str
    kind: Kind
    total_ns: int
    calls: int
    share_of_device: float | None
    share_of_wall: float | None
    inclusive: bool = False
    share_of_sum: float | None = None
    share_of_compute: float | None = None
    """A compute kernel's total over compute-only device time (communication and copies left out)."""


class Activity(msgspec.Struct, kw_only=True, frozen=True):
    """How one device timeline (a run, a rank, a step) splits, each figure a union of intervals in ns.

    `span_ns`: first device start to last device end. `busy_ns`: union of all device work. `compute_ns`: union
    of compute kernels; `comm_ns`: union of communication kernels; `overlap_ns`: time both ran at once (so
    compute + comm - overlap is their union); `copy_ns`: union of memory copies; `idle_ns`: span - busy.
    `kernels`: how many kernels (compute and communication) ran. `input_ns`: time no device work ran while the
    host was inside the input pipeline (PyTorch's ``enumerate(DataLoader)`` ops), over the whole recording: the
    GPU waiting on data (0 where the profile has no host timeline).
    """

    span_ns: int
    busy_ns: int
    compute_ns: int
    comm_ns: int
    overlap_ns: int
    copy_ns: int
    idle_ns: int
    kernels: int
    input_ns: int = 0


class StepFigures(msgspec.Struct, kw_only=True):
    """One ``ProfilerStep#N`` (of one rank): its host duration, the device work launched in it, its phases.

    `phases` maps a device phase's full name to its union in ns within the step, so a range of steps can be
    re-read from a stored profile without the raw file. `wait_ns` is the time the rank waited inside
    collectives for the step's straggler (distributed runs only).
    """

    name: str
    number: int
    rank: int | None
    wall_ns: int
    activity: Activity
    phases: dict[str, int] = msgspec.field(default_factory=dict)
    wait_ns: int | None = None
    straggler: bool | None = None


class RankFigures(msgspec.Struct, kw_only=True):
    """One rank of a distributed run: its file, its device activity and device phases over the selected steps."""

    rank: int
    file: str | None
    wall_ns: int
    activity: Activity | None
    phases: list[Phase]
    wait_ns: int = 0


class BarrierFigures(msgspec.Struct, kw_only=True, frozen=True):
    """A distributed run's barrier, measured: what `flags.barrier` of a proposal gets from the profile.

    `straggler`: the rank whose compute sets the steps (the one slowest in most selected steps).
    `wait_fraction`: of all ranks' step time, the share spent waiting inside collectives for the straggler.
    `step_ns`: the selected steps' total duration on the straggler.
    """

    ranks: int
    world_size: int | None
    straggler: int
    wait_fraction: float
    wait_ns: int
    step_ns: int
    steps: int


class Breakdown(msgspec.Struct, kw_only=True):
    """A profile reduced to what the Amdahl arithmetic needs.

    `wall_ns`: first start to last end over everything recorded (None for summed tables, which have no
    timestamps). `device_busy_ns`: union of all device work (kernels, copies, memsets) over all queues,
    streams and devices. `inclusive`: every phase is a summed total (stats and summary tables) — its
    percentages overlap and do not sum to 100. `steps`: the number of training/inference steps marked in
    the recording, when the format marks them. `scope` names a part of the recording the breakdown is
    limited to (a step such as "ProfilerStep#3"), None for the whole file. `notes` say which denominators
    are approximations and why. `activity` splits the device timeline into compute, communication, their
    overlap, copies and idle time; `step_figures` gives that per step (and per rank); `ranks` and `barrier`
    describe a distributed run read as one.
    """

    format: str
    wall_ns: int | None
    device_busy_ns: int | None
    phases: list[Phase]
    inclusive: bool
    notes: list[str] = msgspec.field(default_factory=list)
    steps: int | None = None
    scope: str | None = None
    device_timeline: bool = True
    """False when the recording holds no device intervals (a CUPTI range-profiler run, a CPU-only run)."""
    activity: Activity | None = None
    step_figures: list[StepFigures] = msgspec.field(default_factory=list)
    ranks: list[RankFigures] = msgspec.field(default_factory=list)
    barrier: BarrierFigures | None = None
    rank: int | None = None
    """The rank this recording is of, when it is one rank's trace of a distributed run (``distributedInfo``)."""
    world_size: int | None = None
    """How many ranks the run had (``distributedInfo.world_size``), of which this recording holds `rank` alone
    (None when the trace does not say; for several ranks read as one, `barrier.world_size`)."""


def share(part: int, whole: int | None) -> float | None:
    """`part / whole`, or None when the denominator is unknown or zero."""
    if not whole:
        return None
    return part / whole


def timed_phase(
    name: str,
    kind: Kind,
    total: int,
    calls: int,
    *,
    busy: int | None,
    wall: int | None,
    compute: int | None,
    on_device: bool = True,
) -> Phase:
    """A phase measured from intervals, with its shares of device activity, of wall and (a compute kernel's) of
    compute-only time: the three denominators every reader reports alike."""
    return Phase(
        name=name,
        kind=kind,
        total_ns=total,
        calls=calls,
        share_of_device=share(total, busy) if on_device else None,
        share_of_wall=share(total, wall),
        share_of_compute=share(total, compute) if kind == "kernel" and on_device else None,
    )


def largest_first(phases: list[Phase]) -> list[Phase]:
    """Phases ordered by total time, largest first; ties by name so the order is stable."""
    return sorted(phases, key=lambda p: (-p.total_ns, p.name))


Measured = tuple[str, Kind, int, int, bool]
"""A phase measured from intervals: its name, kind, union in ns, calls, and whether it ran on the device."""


def timed_breakdown(
    fmt: str,
    measured: Iterable[Measured],
    *,
    wall: int | None,
    activity: Activity | None,
    notes: list[str],
    summed: Iterable[Phase] = (),
    inclusive: bool = False,
    steps: int | None = None,
    scope: str | None = None,
    device_timeline: bool = True,
    rank: int | None = None,
    world_size: int | None = None,
) -> Breakdown:
    """The breakdown of a recording with intervals, as every such reader assembles it: each `measured` phase with its
    shares of device activity, of wall and of compute-only time (`timed_phase`, the denominators read off
    `activity`), then the `summed` phases of a stats table joined to it as they are, largest first."""
    busy = activity.busy_ns if activity is not None else None
    compute = activity.compute_ns if activity is not None else None
    phases = [
        timed_phase(name, kind, total, calls, busy=busy, wall=wall, compute=compute, on_device=on_device)
        for name, kind, total, calls, on_device in measured
    ]
    phases.extend(summed)
    return Breakdown(
        format=fmt,
        wall_ns=wall,
        device_busy_ns=busy,
        phases=largest_first(phases),
        inclusive=inclusive,
        notes=notes,
        steps=steps,
        scope=scope,
        device_timeline=device_timeline,
        activity=activity,
        rank=rank,
        world_size=world_size,
    )


__all__ = [
    "KINDS",
    "Activity",
    "BarrierFigures",
    "Breakdown",
    "Kind",
    "Measured",
    "Phase",
    "RankFigures",
    "StepFigures",
    "largest_first",
    "share",
    "timed_breakdown",
    "timed_phase",
]
