"""The breakdown every reader produces: phases with totals, calls and honest shares.

Shares are computed against two denominators, because the seeds' sharpest lesson is that p measured
against the wrong one leads to the wrong decision: `share_of_device` (of the time any device was busy)
and `share_of_wall` (of the span of the whole recording).
"""

from __future__ import annotations

from typing import Literal

import msgspec

Kind = Literal["kernel", "copy", "alloc", "api", "cpu_op", "other"]
KINDS: tuple[Kind, ...] = ("kernel", "copy", "alloc", "api", "cpu_op", "other")


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


class Breakdown(msgspec.Struct, kw_only=True):
    """A profile reduced to what the Amdahl arithmetic needs.

    `wall_ns`: first start to last end over everything recorded (None for summed tables, which have no
    timestamps). `device_busy_ns`: union of all device work (kernels, copies, memsets) over all queues,
    streams and devices. `inclusive`: every phase is a summed total (stats and summary tables) — its
    percentages overlap and do not sum to 100. `steps`: the number of training/inference steps marked in
    the recording, when the format marks them. `scope` names a part of the recording the breakdown is
    limited to (a step such as "ProfilerStep#3"), None for the whole file. `notes` say which denominators
    are approximations and why.
    """

    format: str
    wall_ns: int | None
    device_busy_ns: int | None
    phases: list[Phase]
    inclusive: bool
    notes: list[str] = msgspec.field(default_factory=list)
    steps: int | None = None
    scope: str | None = None


def share(part: int, whole: int | None) -> float | None:
    """`part / whole`, or None when the denominator is unknown or zero."""
    if not whole:
        return None
    return part / whole


def largest_first(phases: list[Phase]) -> list[Phase]:
    """Phases ordered by total time, largest first; ties by name so the order is stable."""
    return sorted(phases, key=lambda p: (-p.total_ns, p.name))
