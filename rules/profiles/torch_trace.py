"""PyTorch profiler (Kineto) Chrome trace JSON: ``{"traceEvents": [{"ph": "X", "ts": µs, "dur": µs, …}]}``.

Device work (``cat`` kernel, gpu_memcpy, gpu_memset; PyTorch 1.8–1.10 spell them Kernel, Memcpy, Memset) becomes
phases by kernel name / copy direction, with unions over streams and devices. NCCL/RCCL kernels are
communication (kind ``comm``), apart from compute. CPU ops (``cat`` cpu_op, formerly Operator) nest —
``aten::linear`` contains ``aten::addmm`` contains … — so only top-level ops of each thread are counted.
``gpu_user_annotation`` ranges are shown as phases of kind ``annotation`` (they contain kernels, so they are not
device time of their own).

Steps: ``ProfilerStep#N`` spans. Device work belongs to the step whose host code launched it (the runtime call
with the same ``correlation``), as in HolisticTraceAnalysis. By default the last step is left out, as HTA does:
the profiler stops inside it, so its device work is cut short — everything launched from its start on is
dropped. A chosen range of steps (`StepRange`) reads only the work launched in those steps.

A trace without device intervals (a CUPTI range-profiler run, whose kernels are ``cuda_profiler_range`` spans;
a CPU-only run) is read, and says it holds no device timeline. Several traces of one distributed run are read
together by `read_run`: per rank and per step compute, communication and idle time, the straggler, and each
rank's wait inside collectives.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import msgspec

from worthit.rules.profiles._text import is_blank
from worthit.rules.profiles.compression import gunzip, is_gzip
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.intervals import union_length
from worthit.rules.profiles.model import (
    Activity,
    BarrierFigures,
    Breakdown,
    Kind,
    RankFigures,
    StepFigures,
    largest_first,
    share,
    timed_phase,
)
from worthit.rules.profiles.naming import copy_name, is_input_op, kernel_kind

FORMAT = "pytorch_trace"
STEP_PREFIX = "ProfilerStep#"
#: Step figures kept in a breakdown (per rank): enough for any range a proposal names, bounded for storage.
MAX_STEP_FIGURES = 512
_KERNEL_CATS = frozenset({"kernel"})
_COPY_CATS = frozenset({"gpu_memcpy", "memcpy"})
_MEMSET_CATS = frozenset({"gpu_memset", "memset"})
_CPU_CATS = frozenset({"cpu_op", "operator"})
_RUNTIME_CATS = frozenset({"cuda_runtime", "runtime", "cuda_driver"})
_STEP_CATS = frozenset({"user_annotation", "operator", "cpu_op"})
_SKIP_WALL_CATS = frozenset({"trace"})
_JSON_START = re.compile(rb"\s*[\[{]")
_STEP_RE = re.compile(r"ProfilerStep#(\d+)$")
_RANGE_RE = re.compile(r"^\s*(\d*)\s*(?::\s*(\d*)\s*)?$")
_DEVICE_KINDS: frozenset[Kind] = frozenset({"kernel", "comm", "copy", "other"})


class _Args(msgspec.Struct):
    correlation: int | str | None = None


class _Event(msgspec.Struct):
    """The fields we use of one trace event; msgspec skips the rest (flow ids, shapes) without building them."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    # int | float: epoch-µs integers (1.7e15) times 1000 exceed a double's 53 bits; keep them exact.
    ts: int | float | None = None
    dur: int | float | None = None
    args: _Args | None = None


class _Distributed(msgspec.Struct):
    rank: int | None = None
    world_size: int | None = None


class _Trace(msgspec.Struct):
    traceEvents: list[_Event]  # noqa: N815 - the Chrome trace format's own key
    distributedInfo: _Distributed | None = None  # noqa: N815


_DECODER = msgspec.json.Decoder(_Trace | list[_Event])


class StepRange(msgspec.Struct, frozen=True):
    """Steps ``first``..``last`` by their number N in ``ProfilerStep#N``, both included; None = open end."""

    first: int | None
    last: int | None

    def __str__(self) -> str:
        if self.first is None and self.last is None:
            return "all"
        return f"{'' if self.first is None else self.first}:{'' if self.last is None else self.last}"


