"""Accumulates intervals per phase while a reader streams, then turns them into a Breakdown.

Readers call `add` once per row; the collector keeps two flat ``array('q')`` per phase (8 bytes per
timestamp, no per-row Python objects kept), so a million-row trace costs tens of MB, not hundreds.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

from worthit.rules.profiles.intervals import union_length_arrays
from worthit.rules.profiles.model import Breakdown, Kind, Phase, largest_first, share

#: Kinds of work that run on a device. Memsets are device work of kind "other".
DEVICE_KINDS: frozenset[Kind] = frozenset({"kernel", "copy", "other"})


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
            found = self.phases[key] = PhaseIntervals(kind=kind, device=device)
        return found

    def add(self, name: str, kind: Kind, start: int, end: int, *, device: bool = True) -> None:
        """Record one interval of a phase."""
        slot = self.slot(name, kind, device=device)
        slot.starts.append(start)
        slot.ends.append(end)

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
        for (name, kind), slot in self.phases.items():
            if not slot.starts:
                continue
            first, last = min(slot.starts), max(slot.ends)
            lo = first if lo is None else min(lo, first)
            hi = last if hi is None else max(hi, last)
            if slot.device:
                device_starts.extend(slot.starts)
                device_ends.extend(slot.ends)
            total = union_length_arrays(slot.starts, slot.ends)
            interval_phases.append((name, kind, total, len(slot.starts), slot.device))
        wall = None if lo is None or hi is None else hi - lo
        busy = union_length_arrays(device_starts, device_ends) if device_starts else None
        phases = [
            Phase(
                name=name,
                kind=kind,
                total_ns=total,
                calls=calls,
                share_of_device=share(total, busy) if on_device else None,
                share_of_wall=share(total, wall),
            )
            for name, kind, total, calls, on_device in interval_phases
        ]
        phases.extend(_rebase(p, wall) for p in self.summed)
        only_summed = not interval_phases and bool(self.summed)
        notes = list(self.notes)
        if interval_phases and self.summed:
            notes.append(
                "Phases marked inclusive are summed durations from a stats table: they may contain or overlap "
                "other phases (an API call contains the copy it triggers); do not add them to the others."
            )
        return Breakdown(
            format=fmt,
            wall_ns=wall,
            device_busy_ns=busy,
            phases=largest_first(phases),
            inclusive=only_summed,
            notes=notes,
            steps=self.steps,
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
