"""A proposal's `p` from a measured profile, on both denominators, with the breakdown the rules need.

The target's share of device activity becomes `p` (scope `device_activity`) and its share of the whole recording
`p_end_to_end`, so `device_vs_run` can say both; the recording's top-level parts become the breakdown, so
`non_kernel_time` and `bigger_target` see allocation, copies and host time. A target read from a summed table
carries `scope.inclusive`, and `inclusive_percentages` asks for a re-measurement. Given the traces' schedules, the
change is also replayed on them (`replayed`): the engine then decides on the saving the replay finds.

This module is the readers' only link to the engine (tests/unit/test_layers.py pins it): it alone imports the
`Proposal` it builds and the engine's phases, and bounds those (`fold_proposal_phases`) as `fold` bounds a profile's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

from worthit.rules.errors import InvalidInput
from worthit.rules.model import (
    HOST_WAIT,
    INPUT_WAIT,
    MAX_ARRIVALS,
    UNACCOUNTED,
    Arrival,
    Barrier,
    Flags,
    PhaseKind,
    Proposal,
    Range,
    Replay,
    ReplayLosses,
)
from worthit.rules.model import Phase as ProposalPhase
from worthit.rules.profiles.errors import PhaseNotFoundError, ProfileError
from worthit.rules.profiles.fold import MAX_PHASES, rest_name
from worthit.rules.profiles.kineto import FORMAT as TORCH_FORMAT
from worthit.rules.profiles.kineto import Schedule, Target, WhatIf, parse_steps, what_if
from worthit.rules.profiles.kineto.whatif import MAX_K
from worthit.rules.profiles.lookup import check_glob_work, exact_phase, family, find_phase
from worthit.rules.profiles.model import Activity, BarrierFigures, Breakdown, Kind, Phase, RankFigures, StepFigures
from worthit.rules.profiles.naming import DISPLAY_MAX, UNNAMED, short_name
from worthit.rules.profiles.stored_steps import of_steps, select_steps

MAX_NAME = DISPLAY_MAX
# Device work that is neither compute nor communication: hidden when it runs under a kernel (see `exposure`).
_BESIDE: tuple[Kind, ...] = ("copy", "other")
# API calls other than copies and allocations (device queries, synchronisation) are time the host spends in the
# runtime, not the launch gaps between kernels that `host` means; they count as `other`.
KIND: dict[str, PhaseKind] = {
    "kernel": "kernel",
    "comm": "comm",
    "copy": "copy",
    "alloc": "alloc",
    "api": "other",
    "cpu_op": "other",
    "other": "other",
}


def _name(phase: Phase) -> str:
    return short_name(phase.name, MAX_NAME)


def _unique(parts: list[Phase]) -> list[tuple[str, Phase]]:
    """Display names that never collide: a name held by phases of two kinds gets its kind added, and one a file
    lists twice with one kind (a damaged or concatenated table) a number after it."""
    seen: set[str] = set()
    out = []
    for phase in parts:
        name = _name(phase)
        if name in seen:
            name = short_name(f"{phase.name or UNNAMED} ({phase.kind})", MAX_NAME)
        again = 2
        while name in seen:
            name = short_name(f"{phase.name or UNNAMED} ({phase.kind} {again})", MAX_NAME)
            again += 1
        seen.add(name)
        out.append((name, phase))
    return out


def _waits_on_host(fmt: str, activity: Activity | None) -> bool:
    """Whether the recording has a host timeline beside its device one (a PyTorch trace, the only reader of CPU
    ops: its steps and CPU ops are host time), so that the device's idle time is time it waited on the host or its
    input pipeline."""
    return fmt == TORCH_FORMAT and activity is not None and activity.busy_ns > 0


def _parts(phases: list[Phase], *, host_timeline: bool) -> list[Phase]:
    inclusive_copies = any(p.inclusive and p.kind == "copy" for p in phases)
    return [
        p
        for p in phases
        # A device annotation (gpu_user_annotation) contains kernels: it is not a part beside them.
        if p.kind != "annotation"
        and not (inclusive_copies and p.kind == "copy" and not p.inclusive)
        and not (host_timeline and p.kind == "cpu_op")
    ]


def exposure(parts: list[Phase], activity: Activity | None) -> dict[Kind, float]:
    """The share of each kind's own time that lies on the device timeline's critical path, by kind (1 when absent).

    Communication that runs while compute runs (`Activity.overlap_ns`) is already hidden behind that compute: a
    faster collective wins none of it back, since the compute still runs. So a collective counts for its exposed
    part, comm − overlap, spread over the collectives in proportion to their time, and compute kernels for all of
    theirs (a compute target's p is its own time; the comm it hides was never charged to it). Copies and memsets
    that run under kernels are hidden the same way: they count for the device time no kernel covers, busy − the
    union of compute and communication. With these, the parts add up to the device's busy time (the union), not
    past it, so the idle time beside them (wall − busy) is what the device really waited. The exposed share is
    the conservative reading for a comm target: k on it assumes the hidden part stays as hidden as it was.
    """
    if activity is None or activity.busy_ns <= 0:
        return {}
    factors: dict[Kind, float] = {}
    if activity.comm_ns > 0 and activity.overlap_ns > 0:
        factors["comm"] = max(activity.comm_ns - activity.overlap_ns, 0) / activity.comm_ns
    beside = sum(p.total_ns for p in parts if p.kind in _BESIDE and p.share_of_device is not None)
    uncovered = max(activity.busy_ns - (activity.compute_ns + activity.comm_ns - activity.overlap_ns), 0)
    if beside > uncovered:
        for kind in _BESIDE:
            factors[kind] = uncovered / beside
    return factors


def exposed_ns(phase: Phase, factors: dict[Kind, float]) -> float:
    """`phase`'s time on the critical path (see `exposure`)."""
    if phase.kind in _BESIDE and phase.share_of_device is None:
        return float(phase.total_ns)
    return phase.total_ns * factors.get(phase.kind, 1.0)


def idle_ms(wall_ns: int, parts: list[Phase], sizes: list[float], activity: Activity | None) -> float:
    """What no part accounts for, in ms: the device's idle time from the union of its work (wall − busy), with
    the parts that are not device work (a stats table's API calls) beside it; where the parts still add up past
    the busy time (kernels running concurrently on several queues), wall less their sum, so the breakdown never
    sums past the wall."""
    if activity is None or activity.busy_ns <= 0:
        return (wall_ns - sum(sizes)) / 1e6
    on_device = sum(s for p, s in zip(parts, sizes, strict=True) if p.share_of_device is not None)
    off_device = sum(sizes) - on_device
    return (wall_ns - max(activity.busy_ns, on_device) - off_device) / 1e6


def device_waits(
    rest_ms: float, activity: Activity | None, *, host_timeline: bool, scale: float = 1.0
) -> list[ProposalPhase]:
    """The time no part accounts for, as phases: beside a host timeline it is the device's idle time, split into
    the wait on the input pipeline (`Activity.input_ns`, times `scale`) and the wait on the host; else one
    unaccounted phase."""
    if rest_ms <= 0:
        return []
    if not host_timeline or activity is None:
        return [ProposalPhase(name=UNACCOUNTED, ms=rest_ms, kind="other")]
    waiting = min(activity.input_ns * scale / 1e6, rest_ms)
    phases = [ProposalPhase(name=INPUT_WAIT, ms=waiting, kind="input")] if waiting > 0 else []
    if rest_ms - waiting > 0:
        phases.append(ProposalPhase(name=HOST_WAIT, ms=rest_ms - waiting, kind="host"))
    return phases


def breakdown_of(breakdown: Breakdown, target: Phase | None = None) -> list[ProposalPhase]:
    """The recording's top-level parts in ms, with what no part accounts for as more phases (`device_waits`); at
    most `MAX_PHASES` in all, the `target` (a phase of `breakdown`) always among them (`_bounded_parts`)."""
    host_timeline = _waits_on_host(breakdown.format, breakdown.activity)
    parts = _parts(breakdown.phases, host_timeline=host_timeline)
    factors = exposure(parts, breakdown.activity)
    sizes = [exposed_ns(p, factors) for p in parts]
    phases = _bounded_parts(parts, sizes, target)
    if breakdown.wall_ns is not None:
        rest = idle_ms(breakdown.wall_ns, parts, sizes, breakdown.activity)
        phases += device_waits(rest, breakdown.activity, host_timeline=host_timeline)
    return phases


def _bounded_parts(
    parts: list[Phase], sizes: list[float], target: Phase | None, *, scale: float = 1.0
) -> list[ProposalPhase]:
    """`parts` as a proposal's phases, each its exposed size (`sizes`, ns) × `scale` in ms, at most `MAX_PHASES` − 2
    (room for `device_waits`' two): the largest and `target` (a phase of `parts`, found by identity) by name, the
    others folded per kind. One path for a single recording and a distributed run's rank: a run of hundreds of
    ranks and thousands of kernel names made a proposal of as many phases."""
    named = _unique(parts)
    # A runtime API call's total (hipGetDeviceCount, a sync; summed in a stats table, or traced) is time the host
    # spends in the runtime, not a phase a speedup applies to: the calls are kept as one "rest" phase, so their
    # time still counts and no check proposes speeding one up instead of the target.
    calls = [p for _, p in named if p.kind == "api" and p is not target]
    phases = [
        ProposalPhase(name=n, ms=size * scale / 1e6, kind=KIND.get(p.kind, "other"))
        for (n, p), size in zip(named, sizes, strict=True)
        if (p.kind != "api" or p is target) and (size * scale > 0 or p is target)
    ]
    if calls:
        name = rest_name("api", len(calls), inclusive=all(p.inclusive for p in calls))
        phases.append(ProposalPhase(name=name, ms=sum(p.total_ns for p in calls) * scale / 1e6, kind="other"))
    keep = frozenset(n for n, p in named if p is target)
    return fold_proposal_phases(phases, MAX_PHASES - 2, keep)


def _display_name(parts: list[Phase], phase: Phase) -> str:
    """`phase`'s name in a proposal built from `parts` (`_unique`): the proposal's `target` names that phase."""
    return next((n for n, p in _unique(parts) if p is phase), _name(phase))


def fold_proposal_phases(
    phases: list[ProposalPhase], limit: int = MAX_PHASES, keep: frozenset[str] = frozenset()
) -> list[ProposalPhase]:
    """A proposal's breakdown with at most `limit` phases: the largest and `keep` kept, the rest summed per kind."""
    if len(phases) <= limit:
        return phases
    ranked = sorted(phases, key=lambda p: (-p.ms, p.name))
    pinned = [p for p in ranked if p.name in keep]
    others = [p for p in ranked if p.name not in keep]
    n = max(limit - len(pinned) - 1, 0)
    while n > 0 and n + len(pinned) + len({p.kind for p in others[n:]}) > limit:
        n -= 1
    kept = {p.name for p in pinned} | {p.name for p in others[:n]}
    groups: dict[str, list[ProposalPhase]] = {}
    for phase in others[n:]:
        groups.setdefault(phase.kind, []).append(phase)
    # A kind with one phase beyond the largest keeps it by name: "(the rest: 1 copy phases)" hid "H2D copy".
    folded = [
        group[0]
        if len(group) == 1
        else ProposalPhase(name=rest_name(kind, len(group)), ms=sum(p.ms for p in group), kind=group[0].kind)
        for kind, group in groups.items()
    ]
    return [p for p in phases if p.name in kept] + sorted(folded, key=lambda p: -p.ms)


def proposal_from_profile(
    proposal: Proposal,
    breakdown: Breakdown,
    schedules: Sequence[Schedule] | None = None,
    *,
    steps: str | None = None,
    notes: list[str] | None = None,
) -> Proposal:
    """`proposal` with `p`, `p_end_to_end`, `baseline_ms`, scope and breakdown measured from `breakdown` (see
    `_measured`); a measured p that the proposal's own figures no longer fit (#25: `more_targets` shares, a
    collective's `target_wait` above it) is an InvalidInput naming them, never a bare ValueError.

    With the `schedules` of the profile's traces (PyTorch traces with a device timeline, one per rank), the change
    is also replayed on them (`replayed`), over `steps` when the proposal names none (the steps `breakdown` was read
    over: `review --steps`), and the engine decides on that; where it cannot be, `notes` is told why. A `replay` the
    proposal brings is never kept: only the profile's own stands."""
    try:
        measured = _measured(msgspec.structs.replace(proposal, replay=None), breakdown)
    except InvalidInput:
        raise
    except ValueError as exc:
        field = "/more_targets" if "more_targets" in str(exc) else "/flags/barrier/target_wait"
        raise InvalidInput(f"{exc} (p as measured from the profile)", field) from exc
    if not schedules:
        return measured
    replay = replayed(proposal, breakdown, schedules, steps=steps, notes=notes)
    return measured if replay is None else msgspec.structs.replace(measured, replay=replay)


def replayed(
    proposal: Proposal,
    breakdown: Breakdown,
    schedules: Sequence[Schedule],
    *,
    steps: str | None = None,
    notes: list[str] | None = None,
) -> Replay | None:
    """The proposal's change replayed on the traces' schedules: its target and `more_targets`, each the one phase of
    `breakdown` its name finds, k times faster over the proposal's `steps`, else `steps` (by default every complete
    step). None where no replay answers the proposal as stated, with why added to `notes`: k given as a range (one
    replay is one k) or below 1, a target that names no single phase, a trace the replay cannot read (no
    ProfilerStep, a target with no work in the steps)."""
    why = _unreplayable(proposal)
    targets: list[Target] = []
    for name, k in [(proposal.target or "", proposal.k), *((x.name, x.k) for x in proposal.more_targets or ())]:
        if why is not None:
            break
        named = family(breakdown, name)
        phase = _phase_named(named, name)
        if phase is None:
            why = f"`{short_name(name, MAX_NAME)}` names no single phase of one rank"
            break
        factor = MAX_K if isinstance(k, str) else min(float(k), MAX_K) if not isinstance(k, Range) else 1.0
        # A family is its glob: the replay speeds up every phase it matches, as the measurement added them.
        pattern = name if named is not breakdown and phase.name == name else _literal(phase.name)
        targets.append(Target(pattern=pattern, k=factor))
    if why is None:
        try:
            chosen = proposal.steps or steps
            return replay_of(what_if(schedules, targets, parse_steps(chosen) if chosen else None))
        except ProfileError as exc:
            why = exc.detail
    if notes is not None:
        notes.append(f"the change is not replayed on the trace ({why}): Amdahl's share decides")
    return None


def _unreplayable(proposal: Proposal) -> str | None:
    """Why no one replay answers the proposal's speedups, or None."""
    ks = [proposal.k, *(extra.k for extra in proposal.more_targets or ())]
    if any(isinstance(k, Range) for k in ks):
        return "k is a range, and one replay answers one k"
    if any(isinstance(k, float | int) and k < 1 for k in ks):
        return "a target is made slower, and the replay speaks of faster ones"
    return None


def _phase_named(b: Breakdown, name: str) -> Phase | None:
    """The phase `name` finds as the measurement found it: on a distributed run, on the first rank that has it (the
    straggler first: two ranks' kernels of one name pattern are one phase on each); None when it finds none or
    several."""
    try:
        if b.barrier is not None and b.ranks:
            straggler = b.barrier.straggler
            return _on_a_rank(name, sorted(b.ranks, key=lambda r: r.rank != straggler), b)[1]
        return find_phase(b, name)
    except (PhaseNotFoundError, InvalidInput):
        return None


def replay_of(w: WhatIf) -> Replay:
    """A what-if's figures as the proposal carries them to the engine, in ms per step. The replay's saving is taken
    off the measured step (at k = 1 the replay reproduces it to the µs), so that the losses add up exactly to
    Amdahl's saving less the replay's."""
    first = [st for st in w.steps if st.rank == w.steps[0].rank]
    steps = first[0].name if len(first) == 1 else f"{first[0].name}..{first[-1].name}"
    saving = w.replayed_ns - w.predicted_ns
    lost = w.lost_ns
    return Replay(
        steps=short_name(steps, MAX_NAME),
        step_ms=w.measured_ns / 1e6,
        amdahl_ms=w.amdahl_ns / 1e6,
        predicted_ms=max(w.measured_ns - saving, 0) / 1e6,
        lost_ms=ReplayLosses(
            overlap=lost.overlap / 1e6, launch=lost.launch / 1e6, sync=lost.sync / 1e6, ranks=lost.ranks / 1e6
        ),
        reason=w.reason[:1000] if w.reason else None,
        better_target=w.better_target[:1000] if w.better_target else None,
    )


def _literal(name: str) -> str:
    """A glob that matches `name` alone (a C++ signature holds `*` and `[`; a name may start like ``kind:``)."""
    escaped = "".join(f"[{c}]" if c in "*?[" else c for c in name)
    return f"[{escaped[0]}]{escaped[1:]}" if escaped.lower().startswith("kind:") else escaped


def _measured(proposal: Proposal, breakdown: Breakdown) -> Proposal:
    """`proposal` with `p`, `p_end_to_end`, `baseline_ms`, scope and breakdown measured from `breakdown`.

    With `proposal.steps`, only those steps of the profile are measured. A distributed profile measures `p` on
    the rank the target runs on (the straggler first) against the step every rank waits for, and sets
    `flags.barrier` from the measured barrier, with each rank's arrival at the collective for a compute kernel
    (`_arrivals`: the engine caps the saving where another rank then sets the step). Raises InvalidInput at
    `/target` when the target names no phase, or several (listing candidates).
    """
    if proposal.target is None:
        raise InvalidInput("Expected `target` naming a phase of the profile", "/target")
    if proposal.steps is not None:
        try:
            breakdown = select_steps(breakdown, parse_steps(proposal.steps))
        except ProfileError as exc:
            raise InvalidInput(f"Expected `steps` the profile holds: {exc.detail}", "/steps") from exc
    if breakdown.barrier is not None and breakdown.ranks:
        return _distributed(proposal, proposal.target, breakdown, breakdown.barrier)
    breakdown = family(breakdown, proposal.target)
    try:
        phase = find_phase(breakdown, proposal.target)
    except PhaseNotFoundError as exc:
        raise InvalidInput(_not_found(exc, breakdown), "/target") from exc
    if phase.share_of_device is None and not breakdown.device_timeline:
        raise InvalidInput(
            f"Expected a device share for `{_name(phase)}`, but the profile holds no device timeline "
            f"({breakdown.notes[0] if breakdown.notes else 'no device intervals'})",
            "/profile_id",
        )
    parts = _parts(breakdown.phases, host_timeline=_waits_on_host(breakdown.format, breakdown.activity))
    on_device = phase.share_of_device is not None and breakdown.device_busy_ns
    if on_device:
        p, measured = phase.share_of_device, "device_activity"
        baseline_ms = (breakdown.device_busy_ns or 0) / 1e6
        p_end_to_end = phase.share_of_wall
        # Only the part of a collective (or a copy) not hidden under compute is on the critical path (`exposure`).
        factors = exposure(parts, breakdown.activity)
        exposed = exposed_ns(phase, factors) / phase.total_ns if phase.total_ns else 1.0
        if exposed < 1.0:
            _check_exposed(phase, exposed)
            p = p * exposed if p is not None else p
            p_end_to_end = p_end_to_end * exposed if p_end_to_end is not None else p_end_to_end
    else:
        p, measured = phase.share_of_wall, "end_to_end"
        baseline_ms = (breakdown.wall_ns or 0) / 1e6
        p_end_to_end = None
    if not p or p <= 0 or baseline_ms <= 0:
        raise InvalidInput(
            f"Expected the profile to give `{phase.name}` a share of measured time, but it has none "
            "(a summed table without timestamps has no wall time: add a trace)",
            "/profile_id",
        )
    scope = msgspec.structs.replace(
        proposal.scope,
        measured=measured,
        method=proposal.scope.method or ("inclusive_summary" if phase.inclusive else "timeline"),
        timing=proposal.scope.timing or "device_events",
        inclusive=phase.inclusive or proposal.scope.inclusive,
    )
    return msgspec.structs.replace(
        proposal,
        target=_name(phase) if proposal.breakdown else _display_name(parts, phase),
        p=min(p, 1.0),
        flags=_one_rank_of_many(proposal, breakdown, phase),
        p_end_to_end=min(p_end_to_end, 1.0) if p_end_to_end else proposal.p_end_to_end,
        baseline_ms=baseline_ms,
        scope=scope,
        breakdown=proposal.breakdown or breakdown_of(breakdown, phase),
        breakdown_scope="end_to_end" if on_device and proposal.breakdown is None else proposal.breakdown_scope,
    )


def _one_rank_of_many(proposal: Proposal, breakdown: Breakdown, phase: Phase) -> Flags:
    """The proposal's flags, with `flags.barrier` when the profile is one rank's trace of a multi-rank run
    (`world_size` > 1) and the target is a collective: its time on this rank holds the wait for the slowest rank,
    which only all ranks' traces measure, so the barrier is stated (its wait unmeasured) and `barrier_denominator`
    asks for them. A barrier the proposal states itself is kept."""
    world = breakdown.world_size
    if proposal.flags.barrier is not None or phase.kind != "comm" or world is None or world < 2:
        return proposal.flags
    return msgspec.structs.replace(proposal.flags, barrier=Barrier(ranks=world, critical_path=True))


def _check_exposed(phase: Phase, exposed: float) -> None:
    if exposed <= 0:
        raise InvalidInput(
            f"Expected `{_name(phase)}` to hold time on the critical path, but all of its "
            f"{phase.total_ns / 1e6:,.3f} ms runs under other device work, so speeding it up shortens nothing",
            "/target",
        )


def _not_found(exc: PhaseNotFoundError, breakdown: Breakdown) -> str:
    if breakdown.device_timeline:
        return exc.detail
    return f"{exc.detail}. The profile holds no device timeline, so no kernel has a device share"


def _on_a_rank(target: str, ordered: list[RankFigures], b: Breakdown) -> tuple[RankFigures, Phase]:
    """The rank (the first of `ordered` that has it) and the phase `target` names, as `find_phase` finds one.

    A whole name (or display name) is looked for on every rank first: C++ signatures hold `*` and display names
    `[`, so taken for globs they were refused by the glob budget (89 of the 187 kernels of the two real ranks'
    straggler could not be named in full, 120 by the name the report shows)."""
    for rank in ordered:
        exact = exact_phase(rank.phases, target)
        if exact is not None:
            return rank, exact
    # One budget for the lookup over every rank: 512 ranks, each within the per-lookup cap (13 ms), held the
    # event loop for ~6 s.
    try:
        check_glob_work(target, b.phases, sum(len(p.name) for r in ordered for p in r.phases))
    except PhaseNotFoundError as exc:
        raise InvalidInput(exc.detail, "/target") from exc
    first_error: PhaseNotFoundError | None = None
    for rank in ordered:
        view = Breakdown(
            format=b.format, wall_ns=rank.wall_ns, device_busy_ns=None, phases=rank.phases, inclusive=False
        )
        try:
            return rank, find_phase(view, target)
        except PhaseNotFoundError as exc:
            if first_error is None or exc.ambiguous:
                first_error = exc
            if exc.ambiguous:
                break
    detail = first_error.detail if first_error is not None else f"Expected `{target}` to name a phase"
    raise InvalidInput(detail, "/target") from first_error


def _arrivals(b: Breakdown, steps: list[StepFigures], name: str) -> list[Arrival] | None:
    """Each rank's arrival at the collective per step — its compute, and the target's (`name`) time in it — over the
    steps the target's rank is measured on (`steps`; the whole window when the run has no steps), bounded to the ranks
    that set the step at some k (`setting_ranks`): the engine computes the step after the change from them."""
    numbers = {s.number for s in steps}
    lines: list[Arrival] = []
    if numbers:
        per_rank: dict[int, list[StepFigures]] = {}
        for step in b.step_figures:
            if step.rank is not None and step.number in numbers:
                per_rank.setdefault(step.rank, []).append(step)
        for rank, kept in per_rank.items():
            compute = sum(s.activity.compute_ns for s in kept) / len(kept) / 1e6
            target = sum(s.phases.get(name, 0) for s in kept) / len(kept) / 1e6
            lines.append(Arrival(rank=rank, compute_ms=compute, target_ms=min(target, compute)))
    else:
        for whole in b.ranks:
            if whole.activity is None:
                continue
            compute = whole.activity.compute_ns / 1e6
            target = sum(x.total_ns for x in whole.phases if x.name == name) / 1e6
            lines.append(Arrival(rank=whole.rank, compute_ms=compute, target_ms=min(target, compute)))
    return setting_ranks(lines) or None


def setting_ranks(lines: list[Arrival], limit: int = MAX_ARRIVALS) -> list[Arrival]:
    """The ranks whose arrival is the latest for some k: the upper envelope of the lines compute − target · c over
    c = 1 − 1/k ≤ 1 (c < 0 for a slower target), in the order they take over as c grows, at most `limit`.

    The straggler tops it at c = 0; as the target's share of each rank is removed, ranks with less of it take over;
    as it slows, ranks with more. The rest never set the step, so the engine needs no more than these. Past `limit`
    (never on real runs: the envelope of hundreds of ranks is a handful), the slowdown side is dropped first, then
    the ranks past the limit on the speedup side are merged into one line no lower than any of them for c ≥ 0 (their
    latest compute, their least target time): the step after is then never under-counted."""
    ordered = sorted(lines, key=lambda a: (-a.target_ms, -a.compute_ms, a.rank))
    hull: list[Arrival] = []
    starts: list[float] = []  # the c from which each line of `hull` is the latest arrival
    for line in ordered:
        if hull and hull[-1].target_ms == line.target_ms:
            continue  # as much target time, an earlier (or the same, a higher rank's) arrival: never the latest alone
        start = -math.inf
        while hull:
            top = hull[-1]
            start = (top.compute_ms - line.compute_ms) / (top.target_ms - line.target_ms)
            if start > starts[-1]:
                break
            hull.pop()
            starts.pop()
            start = -math.inf
        hull.append(line)
        starts.append(start)
    kept = [line for line, start in zip(hull, starts, strict=True) if start < 1.0]
    kept_starts = [start for start in starts if start < 1.0]
    # the lines whose turn ends at or before c = 0 only matter for a slower target: dropped first
    while len(kept) > limit and len(kept_starts) > 1 and kept_starts[1] <= 0:
        kept.pop(0)
        kept_starts.pop(0)
    if len(kept) > limit:
        rest = kept[limit - 1 :]
        merged = Arrival(
            rank=rest[0].rank,
            compute_ms=max(a.compute_ms for a in rest),
            target_ms=min(a.target_ms for a in rest),
        )
        kept = [*kept[: limit - 1], merged]
    return kept


def _distributed(proposal: Proposal, target: str, b: Breakdown, barrier: BarrierFigures) -> Proposal:
    """p of a target in a distributed run: its time on its rank over the step all ranks wait for; for a compute
    kernel, each rank's arrival at the collective with the target's time in it (`_arrivals`)."""
    ordered = sorted(b.ranks, key=lambda r: r.rank != barrier.straggler)
    rank, found = _on_a_rank(target, ordered, b)
    steps = [s for s in b.step_figures if s.rank == rank.rank]
    # The rank's kept steps are the one denominator of p, the breakdown and its idle time: its whole window also holds
    # the time before its first step and between steps (p 86.4% against a breakdown's 84.3% on 64 ranks of 0.7 ms
    # steps, which `consistency` took for a measurement to redo).
    measured = of_steps(steps, {x.name: x.kind for x in rank.phases}, b.format) if steps else None
    rank_phases = measured.phases if measured is not None else rank.phases
    wall = (measured.wall_ns or 0) if measured is not None else rank.wall_ns
    activity = measured.activity if measured is not None else rank.activity
    count = len(steps) or 1
    phase = next((x for x in rank_phases if x.name == found.name), None)
    if phase is None or phase.total_ns <= 0 or wall <= 0:
        raise InvalidInput(f"Expected `{_name(found)}` to run in the chosen steps on rank {rank.rank}", "/target")
    host_timeline = _waits_on_host(b.format, activity)
    parts = _parts(rank_phases, host_timeline=host_timeline)
    factors = exposure(parts, activity)
    exposed = exposed_ns(phase, factors) / phase.total_ns
    _check_exposed(phase, exposed)
    target_ns, step_ns = phase.total_ns * exposed, wall
    p = min(target_ns / step_ns, 1.0)
    busy = activity.busy_ns if activity is not None else 0
    # A collective's own time on its rank holds that rank's wait for the slowest (#25): read it as the stated path
    # would be given it, when the target is the rank's one collective (so the rank's wait is all inside it).
    target_wait = None
    if phase.kind == "comm" and sum(1 for x in rank.phases if x.kind == "comm") == 1:
        wait_ns = sum(s.wait_ns or 0 for s in steps) if steps else rank.wait_ns
        target_wait = min(wait_ns / step_ns, p)
    measured_barrier = Barrier(
        ranks=barrier.ranks,
        critical_path=rank.rank == barrier.straggler and phase.kind == "kernel",
        wait_fraction=min(barrier.wait_fraction, 1.0),
        straggler=barrier.straggler,
        step_ms=step_ns / count / 1e6,
        target_ms=target_ns / count / 1e6,
        rank_p=min(phase.total_ns * exposed / busy, 1.0) if busy and phase.total_ns else None,
        target_wait=target_wait,
        rank=rank.rank,
        arrivals=_arrivals(b, steps, found.name) if phase.kind == "kernel" else None,
    )
    scale = 1 / count  # the rank's figures per step
    sizes = [exposed_ns(x, factors) for x in parts]
    phases = _bounded_parts(parts, sizes, phase, scale=scale)
    rest = idle_ms(wall, parts, sizes, activity) * scale
    phases += device_waits(rest, activity, host_timeline=host_timeline, scale=scale)
    scope = msgspec.structs.replace(
        proposal.scope,
        measured="step",
        method=proposal.scope.method or "timeline",
        timing=proposal.scope.timing or "device_events",
    )
    flags = msgspec.structs.replace(proposal.flags, barrier=proposal.flags.barrier or measured_barrier)
    return msgspec.structs.replace(
        proposal,
        target=_name(phase) if proposal.breakdown else _display_name(parts, phase),
        p=p,
        p_end_to_end=proposal.p_end_to_end or p,
        baseline_ms=step_ns / count / 1e6,
        scope=scope,
        flags=flags,
        breakdown=proposal.breakdown or phases,
        breakdown_scope="measured",
    )


__all__ = [
    "KIND",
    "MAX_NAME",
    "breakdown_of",
    "device_waits",
    "fold_proposal_phases",
    "proposal_from_profile",
    "replay_of",
    "replayed",
    "setting_ranks",
]
