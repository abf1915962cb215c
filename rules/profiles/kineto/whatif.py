"""What if the targets ran k times faster: the step the replay predicts, beside Amdahl's, and where the rest went.

Targets are named as users name them: a glob over the device ops' phase names (``*cudnn*``, ``H2D copy``) or a
kind (``kind:comm``, ``kind:copy``, ``kind:kernel``), each with its own k; an op matched by several targets takes
the first one's k. The window is the chosen steps (by default every complete step: the last one is left out when
the profiler cut its device work short, as `kineto.steps` does).

Amdahl's step is the measured step less the targets' own time saved in it (their ops launched in the step). The
replay predicts the step from the trace's schedule (`replay.py`). The saving Amdahl promises and the replay does
not deliver is split by adding the model's layers in this fixed order, each layer's loss being the saving of the
layer before it less its own, so that the four parts add up exactly to Amdahl's saving less the replayed one:

1. **overlap**: the device ops with their streams and event edges, the host left out (the work of a step ends
   when its last op ends): what runs concurrently on another stream hides the target;
2. **launch**: plus the host: each op also waits for its launch, the host thread keeping its own work and waiting
   in its blocking calls (the window still ends when its device work ends): the GPU waiting for the host eats the
   saving;
3. **sync**: the window ends where the host's ``ProfilerStep`` spans end, which the device's work reaches only
   through the blocking calls: device time the host does not wait for saves it nothing;
4. **ranks**: plus the collectives across ranks: a rank that waits for a slower one saves nothing.

A part may be negative: a later layer gave back what an earlier one took (the host waiting on the device turns
device time it had hidden back into step time). On several ranks, layers 0-3 are read on the rank where the targets
save the most and layer 4 on the run (its slowest rank). Figures are per step, the mean over the window, to the ns.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

import msgspec

from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.intervals import clip, union_length_arrays
from worthit.rules.profiles.kineto.parse import FORMAT
from worthit.rules.profiles.kineto.replay import DEVICE, HOST, RANKS, RankWindow, Replayer, Run, scaled
from worthit.rules.profiles.kineto.schedule import Schedule, StepSpan
from worthit.rules.profiles.kineto.steps import StepRange
from worthit.rules.profiles.model import KINDS

MAX_TARGETS = 16
MAX_K = 1e6
_TARGET_RE = re.compile(r"^(?P<pattern>.+)=\s*(?P<k>[0-9.eE+]+)\s*[x×]?\s*$")


class WhatIfError(ProfileError):
    """A what-if that cannot be answered as asked (a malformed target, one that matches no device work): a 4xx,
    its message saying what was expected."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.args = (detail,)