def parse_steps(text: str) -> StepRange:
    """``"2:5"`` (steps 2 to 5), ``"3"``, ``"2:"`` (from step 2 to the end of the recording), ``":5"`` (from its
    start), ``"all"`` (the whole recording, last step included) → StepRange; ProfileError otherwise."""
    if text.strip().lower() == "all":
        return StepRange(None, None)
    found = _RANGE_RE.match(text)
    if found is None or not text.strip() or text.strip() == ":":
        raise ProfileError(f"expected steps as N, FIRST:LAST or all (numbers N of ProfilerStep#N), got {text!r}")
    first = int(found.group(1)) if found.group(1) else None
    last = first if ":" not in text else (int(found.group(2)) if found.group(2) else None)
    if first is not None and last is not None and last < first:
        raise ProfileError(f"expected FIRST <= LAST in steps {text!r}")
    return StepRange(first, last)


@dataclass(frozen=True, slots=True)
class _Step:
    name: str
    number: int
    start: int
    end: int


@dataclass(slots=True)
class _Parsed:
    """One trace reduced to flat columns: device work (with launch times), top-level CPU ops, steps."""

    dev_name: list[str] = field(default_factory=list)
    dev_kind: list[Kind] = field(default_factory=list)
    dev_start: list[int] = field(default_factory=list)
    dev_end: list[int] = field(default_factory=list)
    dev_launch: list[int] = field(default_factory=list)
    cpu: list[tuple[int, int, str]] = field(default_factory=list)  # top-level ops: start, end, name
    annotations: list[tuple[int, int, str]] = field(default_factory=list)
    other: list[tuple[int, int]] = field(default_factory=list)  # runtime calls, user annotations: wall only
    steps: list[_Step] = field(default_factory=list)
    threads_overlap_ns: int = 0
    profiler_ranges: int = 0
    rank: int | None = None
    world_size: int | None = None


@dataclass(frozen=True, slots=True)
class _Window:
    """Work launched in [lo, hi) (None = unbounded), and which steps that is."""

    lo: int | None
    hi: int | None
    steps: list[_Step]
    label: str | None
    note: str | None

    def holds(self, t: int) -> bool:
        return (self.lo is None or t >= self.lo) and (self.hi is None or t < self.hi)


def looks_like(data: bytes) -> bool:
    """True when the (inflated) bytes start like JSON."""
    return _JSON_START.match(data) is not None


def read(data: bytes, steps: StepRange | None = None) -> Breakdown:
    """Read a PyTorch profiler trace (plain or gzipped) into one breakdown of the selected steps.

    Without `steps`, the whole recording less the last step when it marks two or more (see the module doc).
    """
    parsed = _parse(data)
    window = _window(parsed, steps, None)
    return _breakdown(parsed, window)


def read_steps(data: bytes) -> list[Breakdown]:
    """One breakdown per ``ProfilerStep#N`` (all of them, the last included): the work launched in the step.

    `wall_ns` is the step's host duration and `scope` its name. Empty when the trace marks no steps.
    """
    parsed = _parse(data)
    out = []
    for step in parsed.steps:
        window = _Window(step.start, step.end, [step], step.name, None)
        b = _breakdown(parsed, window)
        b.wall_ns = step.end - step.start
        b.phases = [msgspec.structs.replace(p, share_of_wall=share(p.total_ns, b.wall_ns)) for p in b.phases]
        out.append(b)
    return out


