"""Bytes of a Kineto trace → `Schedule`: what the replay needs of one rank, and nothing the breakdown reads.

`parse.py` reduces a trace to the columns a breakdown measures; the replay needs more of each event (a device op's
stream and device, a runtime call's thread and name, the ``cuda_sync`` events' arguments), so it reads the same
bytes (plain or gzip, whole or streamed through `stream.py`'s batches) into its own columns:

- device ops (kernels, copies, memsets) with their stream, the runtime call that launched them (by ``correlation``;
  a CUDA graph launch is one call with many ops) and the step that call falls in;
- runtime calls per host thread in recorded order, and among them the blocking ones: device, stream and event
  synchronisation, synchronous copies and a D2H ``cudaMemcpyAsync`` into pageable memory (the call returns when its
  copy ends), ``cudaFree`` (it synchronises the device);
- what each blocking call waits on, and the event edges between streams (a ``cudaStreamWaitEvent`` and the
  ``cudaEventRecord`` it names): from ``cuda_sync`` events when the trace has them
  (``torch.profiler._ExperimentalConfig(enable_cuda_sync_events=True)``), otherwise inferred from the timeline (the
  op that ends as the call returns; the op on another stream that ends as a device op starts and nothing else
  explains the start), and counted in `Schedule.notes`;
- the ``ProfilerStep#N`` spans and the thread that records them.

`build` finishes the columns into the dependency structure the replay walks (`replay.py`). Every figure is integer
ns on the trace's own clock.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from worthit.rules.profiles._text import UTF8_BOM, is_blank
from worthit.rules.profiles.budget import json_objects
from worthit.rules.profiles.compression import gunzip, is_gzip
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.parse import (
    _COPY_CATS,
    _DEVICE_CATS,
    _MAX_US,
    _RUNTIME_CATS,
    _STEP_RE,
    FORMAT,
    STEP_PREFIX,
    TOO_DEEP,
    Parsed,
    _device_name,
)
from worthit.rules.profiles.kineto.stream import (
    _BOUNDARY,
    _TAIL_BYTES,
    BATCH_BYTES,
    _byte_of,
    _Reader,
    _scan,
    _without_bom,
    inflated,
)
from worthit.rules.profiles.model import Kind

_STEP_CATS = frozenset({"user_annotation", "operator", "cpu_op"})
_KEPT = _DEVICE_CATS | _RUNTIME_CATS | {"cuda_sync"}

#: Runtime calls that return only when the device is idle (a context synchronise; ``cudaFree`` synchronises too).
DEVICE_SYNC = frozenset(
    {
        "cudaDeviceSynchronize",
        "hipDeviceSynchronize",
        "cuCtxSynchronize",
        "cudaThreadSynchronize",
        "cudaFree",
        "hipFree",
    }
)
#: Calls that return when one stream's work so far has ended.
STREAM_SYNC = frozenset({"cudaStreamSynchronize", "hipStreamSynchronize", "cuStreamSynchronize"})
#: Calls that return when a recorded event has fired.
EVENT_SYNC = frozenset({"cudaEventSynchronize", "hipEventSynchronize", "cuEventSynchronize"})
#: Copies that return when their own copy has ended.
SYNC_COPY = frozenset({"cudaMemcpy", "hipMemcpy", "hipMemcpyWithStream", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol"})
ASYNC_COPY = frozenset({"cudaMemcpyAsync", "hipMemcpyAsync", "cudaMemcpy2DAsync", "hipMemcpy2DAsync"})
STREAM_WAIT = frozenset({"cudaStreamWaitEvent", "hipStreamWaitEvent", "cuStreamWaitEvent"})

#: Blocking kinds: what a call waits on.
WAIT_NONE, WAIT_DEVICE, WAIT_STREAM, WAIT_EVENT, WAIT_OWN = 0, 1, 2, 3, 4

#: The longest gap between an op ending on one stream and an op starting on another for the second to be read as
#: waiting on the first through an event (a device-side event wait takes a few µs).
EVENT_GAP_NS = 10_000
#: A start later than every known dependency by more than this is unexplained (rounding of µs timestamps aside).
UNEXPLAINED_NS = 1_000
#: The low percentile of launch → start taken as the trace's launch latency.
LATENCY_PERCENTILE = 0.05

NEG = -(1 << 62)
_INT64 = 1 << 63
NO_CORR = -(1 << 63)


class _Args(msgspec.Struct, gc=False):
    correlation: Any = None
    stream: Any = None
    device: Any = None
    cuda_sync_kind: Any = None
    wait_on_stream: Any = None
    wait_on_cuda_event_record_corr_id: Any = None
    graph_id: Any = msgspec.field(default=None, name="graph id")
    group: Any = msgspec.field(default=None, name="Process Group Name")
    seq: Any = msgspec.field(default=None, name="Seq")


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: int | float | None = None
    dur: int | float | None = None
    args: _Args | None = None


class _Distributed(msgspec.Struct):
    rank: int | None = None
    world_size: int | None = None


class _Info(Protocol):
    """A trace's ``distributedInfo`` as either reader decodes it."""

    rank: int | None
    world_size: int | None


