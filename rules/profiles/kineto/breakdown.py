"""A parsed trace's window → one `Breakdown`: phases, device activity, input wait, per-step figures.

Device work becomes phases by kernel name / copy direction, with unions over streams and devices; NCCL/RCCL kernels
are communication (kind ``comm``), apart from compute. Top-level CPU ops are phases of host time, clipped to the
window; ``gpu_user_annotation`` ranges are phases of kind ``annotation`` (they contain kernels, so they are not
device time of their own). A trace without device intervals says it holds no device timeline.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Sequence

import msgspec

from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.intervals import union_length, union_length_arrays
from worthit.rules.profiles.kineto.parse import FORMAT, Parsed, Step
from worthit.rules.profiles.kineto.steps import Window
from worthit.rules.profiles.model import (
    Activity,
    Breakdown,
    Kind,
    Measured,
    StepFigures,
    timed_breakdown,
)
from worthit.rules.profiles.naming import is_input_op

#: Step figures kept in a breakdown (per rank): enough for any range a proposal names, bounded for storage.
MAX_STEP_FIGURES = 512
DEVICE_KINDS: frozenset[Kind] = frozenset({"kernel", "comm", "copy", "other"})


def empty_activity() -> Activity:
    """The activity of a device that ran nothing."""
    return Activity(span_ns=0, busy_ns=0, compute_ns=0, comm_ns=0, overlap_ns=0, copy_ns=0, idle_ns=0, kernels=0)


def activity_at(p: Parsed, chosen: Sequence[int]) -> Activity:
    """The split of one device timeline: the device events at indexes `chosen` of `p`'s columns, each kind's
    intervals gathered by C loops (`map` over the columns), not one Python tuple per event."""
    if not chosen:
        return empty_activity()
    kinds, starts, ends = p.dev_kind, p.dev_start, p.dev_end
    of_kind: dict[str, list[int]] = {"kernel": [], "comm": [], "copy": []}
    for i in chosen:
        picked = of_kind.get(kinds[i])
        if picked is not None:
            picked.append(i)
    # Columns, not lists of pairs: a million kernels cost 16 MB here, not 200.
    (compute_s, compute_e), (comm_s, comm_e), (copy_s, copy_e) = (
        (array("q", map(starts.__getitem__, picked)), array("q", map(ends.__getitem__, picked)))
        for picked in of_kind.values()
    )
    every_s = array("q", map(starts.__getitem__, chosen))
    every_e = array("q", map(ends.__getitem__, chosen))
    busy = union_length_arrays(every_s, every_e)
    compute_ns, comm_ns = union_length_arrays(compute_s, compute_e), union_length_arrays(comm_s, comm_e)
    overlap = (
        compute_ns + comm_ns - union_length_arrays(compute_s + comm_s, compute_e + comm_e)
        if compute_s and comm_s
        else 0
    )
    span = max(every_e) - min(every_s)
    return Activity(
        span_ns=span,
        busy_ns=busy,
        compute_ns=compute_ns,
        comm_ns=comm_ns,
        overlap_ns=overlap,
        copy_ns=union_length_arrays(copy_s, copy_e),
        idle_ns=span - busy,
        kernels=len(compute_s) + len(comm_s),
    )


def _selected(p: Parsed, window: Window) -> array[int]:
    if window.lo is None and window.hi is None:
        return array("q", range(len(p.dev_launch)))
    lo, hi = window.bounds()
    return array("q", [i for i, launch in enumerate(p.dev_launch) if lo <= launch < hi])


def window_breakdown(p: Parsed, window: Window) -> Breakdown:
    """The breakdown of the work `window` selects of `p`, with the figures of each of its steps."""
    chosen = _selected(p, window)
    # Per phase the indexes of its events (8 bytes each), their intervals read from the columns when measured.
    per_device: dict[tuple[str, Kind], array[int]] = defaultdict(lambda: array("q"))
    for i in chosen:
        per_device[(p.dev_name[i], p.dev_kind[i])].append(i)
    per_phase: dict[tuple[str, Kind], list[tuple[int, int]]] = defaultdict(list)
    # CPU ops are host time: clipped to the window (an op running past a step's end counts up to it).
    lo, hi = window.bounds()
    # An op wholly inside stays the same tuple: a list of references, not a copy of every op.
    cpu = [
        op if lo <= op[0] and op[1] <= hi else (max(op[0], lo), min(op[1], hi), op[2])
        for op in p.cpu
        if op[0] < hi and op[1] > lo
    ]
    per_cpu: dict[str, tuple[array[int], array[int]]] = {}
    for s, e, n in cpu:
        pair = per_cpu.get(n)
        if pair is None:
            pair = per_cpu[n] = (array("q"), array("q"))
        pair[0].append(s)
        pair[1].append(e)
    for s, e, n in p.annotations:
        if window.holds(s):
            per_phase[(n, "annotation")].append((s, e))
    act = activity_at(p, chosen) if chosen else None
    if act is not None:
        act = msgspec.structs.replace(act, input_ns=_input_wait(p, chosen, cpu))
    starts = [s for s, _, _ in cpu]
    ends = [e for _, e, _ in cpu]
    if chosen:
        starts.append(min(p.dev_start[i] for i in chosen))
        ends.append(max(p.dev_end[i] for i in chosen))
    inside = [i for i, s in enumerate(p.other_start) if lo <= s < hi]
    if inside:
        starts.append(min(map(p.other_start.__getitem__, inside)))
        ends.append(max(map(p.other_end.__getitem__, inside)))
    if not starts:
        raise ProfileError(f"no events in steps {window.label}", format_expected=FORMAT)
    wall = max(ends) - min(starts)
    measured: list[Measured] = []
    for (name, kind), indexes in per_device.items():
        total = union_length_arrays(map(p.dev_start.__getitem__, indexes), map(p.dev_end.__getitem__, indexes))
        measured.append((name, kind, total, len(indexes), True))
    for name, (cpu_s, cpu_e) in per_cpu.items():
        measured.append((name, "cpu_op", union_length_arrays(cpu_s, cpu_e), len(cpu_s), False))
    for (name, kind), intervals in per_phase.items():
        measured.append((name, kind, union_length(intervals), len(intervals), kind in DEVICE_KINDS))
    notes = ["CPU ops are top-level per thread (nested ops are inside their parent's time)."]
    if window.note:
        notes.insert(0, window.note)
    if p.threads_overlap_ns:
        notes.append(
            f"Top-level CPU ops on different threads overlap for {p.threads_overlap_ns} ns: "
            "cpu_op shares of one window can sum above 1."
        )
    timeline = bool(p.dev_start)
    if not timeline:
        notes.insert(0, _no_timeline(p))
    if act is not None and act.comm_ns:
        notes.append(
            "Communication kernels (NCCL/RCCL) are kind comm: a compute kernel's share is given of device activity, "
            "of compute-only time and of wall."
        )
    b = timed_breakdown(
        FORMAT,
        measured,
        wall=wall,
        notes=notes,
        steps=len(window.steps) or None,
        scope=window.label,
        device_timeline=timeline,
        activity=act,
        rank=p.rank,
        world_size=p.world_size,
    )
    b.step_figures = step_figures(p, window.steps[:MAX_STEP_FIGURES], None)
    return b


def _input_wait(p: Parsed, chosen: array[int], cpu: list[tuple[int, int, str]]) -> int:
    """Time inside the host's DataLoader ops during which no device work ran: the GPU waiting on data."""
    loading = [(s, e) for s, e, name in cpu if is_input_op(name)]
    return _idle_within(loading, [(p.dev_start[i], p.dev_end[i]) for i in chosen]) if loading else 0