def read_run(files: Sequence[tuple[str, bytes]], steps: StepRange | None = None) -> Breakdown:
    """Several traces of one distributed run, read as one: per rank and per step, the straggler, the waits.

    Ranks come from each trace's ``distributedInfo.rank``, else from the files' order. Files whose clocks do not
    overlap are refused: they are not one run. The phases of the whole are summed over ranks (device time of
    all GPUs); `ranks` keeps each rank's own device phases, `barrier` the measured barrier.
    """
    if len(files) < 2:
        raise ProfileError("a distributed run needs two or more traces", format_expected=FORMAT)
    parsed = [_parse(data, name) for name, data in files]
    ranks: list[int] = []
    for index, ((name, _), p) in enumerate(zip(files, parsed, strict=True)):
        rank = p.rank if p.rank is not None else index
        if rank in ranks:
            other = files[ranks.index(rank)][0]
            raise ProfileError(
                f"{name} and {other} are both rank {rank}: expected one trace per rank of one run",
                format_expected=FORMAT,
            )
        ranks.append(rank)
    check_same_run([(name, *_span(p)) for (name, _), p in zip(files, parsed, strict=True)])
    windows = [_window(p, steps, name) for (name, _), p in zip(files, parsed, strict=True)]
    per_rank = [_breakdown(p, w) for p, w in zip(parsed, windows, strict=True)]
    order = sorted(range(len(files)), key=lambda i: ranks[i])
    rank_steps: dict[int, list[StepFigures]] = {}
    for i in order:
        figures = _step_figures(parsed[i], windows[i].steps, ranks[i])
        if not figures:  # no steps: the whole window is one step, so the barrier is still measured
            b = per_rank[i]
            act = b.activity or _empty_activity()
            figures = [
                StepFigures(name="run", number=0, rank=ranks[i], wall_ns=b.wall_ns or 0, activity=act, phases={})
            ]
        rank_steps[ranks[i]] = figures
    barrier, waits = barrier_of(rank_steps, parsed[order[0]].world_size)
    combined = _sum_ranks([per_rank[i] for i in order])
    combined.ranks = [
        RankFigures(
            rank=ranks[i],
            file=files[i][0],
            wall_ns=per_rank[i].wall_ns or 0,
            activity=per_rank[i].activity,
            phases=[p for p in per_rank[i].phases if p.kind in _DEVICE_KINDS],
            wait_ns=waits.get(ranks[i], 0),
        )
        for i in order
    ]
    combined.step_figures = [s for i in order for s in rank_steps[ranks[i]] if s.name != "run"][:MAX_STEP_FIGURES]
    combined.barrier = barrier
    combined.steps = len(windows[order[0]].steps) or None
    combined.scope = windows[order[0]].label
    notes = [n for w in windows[:1] if w.note for n in [w.note]]
    notes.append(
        f"{len(files)} ranks read as one run: phase totals are device time summed over ranks, shares of wall are "
        "of ranks × wall."
    )
    notes.append(
        f"Straggler: rank {barrier.straggler} (its compute sets the step); ranks wait "
        f"{barrier.wait_fraction * 100:.1f}% of their step time inside collectives for it."
    )
    combined.notes = notes + [n for n in combined.notes if n not in notes]
    return combined


def check_same_run(ranges: Sequence[tuple[str, int, int]]) -> None:
    """Refuse files given as one run whose time ranges do not overlap: their clocks are not one run's."""
    if len(ranges) < 2:
        return
    for name, lo, hi in ranges:
        others = [(n, a, b) for n, a, b in ranges if n != name]
        if not any((a < hi and lo < b) or (a <= lo <= b) for _, a, b in others):
            listed = "; ".join(f"{n}: {a} to {b} ns ({(b - a) / 1e6:,.3f} ms)" for n, a, b in ranges)
            raise ProfileError(
                f"the files do not overlap in time, so they are not one run: {listed}. Expected files recorded "
                "together (the traces of one run, or a kernel trace and the copy trace of the same run)."
            )


# --- parsing ---------------------------------------------------------------------------------------------------


def _decode(data: bytes) -> _Trace:
    if is_gzip(data):
        data = gunzip(data, FORMAT)
    if is_blank(data):
        raise ProfileError("the file is empty", format_expected=FORMAT)
    if b"\x00" in data[:65536]:
        raise ProfileError("the file is binary (it contains NUL bytes), expected JSON", format_expected=FORMAT)
    try:
        decoded = _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise ProfileError(f"JSON, but not a Chrome trace: {_plain(exc)}", format_expected=FORMAT) from None
    except msgspec.DecodeError as exc:
        raise ProfileError(f"malformed JSON: {_plain(exc)}", format_expected=FORMAT, line=_line_of(exc, data)) from None
    return decoded if isinstance(decoded, _Trace) else _Trace(traceEvents=decoded)


