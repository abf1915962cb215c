"""Bounded breakdowns: the largest phases kept by name, the rest folded into one phase per kind.

A trace of 50,000 distinct kernels made a 2.6 MB decision and a page over thirty of them built 306 MB. Nobody
reads the 50,000th kernel; what matters is the top of the list and how much the rest weighs. So a stored
breakdown keeps at most `MAX_PHASES` phases: the largest, and for the others one "the rest" phase per kind (and
per summed/traced), whose time, calls and shares are their sums — so shares still add up as before, per kind.
A proposal's own phases are folded the same way by `proposal.fold_proposal_phases`, the one module of the readers
that knows the engine's types.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from worthit.rules.phase_names import REST_PREFIX
from worthit.rules.profiles.model import Breakdown, Phase, largest_first
from worthit.rules.profiles.naming import STORED_NAME_MAX, short_name

#: At most this many phases in a proposal's or decision's breakdown (what pages and histories render).
MAX_PHASES = 64
#: At most this many phases in a stored profile: enough that a target can name any kernel anyone would speed up
#: (one at the 1,024th place of a trace is a tiny share), bounded so a 50,000-kernel trace stays a small row.
PROFILE_MAX_PHASES = 1024
#: At most this many step figures in a stored profile (of all ranks together), as a trace's reader keeps.
PROFILE_MAX_STEPS = 512
#: At most this many bytes of JSON in a stored profile's breakdown by default (`WORTHIT_MAX_STORED_PROFILE_BYTES`):
#: every read of it (a GET, a proposal naming it) loads this much, so one write must not make reads hundreds of MB.
PROFILE_MAX_BYTES = 8 * 1024**2


def rest_name(kind: str, count: int, inclusive: bool = False) -> str:
    """The folded phase's name: says what it holds, so a reader never mistakes it for one kernel."""
    return f"{REST_PREFIX}{count:,} {kind} phases{', summed' if inclusive else ''})"


def fold_phases(phases: list[Phase], limit: int = MAX_PHASES, keep: frozenset[str] = frozenset()) -> list[Phase]:
    """`phases` with at most `limit` entries: the largest (and those named in `keep`) as they are, the others folded
    per (kind, inclusive) into one phase each. The order of the kept phases is preserved."""
    if len(phases) <= limit:
        return phases
    ranked = largest_first(phases)
    pinned = [p for p in ranked if p.name in keep]
    others = [p for p in ranked if p.name not in keep]
    n = max(limit - len(pinned) - 1, 0)
    while n > 0 and n + len(pinned) + len({(p.kind, p.inclusive) for p in others[n:]}) > limit:
        n -= 1
    kept = {p.name for p in pinned} | {p.name for p in others[:n]}
    groups: dict[tuple[str, bool], list[Phase]] = {}
    for phase in others[n:]:
        groups.setdefault((phase.kind, phase.inclusive), []).append(phase)
    # A group of one keeps its phase by name: "(the rest: 1 copy phases)" would hide "H2D copy".
    folded = [
        group[0]
        if len(group) == 1
        else Phase(
            name=rest_name(kind, len(group), inclusive),
            kind=group[0].kind,
            total_ns=sum(p.total_ns for p in group),
            calls=sum(p.calls for p in group),
            share_of_device=_sum(p.share_of_device for p in group),
            share_of_wall=_sum(p.share_of_wall for p in group),
            inclusive=inclusive,
            share_of_sum=_sum(p.share_of_sum for p in group),
            share_of_compute=_sum(p.share_of_compute for p in group),
        )
        for (kind, inclusive), group in groups.items()
    ]
    return [p for p in phases if p.name in kept] + largest_first(folded)


def fold_breakdown(breakdown: Breakdown, limit: int = PROFILE_MAX_PHASES) -> Breakdown:
    """`breakdown` with its phases (and each rank's, and each step's phase times) bounded by `fold_phases`, at most
    `PROFILE_MAX_STEPS` step figures of at most `limit` phase times each, and every phase name cut to
    `STORED_NAME_MAX` characters (with a digest of the whole, so names stay distinct)."""
    return _cut_names(_bound_steps(_fold(breakdown, limit), limit))


