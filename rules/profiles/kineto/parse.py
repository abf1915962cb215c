"""Bytes of a Kineto trace → `Parsed`: flat columns of device work, top-level CPU ops and steps. No analysis here.

Device work (``cat`` kernel, gpu_memcpy, gpu_memset; PyTorch 1.8–1.10 spell them Kernel, Memcpy, Memset) is kept
with its name (a kernel's own, a copy's direction), its kind (NCCL/RCCL kernels are ``comm``) and the time the host
launched it (the runtime call with the same ``correlation``). CPU ops (``cat`` cpu_op, formerly Operator) nest —
``aten::linear`` contains ``aten::addmm`` contains … — so only the top-level ops of each thread are kept.
``gpu_user_annotation`` ranges are kept apart: they contain kernels, so they are not device time of their own.
``ProfilerStep#N`` spans become steps, one per number.

A trace without device intervals (a CUPTI range-profiler run, whose kernels are ``cuda_profiler_range`` spans; a
CPU-only run) parses, with empty device columns and the count of profiler ranges. What cannot be read is a
`ProfileError` naming the event (``$.traceEvents[i]``) or the line of malformed JSON.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NoReturn

import msgspec

from worthit.rules.phase_names import kernel_kind
from worthit.rules.profiles._text import UTF8_BOM, is_blank
from worthit.rules.profiles.budget import json_objects
from worthit.rules.profiles.compression import gunzip, is_gzip
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.intervals import union_length
from worthit.rules.profiles.model import Kind
from worthit.rules.profiles.naming import copy_name

FORMAT = "pytorch_trace"
STEP_PREFIX = "ProfilerStep#"
_KERNEL_CATS = frozenset({"kernel"})
_COPY_CATS = frozenset({"gpu_memcpy", "memcpy"})
_MEMSET_CATS = frozenset({"gpu_memset", "memset"})
_CPU_CATS = frozenset({"cpu_op", "operator"})
_RUNTIME_CATS = frozenset({"cuda_runtime", "runtime", "cuda_driver"})
_DEVICE_CATS = _KERNEL_CATS | _COPY_CATS | _MEMSET_CATS
_STEP_CATS = frozenset({"user_annotation", "operator", "cpu_op"})
_SKIP_WALL_CATS = frozenset({"trace"})
# What the reduction does with an event, by its (lowercased) category.
_SKIP, _DEVICE, _CPU, _MAYBE_STEP, _ANNOTATION, _RUNTIME, _RANGE, _WALL = 0, 1, 2, 4, 8, 16, 32, 64


def _class_of(cat: str) -> tuple[str, int]:
    if cat in _DEVICE_CATS:
        return cat, _DEVICE
    if cat in _SKIP_WALL_CATS:
        return cat, _SKIP
    cls = _MAYBE_STEP if cat in _STEP_CATS else 0
    if cat in _CPU_CATS:
        return cat, cls | _CPU
    if cat == "gpu_user_annotation":
        return cat, cls | _ANNOTATION
    if cat in _RUNTIME_CATS:
        return cat, cls | _RUNTIME
    if cat == "cuda_profiler_range":
        return cat, cls | _RANGE
    return cat, cls | _WALL


_JSON_START = re.compile(rb"(?:\xef\xbb\xbf)?\s*[\[{]")  # a UTF-8 BOM may stand first
_STEP_RE = re.compile(r"ProfilerStep#(\d+)$")


class _Args(msgspec.Struct, gc=False):
    correlation: int | str | None = None


class Event(msgspec.Struct, gc=False):
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


class DistributedInfo(msgspec.Struct):
    """The trace's `distributedInfo`: which rank of how many recorded it."""

    rank: int | None = None
    world_size: int | None = None


class Trace(msgspec.Struct):
    """A Chrome trace document: its events and, from a distributed run, its rank."""

    traceEvents: list[Event]  # noqa: N815 - the Chrome trace format's own key
    distributedInfo: DistributedInfo | None = None  # noqa: N815