def _parse(data: bytes, file: str | None = None) -> _Parsed:
    trace = _decode(data)
    out = _Parsed()
    if trace.distributedInfo is not None:
        out.rank, out.world_size = trace.distributedInfo.rank, trace.distributedInfo.world_size
    by_thread: dict[tuple[int | str, int | str], list[tuple[int, int, str]]] = defaultdict(list)
    launches: dict[int | str, int] = {}
    device_corr: list[int | str | None] = []
    named: dict[tuple[str, str], tuple[str, Kind]] = {}
    complete = 0
    steps: dict[tuple[str, int], _Step] = {}
    where = f" in {file}" if file else ""
    for index, event in enumerate(trace.traceEvents):
        if event.ph != "X":
            continue
        if event.ts is None or event.dur is None:
            raise ProfileError(
                f"event $.traceEvents[{index}]{where} ({event.name!r}) has ph 'X' but no ts or dur",
                format_expected=FORMAT,
            )
        if event.dur < 0:
            raise ProfileError(
                f"event $.traceEvents[{index}]{where} ({event.name!r}) ends before it starts (dur {event.dur})",
                format_expected=FORMAT,
            )
        if not (abs(event.ts) < _MAX_US and event.dur < _MAX_US):  # also NaN and inf, which compare False
            raise ProfileError(
                f"event $.traceEvents[{index}]{where} ({event.name!r}) has ts {event.ts} and dur {event.dur} µs, "
                f"outside what a profiler clock records (under {_MAX_US:.0e} µs)",
                format_expected=FORMAT,
            )
        complete += 1
        # Timestamps are µs (floats with ns decimals in newer Kineto); keep integer ns from here on.
        start = _ns(event.ts)
        end = start + _ns(event.dur)
        cat = event.cat.lower()
        if cat in _KERNEL_CATS or cat in _COPY_CATS or cat in _MEMSET_CATS:
            key = (cat, event.name)
            found_name = named.get(key)
            if found_name is None:
                found_name = named[key] = _device_name(cat, event.name)
            out.dev_name.append(found_name[0])
            out.dev_kind.append(found_name[1])
            out.dev_start.append(start)
            out.dev_end.append(end)
            device_corr.append(event.args.correlation if event.args is not None else None)
            continue
        if cat in _SKIP_WALL_CATS:
            continue
        if cat in _STEP_CATS and event.name.startswith(STEP_PREFIX):
            found = _STEP_RE.match(event.name)
            if found is not None:
                steps.setdefault((event.name, start), _Step(event.name, int(found.group(1)), start, end))
            out.other.append((start, end))
            continue
        if cat in _CPU_CATS:
            by_thread[(event.pid, event.tid)].append((start, -end, event.name))
        elif cat == "gpu_user_annotation":
            out.annotations.append((start, end, event.name))
        else:
            if cat in _RUNTIME_CATS and event.args is not None and event.args.correlation is not None:
                launches[event.args.correlation] = start
            elif cat == "cuda_profiler_range":
                out.profiler_ranges += 1
            out.other.append((start, end))
    if complete == 0:
        raise ProfileError("a JSON trace without complete ('X') events: nothing was recorded", format_expected=FORMAT)
    out.dev_launch = [
        launches.get(corr, start) if corr is not None else start
        for corr, start in zip(device_corr, out.dev_start, strict=True)
    ]
    top: list[tuple[int, int]] = []
    for ops in by_thread.values():
        ops.sort()
        current_end: int | None = None
        for start, neg_end, name in ops:
            if current_end is None or start >= current_end:
                # A child that outlives its parent by a rounding nanosecond is still a child.
                out.cpu.append((start, -neg_end, name))
                top.append((start, -neg_end))
                current_end = -neg_end
    out.cpu.sort()
    out.threads_overlap_ns = sum(e - s for s, e in top) - union_length(top)
    # One step per number: a step recorded on the host once; gpu_user_annotation copies are phases, not steps.
    by_number: dict[int, _Step] = {}
    for step in sorted(steps.values(), key=lambda s: s.start):
        by_number.setdefault(step.number, step)
    out.steps = sorted(by_number.values(), key=lambda s: s.start)
    return out