class Target(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What to make faster: a glob over phase names or ``kind:KIND``, and how many times faster."""

    pattern: str
    k: float


class TargetFigures(msgspec.Struct, kw_only=True):
    """A target as replayed: its pattern and k, the phases it matched and their device time in the window."""

    pattern: str
    k: float
    phases: list[str]
    device_ns: int


class Losses(msgspec.Struct, kw_only=True):
    """Where Amdahl's saving went, per step (ns): the four parts add up to Amdahl's saving less the replayed one."""

    overlap: int
    launch: int
    sync: int
    ranks: int


class StepWhatIf(msgspec.Struct, kw_only=True):
    """One step of one rank: measured, replayed as recorded, predicted with the targets faster, Amdahl's, and the
    replay without its residual delays (how much of the step the model explains)."""

    name: str
    rank: int | None
    measured_ns: int
    replayed_ns: int
    predicted_ns: int
    amdahl_ns: int
    explained_ns: int


class WhatIf(msgspec.Struct, kw_only=True):
    """The what-if of a trace (one rank or a run): per-step means over the window, the losses, every step, notes."""

    targets: list[TargetFigures]
    measured_ns: int
    replayed_ns: int
    predicted_ns: int
    amdahl_ns: int
    lost_ns: Losses
    explained_share: float
    steps: list[StepWhatIf]
    notes: list[str]
    statement: str = ""
    reason: str | None = None
    """Why the replay saves less than Amdahl's share (the largest loss), the clause `statement` ends with; None when
    Amdahl's share holds."""
    better_target: str | None = None


def parse_target(text: str) -> Target:
    """``'PATTERN=K'`` (``*cudnn*=2``, ``kind:comm=1.5x``) → Target; ProfileError saying what was expected."""
    found = _TARGET_RE.match(text.strip())
    if found is None:
        raise WhatIfError(f"expected a what-if as PATTERN=K (e.g. '*cudnn*=2' or 'kind:comm=2'), got {text!r}")
    try:
        k = float(found.group("k"))
    except ValueError:
        k = math.nan
    return check_target(Target(pattern=found.group("pattern").strip(), k=k))


def check_target(target: Target) -> Target:
    """The target, or ProfileError naming what is wrong with it."""
    if not target.pattern:
        raise WhatIfError("expected a pattern before '=' in the what-if")
    if not (math.isfinite(target.k) and 1 <= target.k <= MAX_K):
        raise WhatIfError(f"expected k between 1 and {MAX_K:g} for {target.pattern!r}, got {target.k}")
    if target.pattern.lower().startswith("kind:") and target.pattern[5:].strip().lower() not in KINDS:
        raise WhatIfError(
            f"expected a kind among {', '.join(KINDS)} in {target.pattern!r}, got {target.pattern[5:].strip()!r}"
        )
    return target


def _matcher(pattern: str) -> tuple[bool, str]:
    if pattern.lower().startswith("kind:"):
        return True, pattern[5:].strip().lower()
    return False, pattern.lower()


def select_window(s: Schedule, steps: StepRange | None) -> tuple[RankWindow, str | None]:
    """The steps of `s` the what-if speaks of, and a note when the last step was left out; ProfileError when none."""
    spans = s.steps
    if not spans:
        raise ProfileError(
            f"{s.file or 'the trace'} marks no ProfilerStep#N: the replay speaks of steps "
            "(profile with torch.profiler's schedule and call prof.step())",
            format_expected=FORMAT,
        )
    note = None
    if steps is None:
        chosen = list(spans)
        if len(spans) >= 2 and _cut_short(s, spans[-1]):
            chosen = spans[:-1]
            note = f"{spans[-1].name}, the last step, is left out: the profiler stopped inside it."
    else:
        chosen = [st for st in spans if steps.includes(st.number)]
        if not chosen:
            have = ", ".join(str(st.number) for st in spans)
            raise ProfileError(
                f"no steps {steps} in {s.file or 'the trace'}; it has steps {have}", format_expected=FORMAT
            )
    after = [st.start for st in spans if st.start > chosen[-1].start]
    return RankWindow(chosen, chosen[0].start, after[0] if after else 1 << 62), note


def _cut_short(s: Schedule, step: StepSpan) -> bool:
    """Whether the profiler stopped inside `step`: device work launched in it runs past the end of everything
    recorded on the host (the profiler's flush cuts the rest of it)."""
    last_host = max(s.call_end) if s.call_end else step.end
    for i in range(len(s.op_start)):
        c = s.op_call[i]
        if c >= 0 and step.start <= s.call_start[c] and s.op_end[i] > max(last_host, step.end):
            return True
    return False


@dataclass(slots=True)
class Prepared:
    """The schedules of one run with their window and dependency order: what every what-if on them shares."""

    replayer: Replayer
    notes: list[str]


def prepare(schedules: Sequence[Schedule], steps: StepRange | None = None) -> Prepared:
    """The schedules (one per rank of one run) ready for what-ifs on `steps`; ProfileError when they cannot be
    replayed."""
    windows: list[RankWindow] = []
    notes: list[str] = []
    for s in schedules:
        w, note = select_window(s, steps)
        windows.append(w)
        if note is not None:
            notes.append(note if len(schedules) == 1 else f"{_who(s)}: {note}")
    if len(schedules) > 1:
        windows = _common_steps(schedules, windows, notes)
    threads = [
        s
        for s in schedules
        if len({s.call_thread[s.op_call[i]] for i in range(len(s.op_call)) if s.op_call[i] >= 0}) > 1
    ]
    if threads:
        notes.append(
            "work is launched from several host threads (the autograd thread, say): each thread keeps its own "
            "timing, and a thread waiting on another's work on the host (not through the GPU) is not modelled."
        )
    return Prepared(Replayer(schedules, windows), notes)


def _common_steps(schedules: Sequence[Schedule], windows: list[RankWindow], notes: list[str]) -> list[RankWindow]:
    """The ranks' windows cut to the step numbers every rank has (a step speaks of the run, every rank in it)."""
    common = set.intersection(*({st.number for st in w.steps} for w in windows))
    if not common:
        raise ProfileError(
            "the ranks' chosen steps have no step number in common: "
            + "; ".join(
                f"{_who(s)}: {w.steps[0].number}-{w.steps[-1].number}" for s, w in zip(schedules, windows, strict=True)
            ),
            format_expected=FORMAT,
        )
    out = []
    for s, w in zip(schedules, windows, strict=True):
        if len(w.steps) == len(common):
            out.append(w)
            continue
        chosen = [st for st in w.steps if st.number in common]
        after = [st.start for st in s.steps if st.start > chosen[-1].start]
        out.append(RankWindow(chosen, chosen[0].start, after[0] if after else 1 << 62))
        notes.append(f"{_who(s)}: only the steps every rank has are replayed ({chosen[0].name}..{chosen[-1].name}).")
    return out


def what_if(
    schedules: Sequence[Schedule] | Prepared, targets: Sequence[Target], steps: StepRange | None = None
) -> WhatIf:
    """Replay the schedules (one per rank of one run, or `prepare`d once for several what-ifs, `steps` then
    unused) with each target's ops k times faster; ProfileError when a target matches nothing or the trace cannot
    be replayed."""
    if not targets:
        raise WhatIfError("expected at least one what-if target (PATTERN=K)")
    if len(targets) > MAX_TARGETS:
        raise WhatIfError(f"expected at most {MAX_TARGETS} what-if targets, got {len(targets)}")
    prepared = schedules if isinstance(schedules, Prepared) else prepare(schedules, steps)
    replayer = prepared.replayer
    k, figures = _targets(replayer, targets)
    notes = list(prepared.notes)
    if not replayer.groups and any(
        replayer.schedules[replayer.rank[g]].op_kind[g - replayer.op_base[replayer.rank[g]]] == "comm" for g in k
    ):
        notes.append(
            "a collective's time on one rank includes its wait for the other ranks, which a faster collective does "
            "not shorten: replay the run's traces together (one per rank) for the ranks' part."
        )
    return decompose(replayer, k, figures, notes)


def _who(s: Schedule) -> str:
    return f"rank {s.rank}" if s.rank is not None else s.file


def _targets(
    replayer: Replayer, targets: Sequence[Target], *, strict: bool = True
) -> tuple[dict[int, float], list[TargetFigures]]:
    """Global op → its k, and each target's figures; ProfileError for a target matching nothing when `strict` (a
    rank of a run replayed alone may not run the target, which another rank does)."""
    k: dict[int, float] = {}
    figures: list[TargetFigures] = []
    for target in targets:
        by_kind, pattern = _matcher(target.pattern)
        phases: set[str] = set()
        device = 0
        for r, s in enumerate(replayer.schedules):
            base = replayer.op_base[r]
            # Each distinct name matched once: a trace names a few hundred phases over up to millions of ops.
            matched = {name for name in set(s.op_name) if fnmatchcase(name.lower(), pattern)} if not by_kind else None
            for i, name in enumerate(s.op_name):
                g = base + i
                hit = s.op_kind[i] == pattern if matched is None else name in matched
                if not hit or replayer.step[g] < 0:
                    continue
                phases.add(name)
                device += s.op_end[i] - s.op_start[i]
                k.setdefault(g, target.k)
        if not phases and strict:
            names = _largest_names(replayer)
            raise WhatIfError(
                f"expected {target.pattern!r} to match device work in the chosen steps, none matches; the largest "
                f"phases: {'; '.join(names)}"
            )
        figures.append(TargetFigures(pattern=target.pattern, k=target.k, phases=sorted(phases), device_ns=device))
    return k, figures


def _largest_names(replayer: Replayer) -> list[str]:
    totals: dict[str, int] = {}
    for s in replayer.schedules:
        for i, name in enumerate(s.op_name):
            totals[name] = totals.get(name, 0) + s.op_end[i] - s.op_start[i]
    return [name[:80] for name, _ in sorted(totals.items(), key=lambda kv: -kv[1])[:5]]


def decompose(replayer: Replayer, k: dict[int, float], figures: list[TargetFigures], notes: list[str]) -> WhatIf:
    """The what-if's figures: the layers replayed at k = 1 and at k, Amdahl's, the losses and every step."""
    ranks = range(len(replayer.schedules))
    n_steps = len(replayer.windows[0].steps)
    identity = replayer.run({}, RANKS)
    predicted = replayer.run(k, RANKS)
    bare = replayer.run({}, RANKS, residuals=False)
    # Amdahl: the targets' own time saved, per rank and step.
    saved = [[0] * len(replayer.windows[r].steps) for r in ranks]
    for g, factor in k.items():
        d = replayer.rec_end[g] - replayer.rec_start[g]
        saved[replayer.rank[g]][replayer.step[g]] += d - scaled(d, factor)
    star = max(ranks, key=lambda r: (sum(saved[r]), -r))
    # Layers 1 and 2 end the window with its device work, 3 and 4 with the host's span; 2 and 3 are one replay.
    sync_faster = replayer.run(k, HOST) if replayer.groups else predicted
    savings = [
        sum(saved[star]),
        _layer_total(replayer, replayer.run({}, DEVICE), star) - _layer_total(replayer, replayer.run(k, DEVICE), star),
        _layer_total(replayer, identity, star) - _layer_total(replayer, sync_faster, star),
        _span_total(replayer, identity, star) - _span_total(replayer, sync_faster, star),
    ]
    measured_total = max(sum(st.end - st.start for st in replayer.windows[r].steps) for r in ranks)
    replayed_total = max(_span_total(replayer, identity, r) for r in ranks)
    predicted_total = max(_span_total(replayer, predicted, r) for r in ranks)
    steps: list[StepWhatIf] = []
    explained = measured = 0
    for r in ranks:
        s = replayer.schedules[r]
        rank = s.rank if s.rank is not None else (r if len(replayer.schedules) > 1 else None)
        rows = zip(
            replayer.windows[r].steps,
            replayer.spans(identity, r),
            replayer.spans(predicted, r),
            replayer.spans(bare, r),
            saved[r],
            strict=True,
        )
        for st, same, fast, plain, own in rows:
            length = st.end - st.start
            measured += length
            explained += plain[1] - plain[0]
            steps.append(
                StepWhatIf(
                    name=st.name,
                    rank=rank,
                    measured_ns=length,
                    replayed_ns=same[1] - same[0],
                    predicted_ns=fast[1] - fast[0],
                    amdahl_ns=length - own,
                    explained_ns=plain[1] - plain[0],
                )
            )
    measured_ns = round(measured_total / n_steps)
    replayed_ns = round(replayed_total / n_steps)
    predicted_ns = round(predicted_total / n_steps)
    # Means to the ns; each part is the difference of two rounded savings, so the parts add up exactly.
    s0 = round(savings[0] / n_steps)
    s1, s2, s3 = (round(x / n_steps) for x in savings[1:])
    s4 = replayed_ns - predicted_ns
    notes = [*notes, *_schedule_notes(replayer), *replayer.notes]
    lost = Losses(overlap=s0 - s1, launch=s1 - s2, sync=s2 - s3, ranks=s3 - s4)
    statement, reason, better = _why(replayer, predicted, star, figures, (s0, s4), lost, measured_ns)
    return WhatIf(
        targets=figures,
        measured_ns=measured_ns,
        replayed_ns=replayed_ns,
        predicted_ns=predicted_ns,
        amdahl_ns=measured_ns - s0,
        lost_ns=lost,
        explained_share=explained / measured if measured else 1.0,
        steps=steps,
        notes=notes,
        statement=statement,
        reason=reason,
        better_target=better,
    )


def _why(
    replayer: Replayer,
    predicted: Run,
    star: int,
    figures: list[TargetFigures],
    savings: tuple[int, int],
    lost: Losses,
    step: int,
) -> tuple[str, str | None, str | None]:
    """One sentence on the replayed saving against Amdahl's and why they differ (the largest loss), that reason as
    a clause, and the target the replay points to instead (both None when Amdahl's share holds)."""
    amdahl, replayed = savings
    what = " and ".join(f"{t.pattern} {t.k:g}x faster" for t in figures)
    head = f"replaying the trace with {what} shortens each step by {_ms(replayed)}"
    if amdahl - replayed <= max(1000, amdahl // 100):  # within 1% (or a µs): Amdahl's share holds
        return f"{head}, as Amdahl's share says ({_ms(amdahl)}).", None, None
    parts = {"overlap": lost.overlap, "launch": lost.launch, "sync": lost.sync, "ranks": lost.ranks}
    largest = max(parts, key=lambda name: parts[name])
    if largest == "launch":
        idle = _device_idle(replayer, star)
        reason = f"the GPU waits on the host for {_ms(idle)} of each {_ms(step)} step"
        better = "the host's launch work (CUDA graphs, fusion or fewer, larger kernels)"
    elif largest == "overlap":
        reason = "the targets run under other streams' work, which then sets the step"
        better = "the exposed part of the work the targets run under (on the other streams)"
    elif largest == "sync":
        reason = "the host does not wait for that device work before its step ends"
        better = "the work the host waits on before each step ends"
    else:
        before, after = _straggler(replayer, replayer.rec_start), _straggler(replayer, predicted.start)
        reason = f"the collectives then wait for the slowest rank ({_who(replayer.schedules[after])})"
        better = (
            f"the straggler ({_who(replayer.schedules[before])})"
            if before != star
            else f"the next-slowest rank ({_who(replayer.schedules[after])}) with it"
        )
    return f"{head}, not {_ms(amdahl)}: {reason}.", reason, better


def _device_idle(replayer: Replayer, rank: int) -> int:
    """Mean time per step of `rank` when none of its device ops runs (recorded)."""
    s = replayer.schedules[rank]
    steps = replayer.windows[rank].steps
    idle = 0
    for st in steps:
        starts, ends = clip(s.op_start, s.op_end, st.start, st.end)
        idle += (st.end - st.start) - union_length_arrays(starts, ends)
    return round(idle / len(steps))


def _straggler(replayer: Replayer, start: Sequence[int]) -> int:
    """The rank that arrives last at most collectives, by the ops' `start` (on the aligned clock)."""
    counts = [0] * len(replayer.schedules)
    for members in replayer.groups:
        last = max(members, key=lambda g: start[g] + replayer.offset[replayer.rank[g]])
        counts[replayer.rank[last]] += 1
    return max(range(len(counts)), key=counts.__getitem__)


def _schedule_notes(replayer: Replayer) -> list[str]:
    out: list[str] = []
    many = len(replayer.schedules) > 1
    for s in replayer.schedules:
        for note in s.notes:
            out.append(f"{_who(s)}: {note}" if many else note)
        latency = f"launch latency {s.latency_ns / 1000:,.1f} µs (5th percentile of launch → start)"
        out.append(f"{_who(s)}: {latency}" if many else latency)
    return out


def _span_total(replayer: Replayer, run: Run, rank: int) -> int:
    return sum(end - start for start, end in replayer.spans(run, rank))


def _layer_total(replayer: Replayer, run: Run, rank: int) -> int:
    """The window of `rank` in `run` at layers 1 and 2: from its fixed start to the end of its device work (device
    time carried from step to step, as a step's savings reach the next one's work)."""
    return replayer.device_end(run, rank) - replayer.windows[rank].lo


__all__ = [
    "MAX_K",
    "MAX_TARGETS",
    "Losses",
    "Prepared",
    "StepWhatIf",
    "Target",
    "TargetFigures",
    "WhatIf",
    "WhatIfError",
    "check_target",
    "parse_target",
    "prepare",
    "render_what_if",
    "select_window",
    "what_if",
]


def render_what_if(w: WhatIf) -> str:
    """The what-if as a terminal table: each step's measured, replayed, predicted and Amdahl's time (ms), the mean,
    where Amdahl's saving went, and the notes."""
    lines = []
    for t in w.targets:
        phases = repr(t.phases[0][:60]) if len(t.phases) == 1 else f"{len(t.phases)} phases"
        lines.append(f"what if {t.pattern} ran {t.k:g}x faster: {phases}, {_ms(t.device_ns)} of device time")
    lines.append("")
    header = f"{'step':<22}{'rank':>5}{'measured':>13}{'replayed':>13}{'predicted':>13}{'Amdahl':>13}{'explained':>11}"
    lines.append(header)
    for s in w.steps:
        rank = "" if s.rank is None else str(s.rank)
        explained = f"{100 * s.explained_ns / s.measured_ns:.1f}%" if s.measured_ns else "-"
        lines.append(
            f"{s.name[:22]:<22}{rank:>5}{_ms(s.measured_ns):>13}{_ms(s.replayed_ns):>13}{_ms(s.predicted_ns):>13}"
            f"{_ms(s.amdahl_ns):>13}{explained:>11}"
        )
    lines.append(
        f"{'a step (mean)':<22}{'':>5}{_ms(w.measured_ns):>13}{_ms(w.replayed_ns):>13}{_ms(w.predicted_ns):>13}"
        f"{_ms(w.amdahl_ns):>13}{100 * w.explained_share:>10.1f}%"
    )
    lost = w.lost_ns
    lines.append("")
    lines.append(
        f"Amdahl's saving {_ms(w.measured_ns - w.amdahl_ns)} a step; "
        f"the replay's {_ms(w.replayed_ns - w.predicted_ns)}. Lost to overlap {_ms(lost.overlap)}, "
        f"launch {_ms(lost.launch)}, sync {_ms(lost.sync)}, ranks {_ms(lost.ranks)}."
    )
    lines.append(w.statement[:1].upper() + w.statement[1:])
    if w.better_target:
        lines.append(f"The replay points to {w.better_target} instead.")
    lines.extend(f"note: {note}" for note in w.notes)
    return "\n".join(lines)


def _ms(ns: int) -> str:
    return f"{ns / 1e6:,.3f} ms"
