"""A range of steps re-read from a stored breakdown: the per-step figures a trace reader kept, added up.

The raw file is not kept, so a proposal naming a profile and `steps` is measured from `Breakdown.step_figures`:
each step's device phases (unions within the step, which add across steps because steps do not overlap), its
device activity and its duration; for a distributed run, per rank, with the barrier measured again over the range.
"""

from __future__ import annotations

from collections import defaultdict

from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto import STEP_PREFIX, StepRange, barrier_of
from worthit.rules.profiles.model import (
    Activity,
    Breakdown,
    Kind,
    Phase,
    RankFigures,
    StepFigures,
    largest_first,
    share,
    timed_phase,
)


def select_steps(b: Breakdown, steps: StepRange) -> Breakdown:
    """`b` limited to the device work of `steps` (CPU ops are not kept per step, so they are left out)."""
    chosen = [s for s in b.step_figures if steps.includes(s.number)]
    if not chosen:
        have = sorted({s.number for s in b.step_figures})
        listed = ", ".join(map(str, have)) if have else "none (the profile marks no ProfilerStep#N)"
        raise ProfileError(f"no steps {steps} in the profile; it holds the figures of steps {listed}")
    kinds: dict[str, Kind] = {p.name: p.kind for p in b.phases}
    for rank in b.ranks:
        kinds.update((p.name, p.kind) for p in rank.phases)
    numbers = sorted({s.number for s in chosen})
    label = f"{STEP_PREFIX}{numbers[0]}" + (f"..{STEP_PREFIX}{numbers[-1]}" if len(numbers) > 1 else "")
    if not b.ranks:
        out = of_steps(chosen, kinds, b.format)
        out.scope, out.steps = label, len(numbers)
        out.rank, out.world_size = b.rank, b.world_size
        out.step_figures = chosen
        out.notes = [f"Steps {steps} re-read from the stored per-step figures: device phases only."]
        return out
    by_rank: dict[int, list[StepFigures]] = defaultdict(list)
    for s in chosen:
        by_rank[s.rank if s.rank is not None else 0].append(s)
    # A rank that holds none of the steps is refused, as reading its trace with these steps is: measured without it,
    # the barrier had one rank fewer (7 of 8 paying the straggler's time) and never its wait, or it as the straggler.
    for rank in b.ranks:
        if rank.rank not in by_rank:
            held = sorted({s.number for s in b.step_figures if s.rank == rank.rank})
            where = f" ({rank.file})" if rank.file else ""
            listed = ", ".join(map(str, held)) or "none"
            raise ProfileError(f"no steps {steps} on rank {rank.rank}{where}; it holds the figures of steps {listed}")
    barrier, waits = barrier_of(dict(by_rank), b.barrier.world_size if b.barrier else None)
    parts = {rank: of_steps(figures, kinds, b.format) for rank, figures in sorted(by_rank.items())}
    files = {r.rank: r.file for r in b.ranks}
    total_busy = sum(p.device_busy_ns or 0 for p in parts.values())
    totals: dict[tuple[str, Kind], list[int]] = defaultdict(lambda: [0, 0])
    for part in parts.values():
        for phase in part.phases:
            totals[(phase.name, phase.kind)][0] += phase.total_ns
            totals[(phase.name, phase.kind)][1] += phase.calls
    wall = max(p.wall_ns or 0 for p in parts.values())
    return Breakdown(
        format=b.format,
        wall_ns=wall,
        device_busy_ns=total_busy,
        phases=largest_first(
            [
                Phase(
                    name=name,
                    kind=kind,
                    total_ns=total,
                    calls=calls,
                    share_of_device=share(total, total_busy),
                    share_of_wall=share(total, wall * len(parts)),
                )
                for (name, kind), (total, calls) in totals.items()
            ]
        ),
        inclusive=False,
        notes=[f"Steps {steps} re-read from the stored per-step figures: device phases only, summed over ranks."],
        steps=len(numbers),
        scope=label,
        activity=_sum([p.activity for p in parts.values() if p.activity is not None]),
        step_figures=chosen,
        ranks=[
            RankFigures(
                rank=rank,
                file=files.get(rank),
                wall_ns=part.wall_ns or 0,
                activity=part.activity,
                phases=part.phases,
                wait_ns=waits.get(rank, 0),
            )
            for rank, part in parts.items()
        ],
        barrier=barrier,
    )


def of_steps(figures: list[StepFigures], kinds: dict[str, Kind], fmt: str) -> Breakdown:
    """One rank's steps added up: phase totals (of kind `kinds[name]`, else kernel), activity, duration."""
    totals: dict[str, int] = defaultdict(int)
    for s in figures:
        for name, ns in s.phases.items():
            totals[name] += ns
    act = _sum([s.activity for s in figures])
    wall = sum(s.wall_ns for s in figures)
    phases = [
        timed_phase(name, kinds.get(name, "kernel"), ns, 0, busy=act.busy_ns, wall=wall, compute=act.compute_ns)
        for name, ns in totals.items()
    ]
    return Breakdown(
        format=fmt,
        wall_ns=wall,
        device_busy_ns=act.busy_ns or None,
        phases=largest_first(phases),
        inclusive=False,
        activity=act,
    )


def _sum(acts: list[Activity]) -> Activity:
    return Activity(**{f: sum(getattr(a, f) for a in acts) for f in Activity.__struct_fields__})


__all__ = ["of_steps", "select_steps"]