DECODER = msgspec.json.Decoder(Trace | list[Event])
"""A whole trace: the document, or the bare array of events some tools write."""
TOO_DEEP = (
    "JSON, but not a Chrome trace: expected events a few levels deep (an object or an array of them), got JSON "
    "nested too deeply to read"
)


@dataclass(frozen=True, slots=True)
class Step:
    """One ``ProfilerStep#N`` span on the host: its name, its number N, its start and end in ns."""

    name: str
    number: int
    start: int
    end: int


@dataclass(slots=True)
class Parsed:
    """One trace reduced to flat columns: device work (with launch times), top-level CPU ops, steps.

    Times are 8-byte `array('q')` columns and names references to one shared string each: 40 bytes per device
    event, 16 per wall-only event, whatever the file's size (`parse_stream` reads files larger than memory).
    """

    dev_name: list[str] = field(default_factory=list)
    dev_kind: list[Kind] = field(default_factory=list)
    dev_start: array[int] = field(default_factory=lambda: array("q"))
    dev_end: array[int] = field(default_factory=lambda: array("q"))
    dev_launch: array[int] = field(default_factory=lambda: array("q"))
    cpu: list[tuple[int, int, str]] = field(default_factory=list)  # top-level ops: start, end, name
    annotations: list[tuple[int, int, str]] = field(default_factory=list)
    # Runtime calls, user annotations: wall only.
    other_start: array[int] = field(default_factory=lambda: array("q"))
    other_end: array[int] = field(default_factory=lambda: array("q"))
    steps: list[Step] = field(default_factory=list)
    threads_overlap_ns: int = 0
    profiler_ranges: int = 0
    rank: int | None = None
    world_size: int | None = None


def looks_like(data: bytes) -> bool:
    """True when the (inflated) bytes start like JSON."""
    return _JSON_START.match(data) is not None


def parse_trace(data: bytes, file: str | None = None) -> Parsed:
    """A PyTorch profiler trace (plain or gzipped) as columns; ProfileError (naming `file`, when given) otherwise."""
    trace = _decode(data)
    builder = Builder(file)
    builder.add(trace.traceEvents, 0)
    return builder.finish(trace.distributedInfo)


class _Thread:
    """One host thread's CPU ops as they come: starts, ends and names in columns (8 + 8 + 8 bytes an op)."""

    __slots__ = ("ends", "last_end", "last_start", "names", "ordered", "starts")

    def __init__(self) -> None:
        self.starts: array[int] = array("q")
        self.ends: array[int] = array("q")
        self.names: list[str] = []
        self.ordered = True  # by (start, -end) so far: Kineto writes a thread's ops in that order
        self.last_start = self.last_end = -(1 << 63)

    def top_level(self) -> list[tuple[int, int, str]]:
        """The ops no earlier op contains, in (start, -end, name) order (as sorting all of them would give)."""
        starts, ends, names = self.starts, self.ends, self.names
        if self.ordered:
            order: Iterable[int] = _ties_by_name(starts, ends, names)
        else:
            order = sorted(range(len(starts)), key=lambda i: (starts[i], -ends[i], names[i]))
        out: list[tuple[int, int, str]] = []
        current_end: int | None = None
        for i in order:
            start = starts[i]
            if current_end is None or start >= current_end:
                # A child that outlives its parent by a rounding nanosecond is still a child.
                current_end = ends[i]
                out.append((start, current_end, names[i]))
        return out


def _ties_by_name(starts: array[int], ends: array[int], names: list[str]) -> Iterator[int]:
    """Indexes of ops already in (start, -end) order, runs of equal (start, end) reordered by name."""
    n = len(starts)
    i = 0
    while i < n:
        j = i + 1
        while j < n and starts[j] == starts[i] and ends[j] == ends[i]:
            j += 1
        if j - i == 1:
            yield i
        else:
            yield from sorted(range(i, j), key=names.__getitem__)
        i = j


