"""Small Kineto traces for the replay, written event by event (`TraceBuilder`) or simulated from a random program
(`simulate`), with every time an integer of µs so that a test can work out the answer by hand.

`TraceBuilder` writes what a test says: runtime calls on host threads, the device ops they launch (by correlation),
``cuda_sync`` events and ``ProfilerStep#N`` spans. `simulate` runs a program (host work, launches on streams, event
records and waits, synchronisations) the way a GPU would, so that the trace it writes is one a real profiler could
have recorded: a kernel starts when its stream is free, its launch has been issued (plus a launch latency and a
jitter) and the events it waits on have fired; a synchronize returns when what it waits on has ended.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

PID = 100
MAIN = 1


@dataclass
class TraceBuilder:
    """Events of one rank's trace, in µs; `bytes()` is the JSON a profiler would write."""

    rank: int | None = None
    world_size: int | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    corr: int = 1000

    def step(self, number: int, start: int, end: int, thread: int = MAIN) -> None:
        self.events.append(_x("user_annotation", f"ProfilerStep#{number}", PID, thread, start, end - start, {}))

    def call(self, name: str, start: int, dur: int, thread: int = MAIN) -> int:
        """A runtime call; its correlation."""
        self.corr += 1
        self.events.append(_x("cuda_runtime", name, PID, thread, start, dur, {"correlation": self.corr}))
        return self.corr

    def op(self, name: str, start: int, dur: int, corr: int | None, stream: int = 7, cat: str = "kernel") -> None:
        """A device op on `stream`, launched by the call whose correlation is `corr`."""
        args: dict[str, Any] = {"device": 0, "stream": stream}
        if corr is not None:
            args["correlation"] = corr
        self.events.append(_x(cat, name, 0, stream, start, dur, args))

    def launch(
        self, at: int, name: str, start: int, dur: int, *, stream: int = 7, call_dur: int = 5, thread: int = MAIN
    ) -> int:
        """``cudaLaunchKernel`` at `at` and its kernel `name` at `start` for `dur`."""
        corr = self.call("cudaLaunchKernel", at, call_dur, thread)
        self.op(name, start, dur, corr, stream)
        return corr

    def sync_event(self, kind: str, corr: int, **args: Any) -> None:
        self.events.append(
            _x(
                "cuda_sync",
                kind,
                0,
                args.get("stream", -1),
                0,
                0,
                {"cuda_sync_kind": kind, "correlation": corr, **args},
            )
        )

    def bytes(self) -> bytes:
        doc: dict[str, Any] = {"schemaVersion": 1, "traceEvents": self.events}
        if self.rank is not None:
            doc["distributedInfo"] = {"rank": self.rank, "world_size": self.world_size or 1}
        return json.dumps(doc).encode()


def _x(cat: str, name: str, pid: int, tid: int, ts: int, dur: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


# -- simulated programs -------------------------------------------------------------------------------------------

#: What a simulated program's host does, in order: ("work", µs), ("launch", stream, name, µs of device time),
#: ("record", stream, event), ("wait", stream, event), ("sync_stream", stream), ("sync_device",).
Instruction = tuple[Any, ...]


def random_program(rng: random.Random, streams: int = 2, length: int = 12) -> list[Instruction]:
    """A random host program over `streams` streams: launches, host work, event edges and synchronisations."""
    out: list[Instruction] = [("launch", 7, rng.choice(("gemm", "conv")), rng.choice((1, 50)))]
    events = 0
    recorded: list[int] = []
    for _ in range(length):
        roll = rng.random()
        stream = 7 + rng.randrange(streams)
        if roll < 0.5:
            name = rng.choice(("gemm", "conv", "relu", "nccl_allreduce"))
            out.append(("launch", stream, name, rng.choice((1, 2, 5, 20, 80, 300))))
        elif roll < 0.65:
            out.append(("work", rng.choice((1, 10, 50, 200))))
        elif roll < 0.75 and streams > 1:
            events += 1
            out.append(("record", stream, events))
            recorded.append(events)
        elif roll < 0.85 and recorded:
            out.append(("wait", stream, rng.choice(recorded)))
        elif roll < 0.93:
            out.append(("sync_stream", stream))
        else:
            out.append(("sync_device",))
    out.append(("sync_device",))
    return out


def simulate(program: list[Instruction], *, latency: int = 5, jitter: int = 0, seed: int = 0) -> bytes:
    """The trace of `program` run once as ``ProfilerStep#1`` (the host's call durations: 4 µs a launch, 2 µs a
    record or wait, 3 µs the tail of a synchronize)."""
    rng = random.Random(seed)
    b = TraceBuilder()
    t = 10
    free: dict[int, int] = {}  # stream → when its last op ends
    pending: dict[int, int] = {}  # stream → time the next op must wait for (events waited on)
    fired: dict[int, int] = {}  # event → when it fires
    for ins in program:
        op = ins[0]
        if op == "work":
            t += ins[1]
        elif op == "launch":
            _, stream, name, dur = ins
            corr = b.call("cudaLaunchKernel", t, 4)
            start = max(free.get(stream, 0), t + latency + (rng.randrange(jitter + 1) if jitter else 0))
            start = max(start, pending.pop(stream, 0))
            b.op(
                name if name != "nccl_allreduce" else "ncclKernel_AllReduce_RING_LL_Sum_float", start, dur, corr, stream
            )
            free[stream] = start + dur
            t += 4
        elif op == "record":
            _, stream, event = ins
            b.call("cudaEventRecord", t, 2)
            fired[event] = free.get(stream, 0)
            t += 2
        elif op == "wait":
            _, stream, event = ins
            b.call("cudaStreamWaitEvent", t, 2)
            pending[stream] = max(pending.get(stream, 0), fired[event])
            t += 2
        elif op == "sync_stream":
            corr = b.call("cudaStreamSynchronize", t, 0)
            end = max(t, free.get(ins[1], 0)) + 3
            b.events[-1]["dur"] = end - t
            b.sync_event("Stream Sync", corr, stream=ins[1], device=0)
            t = end
        else:
            corr = b.call("cudaDeviceSynchronize", t, 0)
            end = max(t, *free.values()) + 3 if free else t + 3
            b.events[-1]["dur"] = end - t
            b.sync_event("Context Sync", corr, device=0)
            t = end
    b.step(1, 0, t + 5)
    return b.bytes()


__all__ = ["MAIN", "TraceBuilder", "random_program", "simulate"]