class _Trace(msgspec.Struct):
    traceEvents: list[_Event]  # noqa: N815 - the Chrome trace format's own key
    distributedInfo: _Distributed | None = None  # noqa: N815


_DECODER = msgspec.json.Decoder(_Trace | list[_Event])
BATCH_DECODER = msgspec.json.Decoder(list[_Event])


@dataclass(frozen=True, slots=True)
class StepSpan:
    """One ``ProfilerStep#N`` on the host: name, number, start and end (ns) and the thread that recorded it."""

    name: str
    number: int
    start: int
    end: int
    thread: int


@dataclass(slots=True)
class Schedule:
    """One rank's schedule: device ops, host calls and what depends on what, in recorded time (ns).

    Device ops are sorted by start; ``op_*`` columns are indexed by op, ``call_*`` by runtime call (sorted by
    start), ``block_*`` by blocking call (sorted by end). An op's dependencies: the op before it on its stream
    (`op_prev`), its launch (`op_call`, the host time `call_start`), the ops it waits on through events
    (`op_events`). A blocking call waits on `block_waits`.
    """

    file: str
    rank: int | None = None
    world_size: int | None = None
    op_name: list[str] = field(default_factory=list)
    op_kind: list[Kind] = field(default_factory=list)
    op_start: array[int] = field(default_factory=lambda: array("q"))
    op_end: array[int] = field(default_factory=lambda: array("q"))
    op_stream: array[int] = field(default_factory=lambda: array("q"))
    op_device: array[int] = field(default_factory=lambda: array("q"))
    op_call: array[int] = field(default_factory=lambda: array("q"))  # launching call, -1 when unknown
    op_prev: array[int] = field(default_factory=lambda: array("q"))  # previous op on the stream, -1 when first
    op_events: dict[int, list[int]] = field(default_factory=dict)  # op → ops it waits on through events
    op_graph: array[int] = field(default_factory=lambda: array("b"))  # 1 when launched by a CUDA graph launch
    op_collective: dict[int, tuple[str, Any]] = field(default_factory=dict)  # comm op → (group, sequence)
    op_pageable_d2h: set[int] = field(default_factory=set)  # D2H copies into pageable memory
    streams: list[tuple[int, str]] = field(default_factory=list)  # stream index → (device, its label)
    call_name: list[str] = field(default_factory=list)
    call_start: array[int] = field(default_factory=lambda: array("q"))
    call_end: array[int] = field(default_factory=lambda: array("q"))
    call_thread: array[int] = field(default_factory=lambda: array("q"))
    call_block: array[int] = field(default_factory=lambda: array("q"))  # blocking call index, -1 when none
    block_call: array[int] = field(default_factory=lambda: array("q"))
    block_waits: list[list[int]] = field(default_factory=list)
    block_kind: array[int] = field(default_factory=lambda: array("b"))
    threads: list[str] = field(default_factory=list)
    steps: list[StepSpan] = field(default_factory=list)
    latency_ns: int = 0
    notes: list[str] = field(default_factory=list)
    # What the notes count, kept for tests and the summary.
    missing_launch_ns: int = 0
    inferred_event_ns: int = 0
    inferred_wait_calls: int = 0
    synced_from_events: int = 0
    synced_event_edges: int = 0
    negative_latency: int = 0
    graph_ns: int = 0