def _bound_steps(breakdown: Breakdown, limit: int) -> Breakdown:
    """At most `PROFILE_MAX_STEPS` steps (the first: the readers keep those) of at most `limit` phase times each.

    A step of a trace holds only phases its rank holds, which `_fold` has bounded; a summary's step may name others
    (a summary of one rank is stored as it came: a 1.1M-entry step made a 26 MB profile). The largest are kept by
    name, the rest summed into one "(the rest: …)" time, which no target names (`is_aggregate`)."""
    steps = breakdown.step_figures
    if len(steps) <= PROFILE_MAX_STEPS and all(len(s.phases) <= limit for s in steps):
        return breakdown
    bounded = []
    for step in steps[:PROFILE_MAX_STEPS]:
        if len(step.phases) > limit:
            ranked = sorted(step.phases.items(), key=lambda item: (-item[1], item[0]))
            times = dict(ranked[: limit - 1])
            rest = ranked[limit - 1 :]
            times[rest_name("device", len(rest))] = sum(ns for _, ns in rest)
            step = msgspec.structs.replace(step, phases=times)
        bounded.append(step)
    note = (
        f"Per-step figures are kept for at most {PROFILE_MAX_STEPS} steps of at most {limit} phases each (the rest "
        'of a step summed into one "the rest" time).'
    )
    return msgspec.structs.replace(breakdown, step_figures=bounded, notes=[*breakdown.notes, note])


def _cut_names(breakdown: Breakdown) -> Breakdown:
    """Names beyond `STORED_NAME_MAX` cut as `short_name` cuts them: 60 kernels named by 400,000 characters made a
    48 MB document (each name in `phases` and again in `step_figures`), served whole to every reader. No target can
    name more than `STORED_NAME_MAX` characters, so a lookup finds the cut name as it found the whole."""

    def cut(phases: list[Phase]) -> list[Phase]:
        if all(len(p.name) <= STORED_NAME_MAX for p in phases):
            return phases
        return [msgspec.structs.replace(p, name=short_name(p.name, STORED_NAME_MAX)) for p in phases]

    def long(names: Iterable[str]) -> bool:
        return any(len(name) > STORED_NAME_MAX for name in names)

    if not (
        long(p.name for p in breakdown.phases)
        or any(long(p.name for p in r.phases) for r in breakdown.ranks)
        or any(long(s.phases) for s in breakdown.step_figures)
    ):
        return breakdown

    def cut_times(times: dict[str, int]) -> dict[str, int]:
        into: dict[str, int] = {}
        for name, ns in times.items():
            short = short_name(name, STORED_NAME_MAX)
            into[short] = into.get(short, 0) + ns
        return into

    steps = [
        msgspec.structs.replace(s, phases=cut_times(s.phases)) if long(s.phases) else s for s in breakdown.step_figures
    ]
    ranks = [msgspec.structs.replace(r, phases=cut(r.phases)) for r in breakdown.ranks]
    return msgspec.structs.replace(breakdown, phases=cut(breakdown.phases), ranks=ranks, step_figures=steps)


def _fold(breakdown: Breakdown, limit: int) -> Breakdown:
    phases = fold_phases(breakdown.phases, limit)
    ranks = [msgspec.structs.replace(r, phases=fold_phases(r.phases, limit)) for r in breakdown.ranks]
    if phases is breakdown.phases and all(a.phases is b.phases for a, b in zip(ranks, breakdown.ranks, strict=True)):
        return breakdown
    # A step's phases are renamed as its own rank's were folded: a kernel folded in the run's sum or on another rank
    # but kept by name on this one stays named in its steps (it went into a "rest" this rank does not even hold, so
    # a proposal on it found the kernel and none of its time).
    whole = _renames(breakdown.phases, phases)
    per_rank = {r.rank: _renames(r.phases, f.phases) for r, f in zip(breakdown.ranks, ranks, strict=True)}
    steps = []
    for step in breakdown.step_figures:
        into = per_rank.get(step.rank, whole) if step.rank is not None else whole
        times: dict[str, int] = {}
        for name, ns in step.phases.items():
            target = into.get(name, name)
            times[target] = times.get(target, 0) + ns
        steps.append(msgspec.structs.replace(step, phases=times))
    note = f'Phases beyond the largest {limit} are folded into one "the rest" phase per kind.'
    return msgspec.structs.replace(
        breakdown, phases=phases, ranks=ranks, step_figures=steps, notes=[*breakdown.notes, note]
    )


def _renames(source: list[Phase], bounded: list[Phase]) -> dict[str, str]:
    """Each name of `source` that `fold_phases` folded, to the "rest" phase of `bounded` it went into."""
    names = {p.name for p in bounded}
    by_group = {(p.kind, p.inclusive): p.name for p in bounded if p.name.startswith(REST_PREFIX)}
    return {p.name: by_group[(p.kind, p.inclusive)] for p in source if p.name not in names}


def _sum(values: Iterable[float | None]) -> float | None:
    figures = list(values)
    return None if any(v is None for v in figures) else sum(v for v in figures if v is not None)


__all__ = [
    "MAX_PHASES",
    "PROFILE_MAX_BYTES",
    "PROFILE_MAX_PHASES",
    "PROFILE_MAX_STEPS",
    "REST_PREFIX",
    "fold_breakdown",
    "fold_phases",
    "rest_name",
]
