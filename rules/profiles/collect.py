"""Accumulates intervals per phase while a reader streams, then turns them into a Breakdown.

Readers call `add` once per row; the collector keeps two flat ``array('q')`` per phase (8 bytes per
timestamp, no per-row Python objects kept), so a million-row trace costs tens of MB, not hundreds.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

from worthit.rules.profiles.budget import held_names
from worthit.rules.profiles.intervals import union_length_arrays
from worthit.rules.profiles.model import (
    Activity,
    Breakdown,
    Kind,
    Phase,
    largest_first,
    share,
    timed_breakdown,
)


@dataclass(slots=True)
class PhaseIntervals:
    """The intervals of one phase collected so far."""

    kind: Kind
    device: bool
    starts: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))


@dataclass(slots=True)
class Collector:
    """Intervals of every phase of one run, possibly from several files."""

    phases: dict[tuple[str, Kind], PhaseIntervals] = field(default_factory=dict)
    summed: list[Phase] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    formats: list[str] = field(default_factory=list)
    steps: int | None = None

    def slot(self, name: str, kind: Kind, *, device: bool) -> PhaseIntervals:
        """The interval store of phase (name, kind), created on first use (readers cache it per name)."""
        key = (name, kind)
        found = self.phases.get(key)
        if found is None:
            held_names(1)
            found = self.phases[key] = PhaseIntervals(kind=kind, device=device)
        return found

    def add(self, name: str, kind: Kind, start: int, end: int, *, device: bool = True) -> None:
        """Record one interval of a phase."""
        slot = self.slot(name, kind, device=device)
        slot.starts.append(start)
        slot.ends.append(end)

    def bounds(self) -> dict[tuple[str, Kind], int]:
        """A mark of what has been collected so far (intervals per phase), for `bounds_since`."""
        return {key: len(slot.starts) for key, slot in self.phases.items()}

    def bounds_since(self, mark: dict[tuple[str, Kind], int]) -> tuple[int, int]:
        """First start and last end of the intervals added after `mark` (one file's time range)."""
        lo: int | None = None
        hi: int | None = None
        for key, slot in self.phases.items():
            at = mark.get(key, 0)
            if len(slot.starts) > at:
                first, last = min(slot.starts[at:]), max(slot.ends[at:])
                lo = first if lo is None else min(lo, first)
                hi = last if hi is None else max(hi, last)
        return (lo or 0, hi or 0)

    def note(self, text: str) -> None:
        """Add a note once."""
        if text not in self.notes:
            self.notes.append(text)

    def finish(self, fmt: str) -> Breakdown:
        """The breakdown of everything collected: unions per phase, over the device and over the run."""
        lo: int | None = None
        hi: int | None = None
        device_starts = array("q")
        device_ends = array("q")
        interval_phases: list[tuple[str, Kind, int, int, bool]] = []
        by_kind: dict[Kind, tuple[array[int], array[int]]] = {}
        for (name, kind), slot in self.phases.items():
            if not slot.starts:
                continue
            first, last = min(slot.starts), max(slot.ends)
            lo = first if lo is None else min(lo, first)
            hi = last if hi is None else max(hi, last)
            if slot.device:
                device_starts.extend(slot.starts)
                device_ends.extend(slot.ends)
                pair = by_kind.setdefault(kind, (array("q"), array("q")))
                pair[0].extend(slot.starts)
                pair[1].extend(slot.ends)
            total = union_length_arrays(slot.starts, slot.ends)
            interval_phases.append((name, kind, total, len(slot.starts), slot.device))
        wall = None if lo is None or hi is None else hi - lo
        busy = union_length_arrays(device_starts, device_ends) if device_starts else None
        act = _activity(by_kind, busy, device_starts, device_ends) if busy is not None else None
        only_summed = not interval_phases and bool(self.summed)
        notes = list(self.notes)
        if interval_phases and self.summed:
            notes.append(
                "Phases marked inclusive are summed durations from a stats table: they may contain or overlap "
                "other phases (an API call contains the copy it triggers); do not add them to the others."
            )
        return timed_breakdown(
            fmt,
            interval_phases,
            wall=wall,
            activity=act,
            notes=notes,
            summed=[_rebase(p, wall) for p in self.summed],
            inclusive=only_summed,
            steps=self.steps,
        )


def _activity(
    by_kind: dict[Kind, tuple[array[int], array[int]]], busy: int, starts: array[int], ends: array[int]
) -> Activity:
    """Compute, communication, their overlap, copies and idle time of the pooled device intervals."""
    empty: tuple[array[int], array[int]] = (array("q"), array("q"))
    compute_s, compute_e = by_kind.get("kernel", empty)
    comm_s, comm_e = by_kind.get("comm", empty)
    compute = union_length_arrays(compute_s, compute_e) if comm_s else None
    comm = union_length_arrays(comm_s, comm_e) if comm_s else 0
    overlap = 0
    if comm_s and compute_s and compute is not None:
        overlap = compute + comm - union_length_arrays(compute_s + comm_s, compute_e + comm_e)
    copy_s, copy_e = by_kind.get("copy", empty)
    span = max(ends) - min(starts)
    if compute is None:
        # No communication: compute time is the kernels' union, computed once more only when other work exists.
        others = sum(len(s) for kind, (s, _) in by_kind.items() if kind != "kernel")
        compute = busy if not others else union_length_arrays(compute_s, compute_e) if compute_s else 0
    return Activity(
        span_ns=span,
        busy_ns=busy,
        compute_ns=compute,
        comm_ns=comm,
        overlap_ns=overlap,
        copy_ns=union_length_arrays(copy_s, copy_e) if copy_s else 0,
        idle_ns=span - busy,
        kernels=len(compute_s) + len(comm_s),
    )


def _rebase(phase: Phase, wall: int | None) -> Phase:
    """A summed phase joined to a traced run: its share of wall against the traced span; no device share."""
    return Phase(
        name=phase.name,
        kind=phase.kind,
        total_ns=phase.total_ns,
        calls=phase.calls,
        share_of_device=None,
        share_of_wall=share(phase.total_ns, wall),
        inclusive=True,
        share_of_sum=phase.share_of_sum,
    )


def summed_breakdown(
    fmt: str,
    rows: Iterable[tuple[str, Kind, int, int]],
    *,
    notes: list[str],
    device_table: bool,
) -> Breakdown:
    """A breakdown from a table of summed durations: (name, kind, total_ns, calls) per row.

    No intervals exist, so no union can be formed: `wall_ns` is None, and for device tables
    `device_busy_ns` is the summed time — an upper bound on the busy time, reached only when nothing
    ran concurrently. The shares are then the profiler's own percentages, of summed time.
    """
    rows = list(rows)
    summed = sum(r[2] for r in rows)
    busy = summed if device_table else None
    phases = [
        Phase(
            name=name,
            kind=kind,
            total_ns=total,
            calls=calls,
            share_of_device=share(total, busy),
            share_of_wall=None,
            inclusive=True,
            share_of_sum=share(total, summed),
        )
        for name, kind, total, calls in rows
    ]
    return Breakdown(
        format=fmt,
        wall_ns=None,
        device_busy_ns=busy,
        phases=largest_first(phases),
        inclusive=True,
        notes=notes,
    )