class _Raw:
    """What the events give, before sorting: appended as they come, batch by batch."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.where = f" in {file}" if file else ""
        self.named: dict[tuple[str, str], tuple[str, Kind]] = {}
        self.cats: dict[str, str] = {}
        # Device ops and runtime calls as columns (8 bytes a figure, names shared): a tuple an event held five
        # times as much, and the reduction's peak is what a large file costs.
        self.op_start: array[int] = array("q")
        self.op_end: array[int] = array("q")
        self.op_name: list[str] = []
        self.op_kind: list[Kind] = []
        self.op_stream: array[int] = array("q")  # index into `stream_keys`
        self.op_corr: array[int] = array("q")  # NO_CORR when absent; `odd_corr` when not an int64
        self.op_graph = bytearray()
        self.op_collective: dict[int, tuple[Any, Any]] = {}
        self.op_pageable: set[int] = set()
        self.stream_keys: dict[tuple[str, str], int] = {}
        self.call_start: array[int] = array("q")
        self.call_end: array[int] = array("q")
        self.call_name: list[str] = []
        self.call_thread: array[int] = array("q")  # index into `thread_keys`
        self.call_corr: array[int] = array("q")
        self.thread_keys: dict[tuple[Any, Any], int] = {}
        self.odd_corr: dict[tuple[bool, int], Any] = {}  # (is a call, index) → a correlation not an int64
        self.names: dict[str, str] = {}  # one string per call name
        self.syncs: dict[Any, _Args] = {}  # runtime correlation → its cuda_sync event's arguments
        self.steps: dict[int, tuple[int, int, str, tuple[Any, Any]]] = {}
        self.complete = 0

    def add(self, events: Iterable[_Event], first_index: int) -> None:
        """Reduce a batch of events whose first is ``$.traceEvents[first_index]``."""
        cats, named = self.cats, self.named
        for index, event in enumerate(events, first_index):
            if event.ph != "X":
                continue
            self.complete += 1
            cat = cats.get(event.cat)
            if cat is None:
                cat = cats[event.cat] = event.cat.lower()
            # Most events are CPU ops the replay does not read: passed over before their times are converted.
            if cat not in _KEPT and not (cat in _STEP_CATS and event.name.startswith(STEP_PREFIX)):
                continue
            ts, dur = event.ts, event.dur
            if ts is None or dur is None or dur < 0 or not (abs(ts) < _MAX_US and dur < _MAX_US):
                raise ProfileError(
                    f"event $.traceEvents[{index}]{self.where} ({event.name!r}) has no usable ts and dur "
                    f"(ts {ts}, dur {dur})",
                    format_expected=FORMAT,
                )
            start = ts * 1000 if type(ts) is int else round(ts * 1000)
            end = start + (dur * 1000 if type(dur) is int else round(dur * 1000))
            args = event.args
            if cat in _DEVICE_CATS:
                key = (cat, event.name)
                found = named.get(key)
                if found is None:
                    found = named[key] = _device_name(cat, event.name)
                i = len(self.op_start)
                if cat in _COPY_CATS and "dtoh" in event.name.lower() and "pageable" in event.name.lower():
                    self.op_pageable.add(i)
                if args is None or args.stream is None:
                    stream = (str(event.pid), str(event.tid))
                else:
                    stream = (str(args.device if args.device is not None else event.pid), str(args.stream))
                si = self.stream_keys.get(stream)
                if si is None:
                    si = self.stream_keys[stream] = len(self.stream_keys)
                self.op_start.append(start)
                self.op_end.append(end)
                self.op_name.append(found[0])
                self.op_kind.append(found[1])
                self.op_stream.append(si)
                self._corr(False, i, args.correlation if args is not None else None, self.op_corr)
                self.op_graph.append(1 if args is not None and args.graph_id is not None else 0)
                if found[1] == "comm" and args is not None:
                    self.op_collective[i] = (args.group, args.seq)
            elif cat in _RUNTIME_CATS:
                thread = (event.pid, event.tid)
                ti = self.thread_keys.get(thread)
                if ti is None:
                    ti = self.thread_keys[thread] = len(self.thread_keys)
                name = self.names.setdefault(event.name, event.name)
                self.call_start.append(start)
                self.call_end.append(end)
                self.call_name.append(name)
                self.call_thread.append(ti)
                self._corr(True, len(self.call_corr), args.correlation if args is not None else None, self.call_corr)
            elif cat == "cuda_sync":
                if args is not None and args.correlation is not None and _hashable(args.correlation):
                    self.syncs[args.correlation] = args
            elif cat in _STEP_CATS and event.name.startswith(STEP_PREFIX):
                found_step = _STEP_RE.match(event.name)
                if found_step is not None:
                    number = int(found_step.group(1))
                    here = self.steps.get(number)
                    if here is None or start < here[0]:
                        self.steps[number] = (start, end, event.name, (event.pid, event.tid))

    def _corr(self, call: bool, index: int, value: Any, column: array[int]) -> None:
        if value is None:
            column.append(NO_CORR)
        elif type(value) is int and -_INT64 < value < _INT64:
            column.append(value)
        else:
            column.append(NO_CORR)
            self.odd_corr[(call, index)] = value

    def finish(self, info: _Info | None) -> Schedule:
        """The schedule, once every event was added; `info` is the trace's ``distributedInfo``."""
        if self.complete == 0:
            raise ProfileError(
                "a JSON trace without complete ('X') events: nothing was recorded", format_expected=FORMAT
            )
        return _build(self, info)