def _idle_within(host: list[tuple[int, int]], device: list[tuple[int, int]]) -> int:
    """How much of the `host` intervals no `device` interval covers."""
    if not host:
        return 0
    return union_length(host + device) - union_length(device)


def _no_timeline(p: Parsed) -> str:
    if p.profiler_ranges:
        return (
            f"No device timeline: this is a CUPTI range-profiler run ({p.profiler_ranges} cuda_profiler_range spans "
            "hold counters, not device start/end times), so no kernel has a device share; profile with the "
            "trace (ProfilerActivity.CUDA) to measure one."
        )
    return (
        "No device timeline: the trace holds no kernels, copies or memsets (a CPU-only run), so no kernel has a "
        "device share."
    )


def step_figures(p: Parsed, steps: list[Step], rank: int | None) -> list[StepFigures]:
    """Per step: the device work it launched (phases, activity), its host duration and its input wait."""
    if not steps:
        return []
    order = array("q", sorted(range(len(p.dev_launch)), key=p.dev_launch.__getitem__))
    launches = array("q", (p.dev_launch[i] for i in order))
    loading = [(s, e, n) for s, e, n in p.cpu if is_input_op(n)]
    # The device is idle only when no work runs at all, whichever step launched it: every interval by start.
    by_start = sorted(zip(p.dev_start, p.dev_end, strict=True)) if loading else []
    starts = [s for s, _ in by_start]
    longest = max((e - s for s, e in by_start), default=0)
    out = []
    for step in steps:
        chosen = order[bisect_left(launches, step.start) : bisect_left(launches, step.end)]
        inside = [(max(s, step.start), min(e, step.end)) for s, e, n in loading if s < step.end and e > step.start]
        running = by_start[bisect_left(starts, step.start - longest) : bisect_left(starts, step.end)] if inside else []
        per_phase: dict[str, array[int]] = defaultdict(lambda: array("q"))
        for i in chosen:
            per_phase[p.dev_name[i]].append(i)
        out.append(
            StepFigures(
                name=step.name,
                number=step.number,
                rank=rank,
                wall_ns=step.end - step.start,
                activity=msgspec.structs.replace(
                    activity_at(p, chosen),
                    input_ns=_idle_within(inside, running),
                ),
                phases={
                    name: union_length_arrays(map(p.dev_start.__getitem__, iv), map(p.dev_end.__getitem__, iv))
                    for name, iv in per_phase.items()
                },
            )
        )
    return out


__all__ = [
    "DEVICE_KINDS",
    "MAX_STEP_FIGURES",
    "activity_at",
    "empty_activity",
    "step_figures",
    "window_breakdown",
]
