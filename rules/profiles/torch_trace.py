"""PyTorch profiler (Kineto) Chrome trace JSON: ``{"traceEvents": [{"ph": "X", "ts": µs, "dur": µs, …}]}``.

Device work (``cat`` kernel, gpu_memcpy, gpu_memset) becomes phases by kernel name / copy direction,
with unions over streams and devices. CPU ops (``cat`` cpu_op) nest — ``aten::linear`` contains
``aten::addmm`` contains … — so only top-level ops of each thread are counted (a child's time is inside
its parent's): summing every cpu_op would count the same microsecond once per nesting level.
``ProfilerStep#N`` user annotations mark steps; the profiler's whole-recording span (``cat`` Trace,
"PyTorch Profiler (0)") is bookkeeping, neither a step nor part of the wall time.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass

import msgspec

from worthit.rules.profiles._text import is_blank
from worthit.rules.profiles.collect import Collector
from worthit.rules.profiles.compression import gunzip, is_gzip
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.intervals import union_length
from worthit.rules.profiles.model import Breakdown, Kind
from worthit.rules.profiles.naming import copy_name

FORMAT = "pytorch_trace"
STEP_PREFIX = "ProfilerStep#"
_DEVICE_CATS: dict[str, Kind] = {"kernel": "kernel", "gpu_memcpy": "copy", "gpu_memset": "other"}
_SKIP_WALL_CATS = frozenset({"Trace"})
_JSON_START = re.compile(rb"\s*[\[{]")


class _Event(msgspec.Struct):
    """The fields we use of one trace event; msgspec skips the rest (args, flow ids) without building them."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    # int | float: epoch-µs integers (1.7e15) times 1000 exceed a double's 53 bits; keep them exact.
    ts: int | float | None = None
    dur: int | float | None = None


class _Trace(msgspec.Struct):
    traceEvents: list[_Event]  # noqa: N815 - the Chrome trace format's own key


_DECODER = msgspec.json.Decoder(_Trace | list[_Event])


@dataclass(frozen=True, slots=True)
class _Span:
    name: str
    kind: Kind
    device: bool
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Parsed:
    spans: list[_Span]  # device work and top-level cpu ops, sorted by start
    steps: list[tuple[str, int, int]]
    wall: tuple[int, int]
    threads_overlap_ns: int
    max_len: int


def looks_like(data: bytes) -> bool:
    """True when the (inflated) bytes start like JSON."""
    return _JSON_START.match(data) is not None


def read(data: bytes) -> Breakdown:
    """Read a PyTorch profiler trace (plain or gzipped) into one breakdown of the whole recording."""
    parsed = _parse(data)
    collector = Collector()
    for span in parsed.spans:
        collector.add(span.name, span.kind, span.start, span.end, device=span.device)
    _notes(collector, parsed)
    collector.steps = len(parsed.steps) or None
    breakdown = collector.finish(FORMAT)
    lo, hi = parsed.wall
    breakdown.wall_ns = hi - lo
    breakdown.phases = [
        msgspec.structs.replace(p, share_of_wall=p.total_ns / (hi - lo) if hi > lo else None) for p in breakdown.phases
    ]
    return breakdown


def read_steps(data: bytes) -> list[Breakdown]:
    """One breakdown per ``ProfilerStep#N``: top-level CPU ops and device work clipped to the step.

    `wall_ns` is the step's duration and `scope` its name; device work launched in a step but run after
    it ends is counted in the step it runs in. Empty when the trace marks no steps.
    """
    parsed = _parse(data)
    starts = [s.start for s in parsed.spans]
    out: list[Breakdown] = []
    for name, lo, hi in parsed.steps:
        collector = Collector()
        first = bisect_left(starts, lo - parsed.max_len)
        last = bisect_left(starts, hi)
        for span in parsed.spans[first:last]:
            s, e = max(span.start, lo), min(span.end, hi)
            if e > s:
                collector.add(span.name, span.kind, s, e, device=span.device)
        _notes(collector, parsed)
        step = collector.finish(FORMAT)
        step.wall_ns = hi - lo
        step.scope = name
        step.steps = 1
        step.phases = [msgspec.structs.replace(p, share_of_wall=p.total_ns / (hi - lo)) for p in step.phases]
        out.append(step)
    return out


def _notes(collector: Collector, parsed: _Parsed) -> None:
    collector.note("CPU ops are top-level per thread (nested ops are inside their parent's time).")
    if parsed.threads_overlap_ns:
        collector.note(
            f"Top-level CPU ops on different threads overlap for {parsed.threads_overlap_ns} ns: "
            "cpu_op shares of one window can sum above 1."
        )


def _decode(data: bytes) -> list[_Event]:
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
    return decoded.traceEvents if isinstance(decoded, _Trace) else decoded


def _parse(data: bytes) -> _Parsed:
    events = _decode(data)
    by_thread: dict[tuple[int | str, int | str], list[tuple[int, int, str]]] = defaultdict(list)
    spans: list[_Span] = []
    steps: list[tuple[str, int, int]] = []
    lo: int | None = None
    hi: int | None = None
    complete = 0
    for index, event in enumerate(events):
        if event.ph != "X":
            continue
        if event.ts is None or event.dur is None:
            raise ProfileError(
                f"event $.traceEvents[{index}] ({event.name!r}) has ph 'X' but no ts or dur", format_expected=FORMAT
            )
        if event.dur < 0:
            raise ProfileError(
                f"event $.traceEvents[{index}] ({event.name!r}) ends before it starts (dur {event.dur})",
                format_expected=FORMAT,
            )
        complete += 1
        # Timestamps are µs (floats with ns decimals in newer Kineto); keep integer ns from here on.
        start = _ns(event.ts)
        end = start + _ns(event.dur)
        if event.cat not in _SKIP_WALL_CATS:
            lo = start if lo is None or start < lo else lo
            hi = end if hi is None or end > hi else hi
        kind = _DEVICE_CATS.get(event.cat)
        if kind is not None:
            name = copy_name(event.name) if kind == "copy" else ("memset" if kind == "other" else event.name)
            spans.append(_Span(name, kind, True, start, end))
        elif event.cat == "cpu_op":
            by_thread[(event.pid, event.tid)].append((start, -end, event.name))
        elif event.cat == "user_annotation" and event.name.startswith(STEP_PREFIX):
            steps.append((event.name, start, end))
    if complete == 0 or lo is None or hi is None:
        raise ProfileError("a JSON trace without complete ('X') events: nothing was recorded", format_expected=FORMAT)
    top: list[tuple[int, int]] = []
    for ops in by_thread.values():
        ops.sort()
        current_end: int | None = None
        for start, neg_end, name in ops:
            if current_end is None or start >= current_end:
                # A child that outlives its parent by a rounding nanosecond is still a child.
                spans.append(_Span(name, "cpu_op", False, start, -neg_end))
                top.append((start, -neg_end))
                current_end = -neg_end
    spans.sort(key=lambda s: s.start)
    steps.sort(key=lambda s: s[1])
    return _Parsed(
        spans=spans,
        steps=steps,
        wall=(lo, hi),
        threads_overlap_ns=_overlap(top),
        max_len=max((s.end - s.start for s in spans), default=0),
    )


def _overlap(intervals: list[tuple[int, int]]) -> int:
    """Summed length minus union length: time covered by more than one interval (here: several threads)."""
    return sum(e - s for s, e in intervals) - union_length(intervals)


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