class Builder:
    """Events in, batch by batch (`add`), columns out (`finish`): the one reduction both readers share.

    What it keeps grows with the device events (their columns), the CPU ops (in columns until the top-level ones
    are picked) and the launches (correlation → time); every other event is reduced as it comes.
    """

    def __init__(self, file: str | None = None) -> None:
        self.out = Parsed()
        self.where = f" in {file}" if file else ""
        self.threads: dict[tuple[int | str, int | str], _Thread] = {}
        # Launches as columns (correlation, time), resolved once at the end; string correlations (rare) apart.
        self.launch_corr: array[int] = array("q")
        self.launch_at: array[int] = array("q")
        self.launches: dict[int | str, int] = {}
        self.device_corr: array[int] = array("q")
        self.odd_corr: dict[int, int | str | None] = {}  # device event index → a correlation not an int64
        self.named: dict[tuple[str, str], tuple[str, Kind]] = {}
        self.cats: dict[str, tuple[str, int]] = {}
        self.complete = 0
        self.events = 0  # events in the batch (set by `stream.reduce_batch`)
        self.steps: dict[tuple[str, int], Step] = {}

    def add(self, events: Iterable[Event], first_index: int) -> None:
        """Reduce a batch of events whose first is ``$.traceEvents[first_index]``."""
        out, cats, named = self.out, self.cats, self.named
        dev_name, dev_kind, dev_start, dev_end = out.dev_name, out.dev_kind, out.dev_start, out.dev_end
        other_start, other_end, device_corr = out.other_start, out.other_end, self.device_corr
        complete = 0
        threads, launches, odd_corr = self.threads, self.launches, self.odd_corr
        launch_corr, launch_at = self.launch_corr, self.launch_at
        for index, event in enumerate(events, first_index):
            if event.ph != "X":
                continue
            ts, dur = event.ts, event.dur
            if ts is None or dur is None or dur < 0 or not (abs(ts) < _MAX_US and dur < _MAX_US):
                self._refuse(event, index)
            complete += 1
            # Timestamps are µs (floats with ns decimals in newer Kineto); keep integer ns from here on.
            start = ts * 1000 if type(ts) is int else round(ts * 1000)
            end = start + (dur * 1000 if type(dur) is int else round(dur * 1000))
            found_cat = cats.get(event.cat)
            if found_cat is None:
                found_cat = cats[event.cat] = _class_of(event.cat.lower())
            cat, cls = found_cat
            if cls == _DEVICE:
                key = (cat, event.name)
                found_name = named.get(key)
                if found_name is None:
                    found_name = named[key] = _device_name(cat, event.name)
                dev_name.append(found_name[0])
                dev_kind.append(found_name[1])
                dev_start.append(start)
                dev_end.append(end)
                corr = event.args.correlation if event.args is not None else None
                if type(corr) is int and -_INT64 <= corr < _INT64:
                    device_corr.append(corr)
                else:
                    odd_corr[len(device_corr)] = corr
                    device_corr.append(0)
                continue
            if cls == _SKIP:
                continue
            name = event.name
            if cls & _MAYBE_STEP and name.startswith(STEP_PREFIX):
                found = _STEP_RE.match(name)
                if found is not None:
                    self.steps.setdefault((name, start), Step(name, int(found.group(1)), start, end))
                other_start.append(start)
                other_end.append(end)
                continue
            if cls & _CPU:
                thread = threads.get((event.pid, event.tid))
                if thread is None:
                    thread = threads[(event.pid, event.tid)] = _Thread()
                if thread.ordered and (
                    start < thread.last_start or (start == thread.last_start and end > thread.last_end)
                ):
                    thread.ordered = False
                thread.last_start, thread.last_end = start, end
                thread.starts.append(start)
                thread.ends.append(end)
                thread.names.append(name)
            elif cls == _ANNOTATION:
                out.annotations.append((start, end, name))
            else:
                if cls == _RUNTIME and event.args is not None and event.args.correlation is not None:
                    corr = event.args.correlation
                    if type(corr) is int and -_INT64 <= corr < _INT64:
                        launch_corr.append(corr)
                        launch_at.append(start)
                    else:
                        launches[corr] = start
                elif cls == _RANGE:
                    out.profiler_ranges += 1
                other_start.append(start)
                other_end.append(end)
        self.complete += complete

    def merge(self, other: Builder) -> None:
        """Append what `other` reduced of the events that follow this one's: as if this one had added them."""
        mine, theirs = self.out, other.out
        offset = len(mine.dev_start)
        mine.dev_name += theirs.dev_name
        mine.dev_kind += theirs.dev_kind
        mine.dev_start += theirs.dev_start
        mine.dev_end += theirs.dev_end
        mine.annotations += theirs.annotations
        mine.other_start += theirs.other_start
        mine.other_end += theirs.other_end
        mine.profiler_ranges += theirs.profiler_ranges
        self.device_corr += other.device_corr
        for index, corr in other.odd_corr.items():
            self.odd_corr[index + offset] = corr
        self.launch_corr += other.launch_corr
        self.launch_at += other.launch_at
        self.launches.update(other.launches)  # a later launch of a correlation wins, as when added in order
        for key, thread in other.threads.items():
            here = self.threads.get(key)
            if here is None:
                self.threads[key] = thread
                continue
            first_start, first_end = thread.starts[0], thread.ends[0]
            if not thread.ordered or (
                first_start < here.last_start or (first_start == here.last_start and first_end > here.last_end)
            ):
                here.ordered = False
            here.starts += thread.starts
            here.ends += thread.ends
            here.names += thread.names
            here.last_start, here.last_end = thread.last_start, thread.last_end
        self.complete += other.complete
        for key, step in other.steps.items():
            self.steps.setdefault(key, step)

    def _refuse(self, event: Event, index: int) -> NoReturn:
        where = self.where
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
        raise ProfileError(  # also NaN and inf, which compare False
            f"event $.traceEvents[{index}]{where} ({event.name!r}) has ts {event.ts} and dur {event.dur} µs, "
            f"outside what a profiler clock records (under {_MAX_US:.0e} µs)",
            format_expected=FORMAT,
        )

    def _resolve_launches(self) -> array[int]:
        """Each device event's launch time: the last runtime call with its correlation, else its own start."""
        corr, at = self.launch_corr, self.launch_at
        order = sorted(range(len(corr)), key=corr.__getitem__)  # stable: of equal correlations, the last is last
        keys = array("q", (corr[i] for i in order))
        times = array("q", (at[i] for i in order))
        del order
        self.launch_corr = self.launch_at = array("q")
        odd, launches = self.odd_corr, self.launches
        out = array("q")
        for index, (c, start) in enumerate(zip(self.device_corr, self.out.dev_start, strict=True)):
            if odd and index in odd:
                other = odd[index]
                out.append(start if other is None else launches.get(other, start))
                continue
            found = bisect_right(keys, c) - 1
            out.append(times[found] if found >= 0 and keys[found] == c else start)
        self.device_corr = array("q")
        return out

    def finish(self, info: DistributedInfo | None) -> Parsed:
        """The columns, once every event was added; `info` is the trace's ``distributedInfo``."""
        out = self.out
        if info is not None:
            out.rank, out.world_size = info.rank, info.world_size
        if self.complete == 0:
            raise ProfileError(
                "a JSON trace without complete ('X') events: nothing was recorded", format_expected=FORMAT
            )
        out.dev_launch = self._resolve_launches()
        top: list[tuple[int, int]] = []
        for thread in self.threads.values():
            for op in thread.top_level():
                out.cpu.append(op)
                top.append((op[0], op[1]))
        self.threads = {}
        out.cpu.sort()
        out.threads_overlap_ns = sum(e - s for s, e in top) - union_length(top)
        # One step per number: a step recorded on the host once; gpu_user_annotation copies are phases, not steps.
        by_number: dict[int, Step] = {}
        for step in sorted(self.steps.values(), key=lambda s: s.start):
            by_number.setdefault(step.number, step)
        out.steps = sorted(by_number.values(), key=lambda s: s.start)
        first, last = span(out) if out.cpu or out.other_start or out.dev_start else (0, 0)
        if last - first > MAX_SPAN_NS:
            raise ProfileError(
                f"the events span {(last - first) / 86_400e9:,.0f} days (ts {first / 1000:.0f} to {last / 1000:.0f} "
                f"µs); expected a profiler's window of seconds to hours, under {MAX_SPAN_NS // 86_400_000_000_000} "
                "days: are two clocks (epoch and relative) mixed?",
                format_expected=FORMAT,
            )
        return out


