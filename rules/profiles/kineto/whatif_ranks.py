"""The what-if of a run of many ranks, replayed where its traces live: each rank alone in its summary, joined in
the combine.

A rank summary made with ``--summary --what-if PATTERN=K`` replays its own trace twice, as recorded and with the
targets faster (`replay.py`, the rank alone), and keeps, for each selected step, its arrival at each collective
(process group and sequence, as `Replayer` pairs them) before and after the change, the collective's end on the
rank alone, its recorded duration and its k, with the rank-alone what-if's figures and losses (`RankWhatIf`, in the
summary's optional ``what_if`` field).

`combine_what_if` joins the ranks step by step as a chain of collectives: every rank starts the step together; a
rank reaches collective j what its own replay took from its previous collective's end (from the step's start for
the first); a collective ends when its last rank arrives, plus its transfer (the shortest recorded duration among
the ranks: the last rank to arrive waits for no one; divided by k when it is a target); a rank's step ends its own
replay's tail after its last collective; the run's step is its slowest rank's. At k = 1 the chain gives the measured
step when the ranks' steps start together and each rank's work between collectives waits on the collective before
it (as in data-parallel training); work that overlaps a collective keeps its rank-alone timing. Each step is one
pass over the summaries (time linear in their number), holding beyond them one step's collectives across ranks.
Making a rank's part holds its schedule's columns, what the replay of its steps needs (`schedule.py`).

The losses: overlap, launch and sync are the rank's where the targets save the most (Amdahl's saving is read
there, as `whatif.decompose` reads it on several ranks' traces), and ``ranks`` is what is left: that rank's
replayed saving less the run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import msgspec

from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.replay import RANKS, scaled
from worthit.rules.profiles.kineto.schedule import Schedule
from worthit.rules.profiles.kineto.steps import StepRange
from worthit.rules.profiles.kineto.whatif import (
    MAX_TARGETS,
    Losses,
    StepWhatIf,
    Target,
    TargetFigures,
    WhatIf,
    WhatIfError,
    _targets,
    decompose,
    prepare,
)

#: The layout of a summary's ``what_if`` field.
WHAT_IF_VERSION = 1
#: At most this many collectives a step in a summary's what-if (an FSDP step runs a few thousand).
MAX_STEP_COLLECTIVES = 65_536
#: At most this many steps, notes and phases a target in a summary's what-if.
MAX_WHAT_IF_STEPS = 4096
MAX_WHAT_IF_NOTES = 64
MAX_TARGET_PHASES = 16_384
_FORMAT = "worthit-rank-summary"


class CollectiveArrival(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A rank at one collective in one step, on the rank alone (ns from the step's start in each replay): its
    arrival and end as recorded (`before_ns`, `end_before_ns`) and with the targets faster (`after_ns`,
    `end_after_ns`), its recorded duration (its wait for the other ranks and its transfer) and its k (1 when the
    collective is not a target)."""

    key: str
    before_ns: int
    end_before_ns: int
    after_ns: int
    end_after_ns: int
    duration_ns: int
    k: float = 1.0


class StepArrivals(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One selected step of the rank alone: its measured, replayed, predicted, Amdahl's and explained times (as
    `StepWhatIf`) and its collectives in order of arrival."""

    name: str
    number: int
    measured_ns: int
    replayed_ns: int
    predicted_ns: int
    amdahl_ns: int
    explained_ns: int
    collectives: Annotated[list[CollectiveArrival], msgspec.Meta(max_length=MAX_STEP_COLLECTIVES)]


class RankTarget(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A target as the rank replayed it (as `TargetFigures`)."""

    pattern: str
    k: float
    phases: Annotated[list[str], msgspec.Meta(max_length=MAX_TARGET_PHASES)]
    device_ns: int