def read_schedule(data: bytes, file: str = "") -> Schedule:
    """A PyTorch profiler trace (plain or gzipped) as a replayable schedule; ProfileError naming the cause."""
    if is_gzip(data):
        data = gunzip(data, FORMAT)
    data = data.removeprefix(UTF8_BOM)
    if is_blank(data):
        raise ProfileError("the file is empty", format_expected=FORMAT)
    json_objects(data, FORMAT)
    try:
        decoded = _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise ProfileError(f"JSON, but not a Chrome trace: {_plain(exc)}", format_expected=FORMAT) from None
    except msgspec.DecodeError as exc:
        raise ProfileError(f"malformed JSON: {_plain(exc)}", format_expected=FORMAT) from None
    except RecursionError:  # msgspec's depth limit (the interpreter's recursion limit) is raised as this
        raise ProfileError(TOO_DEEP, format_expected=FORMAT) from None
    trace = decoded if isinstance(decoded, _Trace) else _Trace(traceEvents=decoded)
    raw = _Raw(file)
    raw.add(trace.traceEvents, 0)
    return raw.finish(trace.distributedInfo)


def read_schedule_stream(chunks: Iterable[bytes], file: str = "") -> Schedule:
    """`read_schedule` of a trace given as chunks of bytes (plain or gzip), in one pass that never holds the
    document (the batches of `stream.parse_stream`): memory bounded by the schedule's columns."""
    reader = _ScheduleReader(_without_bom(inflated(chunks)), file, _Raw(file))
    reader.read()
    if reader.schedule is None:  # read() ends in _finish or raises
        raise ProfileError("the trace ended before its events did", format_expected=FORMAT)
    return reader.schedule


class _ScheduleReader(_Reader):
    """`stream`'s one-pass reader (its cuts, batches, errors and memory bound) with the events decoded into the
    schedule's own type and reduced by `_Raw` instead of the breakdown's builder."""

    def __init__(self, chunks: Iterable[bytes], file: str, raw: _Raw) -> None:
        super().__init__(chunks, file, BATCH_BYTES)
        self.raw = raw
        self.pending: list[_Event] | None = None  # the batch `_cut` decoded, handed to `_decode_batch` next
        self.schedule: Schedule | None = None

    def _cut(self) -> tuple[int | None, None]:
        buf = self.buf
        ends = [m.start() + 1 for m in _BOUNDARY.finditer(buf, max(0, len(buf) - _TAIL_BYTES))]
        for end in ends[-1:-5:-1]:  # a few candidates, last first: one inside a string fails to decode
            batch = _batch(buf[:end])
            if batch is not None:
                self.pending = batch
                return end, None  # the reader then hands these bytes to `_decode_batch`
        return _scan(buf, False), None

    def _decode_batch(self, events: bytes) -> None:
        batch, self.pending = self.pending, None
        if batch is None:
            try:
                batch = BATCH_DECODER.decode(b"[" + events + b"]")
            except msgspec.ValidationError as exc:
                message = re.sub(
                    r"\$\[(\d+)\]", lambda m: f"$.traceEvents[{self.events + int(m.group(1))}]", _plain(exc)
                )
                raise ProfileError(f"JSON, but not a Chrome trace: {message}", format_expected=FORMAT) from None
            except msgspec.DecodeError as exc:
                self._malformed(_plain(exc), _byte_of(exc, -1))
            except RecursionError:
                raise ProfileError(TOO_DEEP, format_expected=FORMAT) from None
        self.raw.add(batch, self.events)
        self.events += len(batch)

    def _finish(self, head: bytes) -> Parsed:
        self.schedule = self.raw.finish(self._outer_info(head))
        return Parsed()  # what the base reader returns; the schedule is read from `self.schedule`