MAX_SPAN_NS = 7 * 86_400 * 10**9
"""The longest a trace may span: a profiler records a window of steps (seconds to hours); a week is far past any,
and events farther apart are on two clocks, or forged (a 31-year wall made every share nonsense)."""


def span(p: Parsed) -> tuple[int, int]:
    """First start and last end of everything recorded (the profiler's own span left out)."""
    starts: list[int] = []
    ends: list[int] = []
    if p.cpu:  # one pass each, no list of every op: `finish` asks this of every trace
        starts.append(min(s for s, _, _ in p.cpu))
        ends.append(max(e for _, e, _ in p.cpu))
    if p.other_start:
        starts.append(min(p.other_start))
        ends.append(max(p.other_end))
    if p.dev_start:
        starts.append(min(p.dev_start))
        ends.append(max(p.dev_end))
    return min(starts), max(ends)


def _decode(data: bytes) -> Trace:
    if is_gzip(data):
        data = gunzip(data, FORMAT)
    data = data.removeprefix(UTF8_BOM)
    if is_blank(data):
        raise ProfileError("the file is empty", format_expected=FORMAT)
    if b"\x00" in data[:65536]:
        raise ProfileError("the file is binary (it contains NUL bytes), expected JSON", format_expected=FORMAT)
    # Decoded in one call, so counted before it: every event is at least one `{`, and what a budget allows
    # (rules.profiles.budget, inside `counting`) bounds what the decoder would build.
    json_objects(data, FORMAT)
    try:
        decoded = DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise ProfileError(f"JSON, but not a Chrome trace: {error_text(exc)}", format_expected=FORMAT) from None
    except RecursionError:  # msgspec's depth limit (the interpreter's recursion limit) is raised as this
        raise ProfileError(TOO_DEEP, format_expected=FORMAT) from None
    except msgspec.DecodeError as exc:
        raise ProfileError(
            f"malformed JSON: {error_text(exc)}", format_expected=FORMAT, line=_line_of(exc, data)
        ) from None
    return decoded if isinstance(decoded, Trace) else Trace(traceEvents=decoded)


def _device_name(cat: str, name: str) -> tuple[str, Kind]:
    if cat in _KERNEL_CATS:
        return name, kernel_kind(name)
    if cat in _COPY_CATS:
        return copy_name(name), "copy"
    return "memset", "other"


_INT64 = 1 << 63
_MAX_US = 2**62 // 1000
"""Timestamps and durations in µs below this stay below 2⁶² ns: the year 2116 on an epoch clock."""


def error_text(exc: Exception) -> str:
    """A decoder's error as a sentence says it: msgspec's message without its backquotes."""
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


__all__ = [
    "DECODER",
    "FORMAT",
    "STEP_PREFIX",
    "Builder",
    "DistributedInfo",
    "Event",
    "Parsed",
    "Step",
    "Trace",
    "error_text",
    "looks_like",
    "parse_trace",
    "span",
]
