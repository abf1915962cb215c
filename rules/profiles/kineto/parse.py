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
from collections import defaultdict
from dataclasses import dataclass, field

import msgspec

from worthit.rules.profiles._text import is_blank
from worthit.rules.profiles.budget import json_objects
from worthit.rules.profiles.compression import gunzip, is_gzip
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.intervals import union_length
from worthit.rules.profiles.model import Kind
from worthit.rules.profiles.naming import copy_name, kernel_kind

FORMAT = "pytorch_trace"
STEP_PREFIX = "ProfilerStep#"
_KERNEL_CATS = frozenset({"kernel"})
_COPY_CATS = frozenset({"gpu_memcpy", "memcpy"})
_MEMSET_CATS = frozenset({"gpu_memset", "memset"})
_CPU_CATS = frozenset({"cpu_op", "operator"})
_RUNTIME_CATS = frozenset({"cuda_runtime", "runtime", "cuda_driver"})
_STEP_CATS = frozenset({"user_annotation", "operator", "cpu_op"})
_SKIP_WALL_CATS = frozenset({"trace"})
_JSON_START = re.compile(rb"\s*[\[{]")
_STEP_RE = re.compile(r"ProfilerStep#(\d+)$")


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


@dataclass(frozen=True, slots=True)
class Step:
    """One ``ProfilerStep#N`` span on the host: its name, its number N, its start and end in ns."""

    name: str
    number: int
    start: int
    end: int


@dataclass(slots=True)
class Parsed:
    """One trace reduced to flat columns: device work (with launch times), top-level CPU ops, steps."""

    dev_name: list[str] = field(default_factory=list)
    dev_kind: list[Kind] = field(default_factory=list)
    dev_start: list[int] = field(default_factory=list)
    dev_end: list[int] = field(default_factory=list)
    dev_launch: list[int] = field(default_factory=list)
    cpu: list[tuple[int, int, str]] = field(default_factory=list)  # top-level ops: start, end, name
    annotations: list[tuple[int, int, str]] = field(default_factory=list)
    other: list[tuple[int, int]] = field(default_factory=list)  # runtime calls, user annotations: wall only
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
    out = Parsed()
    if trace.distributedInfo is not None:
        out.rank, out.world_size = trace.distributedInfo.rank, trace.distributedInfo.world_size
    by_thread: dict[tuple[int | str, int | str], list[tuple[int, int, str]]] = defaultdict(list)
    launches: dict[int | str, int] = {}
    device_corr: list[int | str | None] = []
    named: dict[tuple[str, str], tuple[str, Kind]] = {}
    complete = 0
    steps: dict[tuple[str, int], Step] = {}
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
                steps.setdefault((event.name, start), Step(event.name, int(found.group(1)), start, end))
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
    by_number: dict[int, Step] = {}
    for step in sorted(steps.values(), key=lambda s: s.start):
        by_number.setdefault(step.number, step)
    out.steps = sorted(by_number.values(), key=lambda s: s.start)
    return out


def span(p: Parsed) -> tuple[int, int]:
    """First start and last end of everything recorded (the profiler's own span left out)."""
    starts = [s for s, _, _ in p.cpu] + [s for s, _ in p.other]
    ends = [e for _, e, _ in p.cpu] + [e for _, e in p.other]
    if p.dev_start:
        starts.append(min(p.dev_start))
        ends.append(max(p.dev_end))
    return min(starts), max(ends)


def _decode(data: bytes) -> _Trace:
    if is_gzip(data):
        data = gunzip(data, FORMAT)
    if is_blank(data):
        raise ProfileError("the file is empty", format_expected=FORMAT)
    if b"\x00" in data[:65536]:
        raise ProfileError("the file is binary (it contains NUL bytes), expected JSON", format_expected=FORMAT)
    # Decoded in one call, so counted before it: every event is at least one `{`, and what a budget allows
    # (rules.profiles.budget, inside `counting`) bounds what the decoder would build.
    json_objects(data, FORMAT)
    try:
        decoded = _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise ProfileError(f"JSON, but not a Chrome trace: {_plain(exc)}", format_expected=FORMAT) from None
    except msgspec.DecodeError as exc:
        raise ProfileError(f"malformed JSON: {_plain(exc)}", format_expected=FORMAT, line=_line_of(exc, data)) from None
    return decoded if isinstance(decoded, _Trace) else _Trace(traceEvents=decoded)


def _device_name(cat: str, name: str) -> tuple[str, Kind]:
    if cat in _KERNEL_CATS:
        return name, kernel_kind(name)
    if cat in _COPY_CATS:
        return copy_name(name), "copy"
    return "memset", "other"


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


__all__ = ["FORMAT", "STEP_PREFIX", "Parsed", "Step", "looks_like", "parse_trace", "span"]