def _batch(events: bytes) -> list[_Event] | None:
    try:
        return BATCH_DECODER.decode(b"[" + events + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _plain(exc: Exception) -> str:
    return str(exc).replace("`", "")


def _key(value: Any) -> str:
    return str(value)


def _build(raw: _Raw, info: _Info | None) -> Schedule:
    s = Schedule(file=raw.file)
    if info is not None:
        s.rank, s.world_size = info.rank, info.world_size
    # Runtime calls by start (then end, longest first: an outer call before the calls it contains).
    starts, ends = raw.call_start, raw.call_end
    order = sorted(range(len(starts)), key=lambda i: (starts[i], -ends[i]))
    s.call_start = array("q", (starts[i] for i in order))
    s.call_end = array("q", (ends[i] for i in order))
    s.call_name = [raw.call_name[i] for i in order]
    s.call_thread = array("q", (raw.call_thread[i] for i in order))
    call_corr = array("q", (raw.call_corr[i] for i in order))
    odd_calls = {rank: raw.odd_corr[(True, i)] for rank, i in enumerate(order) if (True, i) in raw.odd_corr}
    raw.call_start = raw.call_end = raw.call_thread = raw.call_corr = array("q")
    raw.call_name = []
    del order
    s.threads = [f"{pid}/{tid}" for (pid, tid) in raw.thread_keys]
    calls = _Correlations(call_corr, odd_calls)
    starts, ends = raw.op_start, raw.op_end
    order = sorted(range(len(starts)), key=lambda i: (starts[i], ends[i]))
    n_ops = len(order)
    if n_ops == 0:
        raise ProfileError(
            "the trace has no device timeline (no kernel, copy or memset events: a CPU-only run or a CUPTI "
            "range-profiler run), so there is no schedule to replay",
            format_expected=FORMAT,
        )
    for key in raw.stream_keys:
        device = int(key[0]) if key[0].isdigit() and len(key[0]) < 10 else -1  # a device index, else unknown
        s.streams.append((device, f"device {key[0]} stream {key[1]}"))
    last_on = [-1] * len(s.streams)
    first_op = array("q", [-1]) * len(s.call_name)  # call → the first op it launched
    more_ops: dict[int, list[int]] = {}  # call → the ops after its first (a CUDA graph launch)
    for i, j in enumerate(order):
        start, end, si = starts[j], ends[j], raw.op_stream[j]
        s.op_name.append(raw.op_name[j])
        s.op_kind.append(raw.op_kind[j])
        s.op_start.append(start)
        s.op_end.append(end)
        s.op_stream.append(si)
        s.op_device.append(s.streams[si][0])
        s.op_prev.append(last_on[si])
        last_on[si] = i
        corr = raw.op_corr[j]
        call = calls.get(raw.odd_corr.get((False, j)) if corr == NO_CORR else corr)
        s.op_call.append(call)
        if call >= 0:
            if first_op[call] < 0:
                first_op[call] = i
            else:
                more_ops.setdefault(call, []).append(i)
        else:
            s.missing_launch_ns += end - start
        graph = raw.op_graph[j] == 1 or (call >= 0 and "GraphLaunch" in s.call_name[call])
        s.op_graph.append(1 if graph else 0)
        if graph:
            s.graph_ns += end - start
        collective = raw.op_collective.get(j)
        if collective is not None:
            s.op_collective[i] = (_key(collective[0]) if collective[0] is not None else "", collective[1])
        if j in raw.op_pageable:
            s.op_pageable_d2h.add(i)
    raw.op_start = raw.op_end = raw.op_stream = raw.op_corr = array("q")
    raw.op_name, raw.op_kind = [], []
    del order
    own_ops = _Launches(first_op, more_ops)
    graph_calls = sum(1 for c in more_ops if "Graph" in s.call_name[c])
    _latency(s)
    _steps(s, raw, raw.thread_keys)
    launched = _Launched(s)
    _blocking(s, raw, own_ops, calls, call_corr, odd_calls, launched)
    _events(s, raw, calls, launched)
    _notes(s, n_ops, graph_calls)
    return s


class _Correlations:
    """Correlation → the runtime call that has it (the last one, as a trace's own order would give): int64
    correlations in sorted columns searched by bisection (a dict of a million would cost some 100 MB), others in a
    dict."""

    def __init__(self, corr: array[int], odd: dict[int, Any]) -> None:
        order = sorted((i for i in range(len(corr)) if corr[i] != NO_CORR), key=corr.__getitem__)
        self.keys = array("q", (corr[i] for i in order))
        self.calls = array("q", order)
        self.odd = {value: i for i, value in odd.items() if _hashable(value)}

    def get(self, value: Any) -> int:
        """The call with correlation `value`, -1 when none."""
        if value is None:
            return -1
        if type(value) is int and -_INT64 < value < _INT64:
            found = bisect_right(self.keys, value) - 1
            return self.calls[found] if found >= 0 and self.keys[found] == value else -1
        return self.odd.get(value, -1) if _hashable(value) else -1


def _hashable(value: Any) -> bool:
    return isinstance(value, int | str | float)


class _Launches:
    """Call → the ops it launched: the first in a column, the rest (a CUDA graph launch's) in a dict."""

    def __init__(self, first: array[int], more: dict[int, list[int]]) -> None:
        self.first, self.more = first, more

    def of(self, call: int) -> list[int]:
        """The ops `call` launched, in start order (empty when none)."""
        first = self.first[call]
        return [] if first < 0 else [first, *self.more.get(call, ())]


def _latency(s: Schedule) -> None:
    """The trace's launch latency: a low percentile of launch → start over the ops whose launch is known."""
    gaps = sorted(s.op_start[i] - s.call_start[c] for i, c in enumerate(s.op_call) if c >= 0)
    if not gaps:
        s.latency_ns = 0
        return
    s.negative_latency = sum(1 for g in gaps if g < 0)
    s.latency_ns = max(0, gaps[min(len(gaps) - 1, int(len(gaps) * LATENCY_PERCENTILE))])


def _steps(s: Schedule, raw: _Raw, thread_index: dict[tuple[Any, Any], int]) -> None:
    for number, (start, end, name, thread) in sorted(raw.steps.items(), key=lambda kv: kv[1][0]):
        t = thread_index.get(thread)
        if t is None:  # a thread that made no runtime call: nothing on it ever waits
            t = thread_index[thread] = len(s.threads)
            s.threads.append(f"{thread[0]}/{thread[1]}")
        s.steps.append(StepSpan(name, number, start, end, t))


class _Launched:
    """Per stream, the ops in launch order, to find the last op launched on a stream before a time."""

    def __init__(self, s: Schedule) -> None:
        self.ops: list[list[int]] = [[] for _ in s.streams]
        self.at: list[array[int]] = [array("q") for _ in s.streams]
        for i in range(len(s.op_start)):
            c = s.op_call[i]
            t = s.call_start[c] if c >= 0 else s.op_start[i]
            at = self.at[s.op_stream[i]]
            self.ops[s.op_stream[i]].append(i)
            at.append(max(t, at[-1]) if at else t)  # monotone: a stream runs its ops in launch order

    def last_before(self, stream: int, t: int) -> int:
        """The last op launched on `stream` before `t`, -1 when none."""
        found = bisect_right(self.at[stream], t - 1) - 1
        return self.ops[stream][found] if found >= 0 else -1


def _blocking(
    s: Schedule,
    raw: _Raw,
    own_ops: _Launches,
    calls: _Correlations,
    call_corr: array[int],
    odd: dict[int, Any],
    launched: _Launched,
) -> None:
    """Which calls block, and what each waits on (from its ``cuda_sync`` event, else inferred)."""
    blocks: list[tuple[int, int, list[int]]] = []  # (call, kind, waits)
    pageable = s.op_pageable_d2h
    for c, name in enumerate(s.call_name):
        kind = WAIT_NONE
        if name in DEVICE_SYNC:
            kind = WAIT_DEVICE
        elif name in STREAM_SYNC:
            kind = WAIT_STREAM
        elif name in EVENT_SYNC:
            kind = WAIT_EVENT
        elif (name in SYNC_COPY or name in ASYNC_COPY) and (
            (launched_ops := own_ops.of(c)) and (name in SYNC_COPY or not pageable.isdisjoint(launched_ops))
        ):
            kind = WAIT_OWN
        if kind == WAIT_NONE:
            continue
        start = s.call_start[c]
        corr = odd.get(c) if call_corr[c] == NO_CORR else call_corr[c]
        sync = raw.syncs.get(corr) if corr is not None and _hashable(corr) else None
        waits: list[int] = []
        if kind == WAIT_OWN:
            waits = own_ops.of(c)
        elif sync is not None and _sync_kind(sync) in ("context sync", "stream sync", "event sync"):
            s.synced_from_events += 1
            waits = _waits_from_sync(s, sync, launched, start, calls)
        elif kind == WAIT_DEVICE:
            waits = [w for st in range(len(s.streams)) if (w := launched.last_before(st, start)) >= 0]
        else:
            waits = _inferred_wait(s, launched, c)
            s.inferred_wait_calls += 1
        blocks.append((c, kind, waits))
    blocks.sort(key=lambda b: (s.call_end[b[0]], s.call_start[b[0]]))
    s.call_block = array("q", [-1]) * len(s.call_name)
    for b, (c, kind, waits) in enumerate(blocks):
        s.block_call.append(c)
        s.block_kind.append(kind)
        s.block_waits.append(waits)
        s.call_block[c] = b


def _sync_kind(sync: _Args) -> str:
    return str(sync.cuda_sync_kind or "").lower()


def _waits_from_sync(s: Schedule, sync: _Args, launched: _Launched, start: int, calls: _Correlations) -> list[int]:
    kind = _sync_kind(sync)
    streams = _streams_named(s, sync.device, sync.stream if kind == "stream sync" else sync.wait_on_stream)
    if kind == "context sync":
        devices = {_key(sync.device)} if sync.device is not None else None
        return [
            w
            for st, (device, _) in enumerate(s.streams)
            if devices is None or _key(device) in devices
            if (w := launched.last_before(st, start)) >= 0
        ]
    at = start
    if kind == "event sync":
        record = calls.get(sync.wait_on_cuda_event_record_corr_id)
        if record >= 0:
            at = s.call_start[record]
    return [w for st in streams if (w := launched.last_before(st, at)) >= 0]


def _streams_named(s: Schedule, device: Any, stream: Any) -> list[int]:
    if stream is None:
        return []
    label = f"stream {_key(stream)}"
    return [
        i
        for i, (dev, name) in enumerate(s.streams)
        if name.endswith(label) and (device is None or _key(dev) == _key(device) or dev == -1)
    ]


def _inferred_wait(s: Schedule, launched: _Launched, c: int) -> list[int]:
    """What a stream or event synchronize without a ``cuda_sync`` event waited on: of the last op launched before
    it on each stream, the one that ended latest while the call ran (it let the call return); when none ended
    inside the call, the stream launched on last before it (the current stream), which had finished already."""
    start, end = s.call_start[c], s.call_end[c]
    best, best_end = -1, NEG
    latest, latest_at = -1, NEG
    for st in range(len(s.streams)):
        w = launched.last_before(st, start)
        if w < 0:
            continue
        e = s.op_end[w]
        if start <= e <= end + UNEXPLAINED_NS and e > best_end:
            best, best_end = w, e
        op_call = s.op_call[w]
        at = s.call_start[op_call] if op_call >= 0 else s.op_start[w]
        if at > latest_at:
            latest, latest_at = w, at
    chosen = best if best >= 0 else latest
    return [chosen] if chosen >= 0 else []


def _events(s: Schedule, raw: _Raw, calls: _Correlations, launched: _Launched) -> None:
    """Event edges between streams: from ``cuda_sync`` stream-wait events, else inferred where the trace waits on
    events (it calls ``cudaStreamWaitEvent``) and an op's start is explained by nothing but another stream's end."""
    unresolved = 0
    for corr, sync in raw.syncs.items():
        if "wait" not in _sync_kind(sync) or "event" not in _sync_kind(sync):
            continue
        call = calls.get(corr)
        record = calls.get(sync.wait_on_cuda_event_record_corr_id)
        if call < 0 or record < 0:
            unresolved += 1
            continue
        source = [
            w
            for st in _streams_named(s, sync.device, sync.wait_on_stream)
            if (w := launched.last_before(st, s.call_start[record])) >= 0
        ]
        waiters = []
        for st in _streams_named(s, sync.device, sync.stream):
            # The first op launched on the waiting stream after the wait call.
            ops, at = launched.ops[st], launched.at[st]
            found = bisect_right(at, s.call_start[call])
            if found < len(ops):
                waiters.append(ops[found])
        if not source or not waiters:
            unresolved += 1  # an event recorded before any work, or a wait nothing follows: nothing to order
            continue
        for waiter in waiters:
            s.op_events.setdefault(waiter, []).extend(source)
            s.synced_event_edges += 1
    waits_recorded = s.synced_event_edges > 0 and unresolved == 0
    if waits_recorded or not any(name in STREAM_WAIT for name in s.call_name) or len(s.streams) < 2:
        return
    by_end = sorted(range(len(s.op_end)), key=s.op_end.__getitem__)
    ends = array("q", (s.op_end[i] for i in by_end))
    latency = s.latency_ns
    for i in range(len(s.op_start)):
        if i in s.op_events:  # its waits are recorded
            continue
        start = s.op_start[i]
        bound = NEG
        prev = s.op_prev[i]
        if prev >= 0:
            bound = s.op_end[prev]
        call = s.op_call[i]
        if call >= 0:
            bound = max(bound, s.call_start[call] + min(latency, max(0, start - s.call_start[call])))
        if start - bound <= UNEXPLAINED_NS:
            continue
        pos = bisect_right(ends, start) - 1
        while pos >= 0 and start - ends[pos] <= EVENT_GAP_NS:
            j = by_end[pos]
            if ends[pos] > bound and s.op_stream[j] != s.op_stream[i] and s.op_device[j] == s.op_device[i]:
                own = s.call_start[call] if call >= 0 else start
                other = s.op_call[j]
                if other < 0 or s.call_start[other] <= own:
                    s.op_events.setdefault(i, []).append(j)
                    s.inferred_event_ns += s.op_end[i] - start
                    break
            pos -= 1


def _notes(s: Schedule, n_ops: int, graph_calls: int) -> None:
    total = sum(s.op_end[i] - s.op_start[i] for i in range(n_ops)) or 1
    if s.missing_launch_ns:
        s.notes.append(
            f"{_pct(s.missing_launch_ns, total)} of the device time has no launching call (missing correlations): "
            "those ops keep their stream order and recorded gaps, not their host's timing."
        )
    if s.inferred_event_ns:
        s.notes.append(
            f"no cuda_sync events: event waits between streams were inferred from the timeline (an op starting as "
            f"another stream's op ends, nothing else explaining it), covering {_pct(s.inferred_event_ns, total)} of "
            "the device time."
        )
    if s.inferred_wait_calls:
        s.notes.append(
            f"no cuda_sync events for {s.inferred_wait_calls} stream or event synchronize call(s): each was taken "
            "to wait on the op that ended as it returned."
        )
    if s.negative_latency:
        s.notes.append(
            f"{s.negative_latency} op(s) start before their launch call (clock rounding): their launch latency is "
            "taken as 0."
        )
    if s.graph_ns:
        s.notes.append(
            f"{_pct(s.graph_ns, total)} of the device time was launched by CUDA graphs ({graph_calls} launch(es) "
            "of several ops): each op waits on its graph's one launch and its stream."
        )


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%"


__all__ = [
    "BATCH_DECODER",
    "NEG",
    "WAIT_DEVICE",
    "WAIT_EVENT",
    "WAIT_NONE",
    "WAIT_OWN",
    "WAIT_STREAM",
    "Schedule",
    "StepSpan",
    "read_schedule",
    "read_schedule_stream",
]