def _device_name(cat: str, name: str) -> tuple[str, Kind]:
    if cat in _KERNEL_CATS:
        return name, kernel_kind(name)
    if cat in _COPY_CATS:
        return copy_name(name), "copy"
    return "memset", "other"


def _span(p: _Parsed) -> tuple[int, int]:
    """First start and last end of everything recorded (the profiler's own span left out)."""
    starts = [s for s, _, _ in p.cpu] + [s for s, _ in p.other]
    ends = [e for _, e, _ in p.cpu] + [e for _, e in p.other]
    if p.dev_start:
        starts.append(min(p.dev_start))
        ends.append(max(p.dev_end))
    return min(starts), max(ends)


# --- windows and figures ---------------------------------------------------------------------------------------


def _window(p: _Parsed, steps: StepRange | None, file: str | None) -> _Window:
    if steps is None:
        if len(p.steps) >= 2:
            last = p.steps[-1]
            return _Window(
                None,
                last.start,
                p.steps[:-1],
                None,
                f"{last.name}, the last step, is left out: the profiler stops inside it, so its device work is cut "
                f"short (choose steps to include it, e.g. {p.steps[0].number}:{last.number}).",
            )
        return _Window(None, None, list(p.steps), None, None)
    chosen = [
        s
        for s in p.steps
        if (steps.first is None or s.number >= steps.first) and (steps.last is None or s.number <= steps.last)
    ]
    if steps.first is None and steps.last is None:
        return _Window(None, None, list(p.steps), None, None)
    if not chosen:
        where = f" in {file}" if file else ""
        have = ", ".join(str(s.number) for s in p.steps) or "none (the trace marks no ProfilerStep#N)"
        raise ProfileError(f"no steps {steps}{where}; the trace has steps {have}", format_expected=FORMAT)
    label = chosen[0].name if len(chosen) == 1 else f"{chosen[0].name}..{chosen[-1].name}"
    # An open end reaches the recording's end (or start), so "2:" keeps what runs after the last step.
    lo = None if steps.first is None else chosen[0].start
    hi = None if steps.last is None else chosen[-1].end
    return _Window(lo, hi, chosen, label, None)


def _empty_activity() -> Activity:
    return Activity(span_ns=0, busy_ns=0, compute_ns=0, comm_ns=0, overlap_ns=0, copy_ns=0, idle_ns=0, kernels=0)


def activity_of(work: Iterable[tuple[Kind, int, int]]) -> Activity:
    """The split of one device timeline given as (kind, start, end) intervals of device work."""
    every: list[tuple[int, int]] = []
    compute: list[tuple[int, int]] = []
    comm: list[tuple[int, int]] = []
    copies: list[tuple[int, int]] = []
    for kind, start, end in work:
        every.append((start, end))
        if kind == "kernel":
            compute.append((start, end))
        elif kind == "comm":
            comm.append((start, end))
        elif kind == "copy":
            copies.append((start, end))
    if not every:
        return _empty_activity()
    busy = union_length(every)
    compute_ns, comm_ns = union_length(compute), union_length(comm)
    overlap = compute_ns + comm_ns - union_length(compute + comm) if compute and comm else 0
    span = max(e for _, e in every) - min(s for s, _ in every)
    return Activity(
        span_ns=span,
        busy_ns=busy,
        compute_ns=compute_ns,
        comm_ns=comm_ns,
        overlap_ns=overlap,
        copy_ns=union_length(copies),
        idle_ns=span - busy,
        kernels=len(compute) + len(comm),
    )


def _selected(p: _Parsed, window: _Window) -> list[int]:
    return [i for i, launch in enumerate(p.dev_launch) if window.holds(launch)]


