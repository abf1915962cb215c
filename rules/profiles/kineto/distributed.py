"""Several traces of one distributed run read together: per rank and per step compute, communication and idle
time, the straggler, and each rank's wait inside collectives.

Ranks come from each trace's ``distributedInfo.rank``, else from the files' order; traces whose clocks do not
overlap are refused (`check_same_run`). A collective finishes only when its last rank joins, so the rank with the
most compute in a step (the straggler) sets it, and the others wait for it inside their collectives (`barrier_of`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.breakdown import (
    DEVICE_KINDS,
    MAX_STEP_FIGURES,
    empty_activity,
    step_figures,
    window_breakdown,
)
from worthit.rules.profiles.kineto.parse import FORMAT, STEP_PREFIX, Parsed, parse_trace, span
from worthit.rules.profiles.kineto.steps import StepRange, window
from worthit.rules.profiles.model import (
    Activity,
    BarrierFigures,
    Breakdown,
    Kind,
    RankFigures,
    StepFigures,
    largest_first,
    timed_phase,
)


@dataclass(slots=True)
class RankPart:
    """What the combined run needs of one rank, however it was read (a raw trace, or its summary): its file,
    rank, world size and span, its breakdown over the selected steps, and every selected step's figures."""

    file: str
    rank: int | None
    world_size: int | None
    start_ns: int
    end_ns: int
    breakdown: Breakdown
    steps: list[StepFigures]
    note: str | None


def rank_part(p: Parsed, file: str, steps: StepRange | None = None) -> RankPart:
    """One rank's part of a run, from its parsed trace (figures of all its selected steps, rank left unset)."""
    w = window(p, steps, file)
    start, end = span(p)
    return RankPart(
        file=file,
        rank=p.rank,
        world_size=p.world_size,
        start_ns=start,
        end_ns=end,
        breakdown=window_breakdown(p, w),
        steps=step_figures(p, w.steps, None),
        note=w.note,
    )


def read_run(files: Sequence[tuple[str, bytes]], steps: StepRange | None = None) -> Breakdown:
    """Several traces of one distributed run, read as one: per rank and per step, the straggler, the waits.

    Ranks come from each trace's ``distributedInfo.rank``, else from the files' order. Files whose clocks do not
    overlap are refused: they are not one run. The phases of the whole are summed over ranks (device time of
    all GPUs); `ranks` keeps each rank's own device phases, `barrier` the measured barrier.
    """
    if len(files) < 2:
        raise ProfileError("a distributed run needs two or more traces", format_expected=FORMAT)
    return run_of([rank_part(parse_trace(data, name), name, steps) for name, data in files])


def run_of(parts: Sequence[RankPart]) -> Breakdown:
    """The ranks' parts (`rank_part`, or summaries read back) combined into the run's breakdown."""
    if len(parts) < 2:
        raise ProfileError("a distributed run needs two or more ranks", format_expected=FORMAT)
    ranks: list[int] = []
    seen: dict[int, int] = {}  # rank → its part's index: linear in the number of ranks (24,000 summaries)
    for index, part in enumerate(parts):
        rank = part.rank if part.rank is not None else index
        if rank in seen:
            other = parts[seen[rank]].file
            raise ProfileError(
                f"{part.file} and {other} are both rank {rank}: expected one trace per rank of one run",
                format_expected=FORMAT,
            )
        seen[rank] = index
        ranks.append(rank)
    check_same_run([(part.file, part.start_ns, part.end_ns) for part in parts])
    per_rank = [part.breakdown for part in parts]
    order = sorted(range(len(parts)), key=lambda i: ranks[i])
    rank_steps: dict[int, list[StepFigures]] = {}
    for i in order:
        figures = [msgspec.structs.replace(s, rank=ranks[i]) for s in parts[i].steps]
        if not figures:  # no steps: the whole window is one step, so the barrier is still measured
            b = per_rank[i]
            act = b.activity or empty_activity()
            figures = [
                StepFigures(name="run", number=0, rank=ranks[i], wall_ns=b.wall_ns or 0, activity=act, phases={})
            ]
        rank_steps[ranks[i]] = figures
    barrier, waits = barrier_of(rank_steps, parts[order[0]].world_size)
    combined = _sum_ranks([per_rank[i] for i in order])
    combined.ranks = [
        RankFigures(
            rank=ranks[i],
            file=parts[i].file,
            wall_ns=per_rank[i].wall_ns or 0,
            activity=per_rank[i].activity,
            phases=[p for p in per_rank[i].phases if p.kind in DEVICE_KINDS],
            wait_ns=waits.get(ranks[i], 0),
        )
        for i in order
    ]
    combined.step_figures, trimmed = kept_figures(rank_steps)
    combined.barrier = barrier
    first = per_rank[order[0]]
    combined.steps = first.steps
    combined.scope = first.scope
    notes = [n for n in [parts[0].note] if n]
    notes.append(
        f"{len(parts)} ranks read as one run: phase totals are device time summed over ranks, shares of wall are "
        "of ranks × wall."
    )
    notes.append(
        f"Straggler: rank {barrier.straggler} (its compute sets the step); ranks wait "
        f"{barrier.wait_fraction * 100:.1f}% of their step time inside collectives for it."
    )
    if trimmed:
        notes.append(trimmed)
    combined.notes = notes + [n for n in combined.notes if n not in notes]
    return combined