class RankWhatIf(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A summary's ``what_if`` (layout `WHAT_IF_VERSION`): the targets, the rank-alone what-if's per-step means
    (measured, replayed, predicted, Amdahl's; the losses, ``ranks`` 0) and every selected step's arrivals."""

    version: int = WHAT_IF_VERSION
    targets: Annotated[list[RankTarget], msgspec.Meta(max_length=MAX_TARGETS)]
    measured_ns: int
    replayed_ns: int
    predicted_ns: int
    amdahl_ns: int
    lost_ns: Losses
    explained_share: float
    steps: Annotated[list[StepArrivals], msgspec.Meta(max_length=MAX_WHAT_IF_STEPS)]
    notes: Annotated[list[str], msgspec.Meta(max_length=MAX_WHAT_IF_NOTES)]


def rank_what_if(schedule: Schedule, targets: Sequence[Target], steps: StepRange | None = None) -> RankWhatIf:
    """The rank's what-if for its summary: `schedule` replayed alone with `targets` faster over `steps` (None:
    every complete step), each step's collectives with its arrivals; ProfileError as `what_if` raises it."""
    if not targets:
        raise WhatIfError("expected at least one what-if target (PATTERN=K)")
    if len(targets) > MAX_TARGETS:
        raise WhatIfError(f"expected at most {MAX_TARGETS} what-if targets, got {len(targets)}")
    prepared = prepare([schedule], steps)
    replayer = prepared.replayer
    if len(replayer.windows[0].steps) > MAX_WHAT_IF_STEPS:
        raise ProfileError(
            f"{schedule.file or 'the trace'}: {len(replayer.windows[0].steps):,} steps chosen, more than the "
            f"{MAX_WHAT_IF_STEPS:,} a summary's what-if holds: choose fewer with --steps",
            format_expected=_FORMAT,
        )
    # A target this rank does not run matches nothing here: another rank may run it.
    k, figures = _targets(replayer, targets, strict=False)
    alone = decompose(replayer, k, figures, list(prepared.notes))
    identity, predicted = replayer.run({}, RANKS), replayer.run(k, RANKS)
    before_spans, after_spans = replayer.spans(identity, 0), replayer.spans(predicted, 0)
    window = replayer.windows[0]
    per_step: list[list[CollectiveArrival]] = [[] for _ in window.steps]
    counts: dict[str, int] = {}
    for i in sorted(schedule.op_collective):
        group, seq = schedule.op_collective[i]
        where = group or schedule.streams[schedule.op_stream[i]][1].rpartition(" stream ")[2]
        if seq is None:
            seq = counts.get(where, 0)
            counts[where] = seq + 1
        j = replayer.step[i]
        if j < 0:
            continue
        lo, hi = before_spans[j][0], after_spans[j][0]
        per_step[j].append(
            CollectiveArrival(
                key=f"{where}#{seq}",
                before_ns=identity.start[i] - lo,
                end_before_ns=identity.end[i] - lo,
                after_ns=predicted.start[i] - hi,
                end_after_ns=predicted.end[i] - hi,
                duration_ns=replayer.rec_end[i] - replayer.rec_start[i],
                k=k.get(i, 1.0),
            )
        )
    out_steps = []
    for st, row, arrivals in zip(window.steps, alone.steps, per_step, strict=True):
        if len(arrivals) > MAX_STEP_COLLECTIVES:
            raise ProfileError(
                f"{schedule.file or 'the trace'}: {st.name} runs {len(arrivals):,} collectives, more than the "
                f"{MAX_STEP_COLLECTIVES:,} a summary's what-if holds a step",
                format_expected=_FORMAT,
            )
        arrivals.sort(key=lambda a: (a.before_ns, a.key))
        out_steps.append(
            StepArrivals(
                name=st.name,
                number=st.number,
                measured_ns=row.measured_ns,
                replayed_ns=row.replayed_ns,
                predicted_ns=row.predicted_ns,
                amdahl_ns=row.amdahl_ns,
                explained_ns=row.explained_ns,
                collectives=arrivals,
            )
        )
    return RankWhatIf(
        targets=[
            RankTarget(pattern=t.pattern, k=t.k, phases=t.phases[:MAX_TARGET_PHASES], device_ns=t.device_ns)
            for t in alone.targets
        ],
        measured_ns=alone.measured_ns,
        replayed_ns=alone.replayed_ns,
        predicted_ns=alone.predicted_ns,
        amdahl_ns=alone.amdahl_ns,
        lost_ns=alone.lost_ns,
        explained_share=alone.explained_share,
        steps=out_steps,
        notes=alone.notes[:MAX_WHAT_IF_NOTES],
    )


class RankOf(msgspec.Struct, kw_only=True):
    """What the combine needs of a summary: the rank's name (its rank, else its place) and its what-if."""

    who: str
    what_if: RankWhatIf | None


def combine_what_if(ranks: Sequence[RankOf]) -> WhatIf:
    """The run's what-if from its ranks' summaries' what-ifs (see the module's docstring); ProfileError when one
    has none, when they were made for other targets or steps, or when a what-if's layout is not read here."""
    if not ranks:
        raise ProfileError("no rank summaries given", format_expected=_FORMAT)
    chosen: list[tuple[str, RankWhatIf]] = []
    for r in ranks:
        if r.what_if is None:
            raise ProfileError(
                f"{r.who}'s summary carries no what-if: make every rank's summary with the same --what-if",
                format_expected=_FORMAT,
            )
        if r.what_if.version != WHAT_IF_VERSION:
            raise ProfileError(
                f"{r.who}'s what-if is layout {r.what_if.version}; this worthit reads layout {WHAT_IF_VERSION}: make "
                "the summary again with this worthit",
                format_expected=_FORMAT,
            )
        chosen.append((r.who, r.what_if))
    first_who, first = chosen[0]
    asked = [(t.pattern, t.k) for t in first.targets]
    numbers = [st.number for st in first.steps]
    for who, w in chosen[1:]:
        if [(t.pattern, t.k) for t in w.targets] != asked:
            raise ProfileError(
                f"the summaries were made for different what-ifs ({first_who}: {_targets_text(first)}; {who}: "
                f"{_targets_text(w)}): expected every rank's summary made with the same --what-if",
                format_expected=_FORMAT,
            )
        if [st.number for st in w.steps] != numbers:
            raise ProfileError(
                f"the summaries' what-ifs speak of different steps ({first_who}: {_numbers(first)}; {who}: "
                f"{_numbers(w)}): expected summaries made with the same --steps",
                format_expected=_FORMAT,
            )
    notes: list[str] = []
    # The rank where the targets save the most: Amdahl's saving and the first three losses are read there.
    star = max(range(len(chosen)), key=lambda r: (chosen[r][1].measured_ns - chosen[r][1].amdahl_ns, -r))
    star_w = chosen[star][1]
    rows: list[StepWhatIf] = []
    last_before, last_after = [0] * len(chosen), [0] * len(chosen)
    joined = True
    for j, number in enumerate(numbers):
        steps = [w.steps[j] for _, w in chosen]
        keys = [a.key for a in steps[0].collectives]
        if any(sorted(a.key for a in st.collectives) != sorted(keys) for st in steps[1:]):
            joined = False
        measured = max(st.measured_ns for st in steps)
        if joined:
            replayed = _chain(steps, keys, last_before, after=False)
            predicted = _chain(steps, keys, last_after, after=True)
        else:
            replayed = max(st.replayed_ns for st in steps)
            predicted = max(st.predicted_ns for st in steps)
        own = steps[star].measured_ns - steps[star].amdahl_ns
        widest = max(range(len(steps)), key=lambda r: steps[r].measured_ns)
        rows.append(
            StepWhatIf(
                name=steps[0].name if all(st.name == steps[0].name for st in steps) else f"step {number}",
                rank=None,
                measured_ns=measured,
                replayed_ns=replayed,
                predicted_ns=predicted,
                amdahl_ns=measured - own,
                explained_ns=steps[widest].explained_ns,
            )
        )
    if not joined:
        notes.append(
            "the ranks' collectives do not pair up in every step (a sampled or cut trace): each step is its slowest "
            "rank's own replay, and what waiting ranks eat is not counted."
        )
    else:
        notes.append(
            f"{len(chosen)} ranks joined on their collectives, each replayed alone where its trace lives: the ranks "
            "start each step together and each rank's work between collectives waits on the collective before it."
        )
    n = len(rows)
    measured_ns = round(sum(r.measured_ns for r in rows) / n)
    replayed_ns = round(sum(r.replayed_ns for r in rows) / n)
    predicted_ns = round(sum(r.predicted_ns for r in rows) / n)
    s0 = star_w.measured_ns - star_w.amdahl_ns
    lost = star_w.lost_ns
    s3 = s0 - lost.overlap - lost.launch - lost.sync
    s4 = replayed_ns - predicted_ns
    losses = Losses(overlap=lost.overlap, launch=lost.launch, sync=lost.sync, ranks=s3 - s4)
    seen: set[str] = set()
    for _, w in chosen:
        for note in w.notes:
            if note not in seen and len(seen) < MAX_WHAT_IF_NOTES:
                seen.add(note)
    notes.extend(sorted(seen))
    targets = _merged_targets(chosen)
    for t in targets:
        if not t.phases:
            raise WhatIfError(f"expected {t.pattern!r} to match device work in the chosen steps of a rank, none does")
    statement, better = _statement(chosen, star, (last_before, last_after), targets, (s0, s4), losses, joined)
    explained = sum(r.explained_ns for r in rows)
    measured_sum = sum(r.measured_ns for r in rows)
    return WhatIf(
        targets=targets,
        measured_ns=measured_ns,
        replayed_ns=replayed_ns,
        predicted_ns=predicted_ns,
        amdahl_ns=measured_ns - s0,
        lost_ns=losses,
        explained_share=explained / measured_sum if measured_sum else 1.0,
        steps=rows,
        notes=notes,
        statement=statement,
        better_target=better,
    )


def _chain(steps: Sequence[StepArrivals], keys: Sequence[str], last: list[int], *, after: bool) -> int:
    """The run's step as a chain of its collectives (in the first rank's order of arrival); each collective's last
    rank to arrive (the lowest of a tie) counted in `last`."""
    at = [{a.key: a for a in st.collectives} for st in steps]
    end = 0
    previous: list[int] = [0] * len(steps)  # each rank's own end of the collective before, in its replay
    for key in keys:
        latest, who = 0, -1
        for r, here in enumerate(at):
            a = here[key]
            arrive = end + (a.after_ns if after else a.before_ns) - previous[r]
            if who < 0 or arrive > latest:
                latest, who = arrive, r
            previous[r] = a.end_after_ns if after else a.end_before_ns
        last[who] += 1
        transfer = min(here[key].duration_ns for here in at)
        factor = at[0][key].k if after else 1.0
        end = latest + (scaled(transfer, factor) if transfer > 0 else transfer)
    if not keys:
        return max(st.predicted_ns if after else st.replayed_ns for st in steps)
    return max(end + (st.predicted_ns if after else st.replayed_ns) - previous[r] for r, st in enumerate(steps))


def _merged_targets(chosen: Sequence[tuple[str, RankWhatIf]]) -> list[TargetFigures]:
    out = []
    for i, t in enumerate(chosen[0][1].targets):
        phases: set[str] = set()
        device = 0
        for _, w in chosen:
            phases.update(w.targets[i].phases)
            device += w.targets[i].device_ns
        out.append(TargetFigures(pattern=t.pattern, k=t.k, phases=sorted(phases), device_ns=device))
    return out


def _statement(
    chosen: Sequence[tuple[str, RankWhatIf]],
    star: int,
    last: tuple[list[int], list[int]],
    targets: list[TargetFigures],
    savings: tuple[int, int],
    lost: Losses,
    joined: bool,
) -> tuple[str, str | None]:
    """The run's sentence and better target, as `whatif._why` words them on the ranks' traces read together."""
    amdahl, replayed = savings
    what = " and ".join(f"{t.pattern} {t.k:g}x faster" for t in targets)
    head = f"replaying the run's {len(chosen)} ranks with {what} shortens each step by {_ms(replayed)}"
    if amdahl - replayed <= max(1000, amdahl // 100):
        return f"{head}, as Amdahl's share says ({_ms(amdahl)}).", None
    parts = {"overlap": lost.overlap, "launch": lost.launch, "sync": lost.sync, "ranks": lost.ranks}
    largest = max(parts, key=lambda name: parts[name])
    if largest == "ranks" and joined:
        before, after = (max(range(len(counts)), key=lambda r: (counts[r], -r)) for counts in last)
        better = (
            f"the straggler ({chosen[before][0]})"
            if before != star
            else f"the next-slowest rank ({chosen[after][0]}) with it"
        )
        return (
            f"{head}, not {_ms(amdahl)}: the collectives then wait for the slowest rank ({chosen[after][0]}).",
            better,
        )
    reasons = {
        "overlap": "the targets run under other streams' work on the rank where they save the most",
        "launch": "the GPU waits on the host on the rank where they save the most",
        "sync": "the host does not wait for that device work before its step ends",
        "ranks": "the collectives wait for the slowest rank",
    }
    return f"{head}, not {_ms(amdahl)}: {reasons[largest]}.", None


def _targets_text(w: RankWhatIf) -> str:
    return ", ".join(f"{t.pattern}={t.k:g}" for t in w.targets)


def _numbers(w: RankWhatIf) -> str:
    return ", ".join(str(st.number) for st in w.steps) or "none"


def _ms(ns: int) -> str:
    return f"{ns / 1e6:,.3f} ms"


__all__ = [
    "MAX_STEP_COLLECTIVES",
    "WHAT_IF_VERSION",
    "CollectiveArrival",
    "RankOf",
    "RankTarget",
    "RankWhatIf",
    "StepArrivals",
    "combine_what_if",
    "rank_what_if",
]