def _breakdown(p: _Parsed, window: _Window) -> Breakdown:
    chosen = _selected(p, window)
    per_phase: dict[tuple[str, Kind], list[tuple[int, int]]] = defaultdict(list)
    for i in chosen:
        per_phase[(p.dev_name[i], p.dev_kind[i])].append((p.dev_start[i], p.dev_end[i]))
    # CPU ops are host time: clipped to the window (an op running past a step's end counts up to it).
    lo = window.lo if window.lo is not None else -(1 << 62)
    hi = window.hi if window.hi is not None else 1 << 62
    cpu = [(max(s, lo), min(e, hi), n) for s, e, n in p.cpu if s < hi and e > lo]
    for s, e, n in cpu:
        per_phase[(n, "cpu_op")].append((s, e))
    for s, e, n in p.annotations:
        if window.holds(s):
            per_phase[(n, "annotation")].append((s, e))
    act = activity_of((p.dev_kind[i], p.dev_start[i], p.dev_end[i]) for i in chosen) if chosen else None
    if act is not None:
        act = msgspec.structs.replace(act, input_ns=_input_wait(p, chosen, cpu))
    starts = [p.dev_start[i] for i in chosen] + [s for s, _, _ in cpu] + [s for s, _ in p.other if window.holds(s)]
    ends = [p.dev_end[i] for i in chosen] + [e for _, e, _ in cpu] + [e for s, e in p.other if window.holds(s)]
    if not starts:
        raise ProfileError(f"no events in steps {window.label}", format_expected=FORMAT)
    wall = max(ends) - min(starts)
    busy = act.busy_ns if act is not None else None
    compute = act.compute_ns if act is not None else None
    phases = []
    for (name, kind), intervals in per_phase.items():
        total = union_length(intervals)
        on_device = kind in _DEVICE_KINDS
        phases.append(
            timed_phase(name, kind, total, len(intervals), busy=busy, wall=wall, compute=compute, on_device=on_device)
        )
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
    b = Breakdown(
        format=FORMAT,
        wall_ns=wall,
        device_busy_ns=busy,
        phases=largest_first(phases),
        inclusive=False,
        notes=notes,
        steps=len(window.steps) or None,
        scope=window.label,
        device_timeline=timeline,
        activity=act,
    )
    b.step_figures = _step_figures(p, window.steps, None)[:MAX_STEP_FIGURES]
    return b


def _input_wait(p: _Parsed, chosen: list[int], cpu: list[tuple[int, int, str]]) -> int:
    """Time inside the host's DataLoader ops during which no device work ran: the GPU waiting on data."""
    loading = [(s, e) for s, e, name in cpu if is_input_op(name)]
    return _idle_within(loading, [(p.dev_start[i], p.dev_end[i]) for i in chosen]) if loading else 0


def _idle_within(host: list[tuple[int, int]], device: list[tuple[int, int]]) -> int:
    """How much of the `host` intervals no `device` interval covers."""
    if not host:
        return 0
    return union_length(host + device) - union_length(device)


def _no_timeline(p: _Parsed) -> str:
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


def _step_figures(p: _Parsed, steps: list[_Step], rank: int | None) -> list[StepFigures]:
    if not steps:
        return []
    order = sorted(range(len(p.dev_launch)), key=p.dev_launch.__getitem__)
    launches = [p.dev_launch[i] for i in order]
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
        per_phase: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i in chosen:
            per_phase[p.dev_name[i]].append((p.dev_start[i], p.dev_end[i]))
        out.append(
            StepFigures(
                name=step.name,
                number=step.number,
                rank=rank,
                wall_ns=step.end - step.start,
                activity=msgspec.structs.replace(
                    activity_of((p.dev_kind[i], p.dev_start[i], p.dev_end[i]) for i in chosen),
                    input_ns=_idle_within(inside, running),
                ),
                phases={name: union_length(iv) for name, iv in per_phase.items()},
            )
        )
    return out


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
            on_device=kind in _DEVICE_KINDS,
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


_MAX_US = 2**62 // 1000
"""Timestamps and durations in µs below this stay below 2⁶² ns: the year 2116 on an epoch clock."""


def _ns(us: int | float) -> int:
    return us * 1000 if isinstance(us, int) else round(us * 1000)


def _plain(exc: Exception) -> str:
    return str(exc).replace("`", "")


def _line_of(exc: Exception, data: bytes) -> int | None:
    """The 1-based line of the byte offset msgspec reports ("… (byte 1234)"), when it reports one."""
    text = str(exc)
    marker = "(byte "
    at = text.rfind(marker)
    if at < 0:
        return None
    digits = text[at + len(marker) :].rstrip(")")
    if not digits.isdigit():
        return None
    return data.count(b"\n", 0, int(digits)) + 1