def kept_figures(rank_steps: dict[int, list[StepFigures]]) -> tuple[list[StepFigures], str | None]:
    """The ranks' step figures a run keeps, rank by rank, and a note when some are left out.

    All of them when they number at most `MAX_STEP_FIGURES`; else the same steps of every rank, the first that all
    ranks hold (at least one each): a proposal measures its target on its own rank's steps, and a range re-read from
    the stored figures re-measures the barrier, so a rank left out entirely (64 ranks × 9 steps kept ranks 0-56 only)
    lost the straggler, its p and its step."""
    real = {rank: [s for s in figures if s.name != "run"] for rank, figures in rank_steps.items()}
    total = sum(len(figures) for figures in real.values())
    if total <= MAX_STEP_FIGURES:
        return [s for rank in sorted(real) for s in real[rank]], None
    common = sorted(set.intersection(*({s.number for s in figures} for figures in real.values())))
    keep = common[: max(1, MAX_STEP_FIGURES // len(real))]
    if not keep:  # `barrier_of` refuses ranks that share no step before this is asked
        return [], None
    numbers = set(keep)
    kept = [s for rank in sorted(real) for s in real[rank] if s.number in numbers]
    first, last = keep[0], keep[-1]
    shown = f"{STEP_PREFIX}{first}" if first == last else f"{STEP_PREFIX}{first}..{STEP_PREFIX}{last}"
    return kept, (
        f"Per-step figures are kept for {shown} of every rank ({len(kept):,} of {total:,}): a proposal's p is "
        "measured on those steps of its rank, and a range of steps re-read from them."
    )


def check_same_run(ranges: Sequence[tuple[str, int, int]]) -> None:
    """Refuse files given as one run whose time ranges do not overlap: their clocks are not one run's.

    A range [lo, hi] belongs when another (a, b) overlaps it (a < hi and lo < b) or holds its start (a <= lo <= b).
    Sorted by start, the others with a < hi (or a <= lo) are a prefix, so it is enough to know the two largest ends
    of each prefix (the largest of the others is one of them): n log n, not n² (24,000 summaries took minutes)."""
    if len(ranges) < 2:
        return
    order = sorted(range(len(ranges)), key=lambda i: ranges[i][1])
    starts = [ranges[i][1] for i in order]
    # For each prefix of `order`: the largest end and its range's index, and the largest end of the others (None: no
    # other; no sentinel, since a clock may read any integer).
    top: list[tuple[int, int, int | None]] = []
    best: tuple[int, int] | None = None
    second: int | None = None
    for i in order:
        end = ranges[i][2]
        if best is None or end > best[0]:
            second = None if best is None else best[0]
            best = (end, i)
        elif second is None or end > second:
            second = end
        top.append((best[0], best[1], second))

    def largest_other_end(prefix: int, me: int) -> int | None:
        if prefix == 0:
            return None
        end, index, runner_up = top[prefix - 1]
        return runner_up if index == me else end

    for me, (_, lo, hi) in enumerate(ranges):
        before_end = largest_other_end(bisect_left(starts, hi), me)  # others with a < hi
        holding = largest_other_end(bisect_right(starts, lo), me)  # others with a <= lo
        if (before_end is None or before_end <= lo) and (holding is None or holding < lo):
            listed = "; ".join(f"{n}: {a} to {b} ns ({(b - a) / 1e6:,.3f} ms)" for n, a, b in ranges[:20])
            more = f"; and {len(ranges) - 20:,} more" if len(ranges) > 20 else ""
            raise ProfileError(
                f"the files do not overlap in time, so they are not one run: {listed}{more}. Expected files recorded "
                "together (the traces of one run, or a kernel trace and the copy trace of the same run)."
            )


def barrier_of(
    rank_steps: dict[int, list[StepFigures]], world_size: int | None
) -> tuple[BarrierFigures, dict[int, int]]:
    """Straggler per step (the rank with most compute), each rank's wait inside collectives for it.

    A collective finishes only when its last rank joins: a rank whose compute ended Δ earlier than the straggler's
    waits Δ inside the collective — at most the time it spent in collectives. Steps are matched by number.
    """
    numbers = sorted(set.intersection(*({s.number for s in steps} for steps in rank_steps.values())))
    if not numbers:
        raise ProfileError(
            "the traces share no ProfilerStep#N: expected the ranks of one run, profiled over the same steps",
            format_expected=FORMAT,
        )
    by_rank = {rank: {s.number: s for s in steps} for rank, steps in rank_steps.items()}
    stragglers: Counter[int] = Counter()
    waits: dict[int, int] = dict.fromkeys(by_rank, 0)
    total_wall = 0
    for number in numbers:
        row = {rank: steps[number] for rank, steps in by_rank.items()}
        slowest = max(row, key=lambda r: (row[r].activity.compute_ns, -r))
        stragglers[slowest] += 1
        lead = row[slowest].activity.compute_ns
        for rank, step in row.items():
            gap = max(0, lead - step.activity.compute_ns)
            step.wait_ns = min(step.activity.comm_ns, gap)
            step.straggler = rank == slowest
            waits[rank] += step.wait_ns
            total_wall += step.wall_ns
    compute_total = {r: sum(steps[n].activity.compute_ns for n in numbers) for r, steps in by_rank.items()}
    straggler = max(stragglers, key=lambda r: (stragglers[r], compute_total[r], -r))
    wait_total = sum(waits.values())
    return (
        BarrierFigures(
            ranks=len(rank_steps),
            world_size=world_size,
            straggler=straggler,
            wait_fraction=wait_total / total_wall if total_wall else 0.0,
            wait_ns=wait_total,
            step_ns=sum(by_rank[straggler][n].wall_ns for n in numbers),
            steps=len(numbers),
        ),
        waits,
    )


def _sum_ranks(parts: list[Breakdown]) -> Breakdown:
    """Ranks added up: phase totals and activity summed (device time of all GPUs), shares of ranks × wall."""
    totals: dict[tuple[str, Kind], list[int]] = {}
    for part in parts:
        for phase in part.phases:
            entry = totals.setdefault((phase.name, phase.kind), [0, 0])
            entry[0] += phase.total_ns
            entry[1] += phase.calls
    acts = [p.activity for p in parts if p.activity is not None]
    act = Activity(**{f: sum(getattr(a, f) for a in acts) for f in Activity.__struct_fields__}) if acts else None
    wall = max(p.wall_ns or 0 for p in parts)
    rank_time = wall * len(parts)
    busy = act.busy_ns if act is not None else None
    phases = [
        timed_phase(
            name,
            kind,
            total,
            calls,
            busy=busy,
            wall=rank_time,
            compute=act.compute_ns if act is not None else None,
            on_device=kind in DEVICE_KINDS,
        )
        for (name, kind), (total, calls) in totals.items()
    ]
    notes = [n for part in parts for n in part.notes]
    return Breakdown(
        format=FORMAT,
        wall_ns=wall,
        device_busy_ns=busy,
        phases=largest_first(phases),
        inclusive=False,
        notes=list(dict.fromkeys(notes)),
        device_timeline=all(p.device_timeline for p in parts),
        activity=act,
    )


__all__ = ["RankPart", "barrier_of", "check_same_run", "rank_part", "read_run", "run_of"]
