"""The replay: one linear pass over the schedules of one or more ranks, in recorded order, with durations changed.

Every dependency points forward in recorded time, so walking the nodes in that order (a topological order of the
dependency graph, computed once: `Replayer`) gives each node its dependencies' replayed times first. Nodes are the
device ops, the blocking calls and, across ranks, the collectives. A node's replayed time is the latest of its
dependencies plus what the trace shows it waited beyond them (its *residual*), so that with no duration changed
every time is the recorded one; without residuals the same pass measures how much of each step the model explains.

- A device op starts at the latest of: the op before it on its stream ending; its launch call's replayed start plus
  the launch latency (the trace's low percentile of launch → start, or the op's own when shorter); the ops it waits
  on through events ending. It lasts its recorded duration, divided by its k when it is a target.
- A host thread keeps its recorded gaps and call durations: its calls are shifted by what its blocking calls gained
  or lost. A blocking call ends at the latest of its start and what it waits on, plus its recorded tail (its end
  less the later of its start and the recorded end of what it waited on).
- A collective ends, on each rank, at the latest of its own start and the last rank's arrival (its start, on a
  common clock) plus its own transfer (its recorded end less the recorded last arrival); rank clocks are aligned
  on the collectives' ends (the median offset).

The model is a max-plus system: every time is a maximum of sums of durations and constants, so shortening a
duration never makes anything later, and makes nothing earlier by more than it was shortened.

The layer selects how much of the model is on (the loss decomposition in `whatif.py` reads them in order): the
device ops alone with their streams and events (`DEVICE`), then the host (`HOST`: each op also waits for its launch,
each thread keeps its work and waits in its blocking calls), then the collectives across ranks (`RANKS`).
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from statistics import median

from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.parse import FORMAT
from worthit.rules.profiles.kineto.schedule import NEG, Schedule, StepSpan

DEVICE, HOST, RANKS = 1, 2, 3


def scaled(duration: int, k: float) -> int:
    """A duration divided by k, to the ns (k = 1 keeps it exactly)."""
    return duration if k == 1 else round(duration / k)


@dataclass(slots=True)
class RankWindow:
    """The steps of one rank the replay speaks of: consecutive `steps`, and where their work begins (`lo`) and the
    step after them begins (`hi`, for which ops belong to the last one)."""

    steps: list[StepSpan]
    lo: int
    hi: int


@dataclass(slots=True)
class Run:
    """One replay's times: per global op its start and end, per blocking call its end."""

    start: array[int]
    end: array[int]
    block_end: array[int]


class Replayer:
    """The schedules of one run (one per rank) with their dependency order, ready to replay many times."""

    def __init__(self, schedules: Sequence[Schedule], windows: Sequence[RankWindow]) -> None:
        self.schedules = list(schedules)
        self.windows = list(windows)
        self.notes: list[str] = []
        self.op_base: list[int] = []
        self.block_base: list[int] = []
        n_ops = n_blocks = 0
        for s in self.schedules:
            self.op_base.append(n_ops)
            self.block_base.append(n_blocks)
            n_ops += len(s.op_start)
            n_blocks += len(s.block_call)
        self.n_ops, self.n_blocks = n_ops, n_blocks
        self._columns()
        self.groups: list[list[int]] = []
        self.offset = [0] * len(self.schedules)
        self.group_of: dict[int, int] = {}
        if len(self.schedules) > 1:
            self._join()
        self.order = self._order()
        self._unchanged: dict[tuple[int, bool], Run] = {}
        self._in_window: dict[int, array[int]] = {}  # rank → its ops launched in its window

    # -- what each node depends on, in global indices --------------------------------------------------------------

    def _columns(self) -> None:
        n = self.n_ops
        self.rank = array("q", [0]) * n
        self.rec_start = array("q", [0]) * n
        self.rec_end = array("q", [0]) * n
        self.duration = array("q", [0]) * n
        self.prev = array("q", [-1]) * n
        self.launch_at = array("q", [NEG]) * n  # recorded start of the launch call + the op's launch latency
        self.source = array("q", [-1]) * n  # the blocking call whose shift moves the launch call, -1 none
        self.fixed = bytearray(n)  # launched before the window: kept at its recorded times
        self.step = array("q", [-1]) * n  # index of the window's step the op was launched in, -1 outside
        self.events: dict[int, list[int]] = {}
        self.has_events = bytearray(n)  # 1 where `events` holds the op: the pass tests a byte, not a dict
        self.res_device = array("q", [0]) * n  # residual against stream and events only (DEVICE)
        self.res_full = array("q", [0]) * n  # residual against stream, events and launch (HOST, RANKS)
        self.anchor1 = bytearray(n)  # no dependency at layer 1: starts at its recorded time
        self.anchor2 = bytearray(n)
        nb = self.n_blocks
        self.b_rec_start = array("q", [0]) * nb
        self.b_rec_end = array("q", [0]) * nb
        self.b_prev = array("q", [-1]) * nb  # previous blocking call on the thread
        self.b_tail = array("q", [0]) * nb
        self.b_fixed = bytearray(nb)
        self.b_waits: list[list[int]] = []
        self.thread_blocks: list[dict[int, tuple[array[int], list[int]]]] = []
        for r, s in enumerate(self.schedules):
            base, bbase, w = self.op_base[r], self.block_base[r], self.windows[r]
            # Blocking calls per thread, by recorded end: what shifts a thread at a time.
            per_thread: dict[int, tuple[array[int], list[int]]] = {}
            for b, c in enumerate(s.block_call):
                t = s.call_thread[c]
                ends, ids = per_thread.setdefault(t, (array("q"), []))
                g = bbase + b
                self.b_prev[g] = ids[-1] if ids else -1
                ends.append(s.call_end[c])
                ids.append(g)
                self.b_rec_start[g] = s.call_start[c]
                self.b_rec_end[g] = s.call_end[c]
                self.b_fixed[g] = 1 if s.call_start[c] < w.lo else 0
                waits = [base + i for i in s.block_waits[b]]
                self.b_waits.append(waits)
                waited = max((s.op_end[i] for i in s.block_waits[b]), default=NEG)
                self.b_tail[g] = s.call_end[c] - max(s.call_start[c], waited)
            self.thread_blocks.append(per_thread)
            starts = [st.start for st in w.steps]
            for i in range(len(s.op_start)):
                g = base + i
                self.rank[g] = r
                start, end = s.op_start[i], s.op_end[i]
                self.rec_start[g], self.rec_end[g] = start, end
                self.duration[g] = end - start
                p = s.op_prev[i]
                bound = NEG
                if p >= 0:
                    self.prev[g] = base + p
                    bound = s.op_end[p]
                deps = s.op_events.get(i)
                if deps:
                    self.events[g] = [base + j for j in deps]
                    self.has_events[g] = 1
                    bound = max(bound, max(s.op_end[j] for j in deps))
                c = s.op_call[i]
                launched = s.call_start[c] if c >= 0 else start
                self.fixed[g] = 1 if launched < w.lo else 0
                if w.lo <= launched < w.hi:
                    self.step[g] = bisect_right(starts, launched) - 1
                self.anchor1[g] = 1 if bound == NEG else 0
                self.res_device[g] = start - bound if bound != NEG else 0
                if c >= 0:
                    latency = min(s.latency_ns, max(0, start - launched))
                    self.launch_at[g] = launched + latency
                    bound = max(bound, launched + latency)
                    ends, ids = per_thread.get(s.call_thread[c], (array("q"), []))
                    found = bisect_right(ends, launched) - 1
                    self.source[g] = ids[found] if found >= 0 else -1
                self.anchor2[g] = 1 if bound == NEG else 0
                self.res_full[g] = start - bound if bound != NEG else 0

    def _join(self) -> None:
        """Collectives across ranks, by process group and sequence number, else by order on each group (or
        stream); clocks aligned on their ends. A run whose collectives do not pair up is replayed rank by rank."""
        keyed: list[dict[tuple[str, object], int]] = []
        for r, s in enumerate(self.schedules):
            counts: dict[str, int] = {}
            here: dict[tuple[str, object], int] = {}
            for i in sorted(s.op_collective):
                group, seq = s.op_collective[i]
                where = group or s.streams[s.op_stream[i]][1].rpartition(" stream ")[2]
                if seq is None:
                    seq = counts.get(where, 0)
                    counts[where] = seq + 1
                here[(where, seq)] = self.op_base[r] + i
            keyed.append(here)
        if not any(keyed):
            self.notes.append("no collective kernels: the ranks are replayed each on its own.")
            return
        common = set(keyed[0])
        for here in keyed[1:]:
            common &= set(here)
        if any(len(here) != len(common) for here in keyed):
            sizes = ", ".join(
                f"rank {self.schedules[r].rank if self.schedules[r].rank is not None else r}: {len(here)}"
                for r, here in enumerate(keyed)
            )
            self.notes.append(
                f"the collectives do not pair up across ranks ({sizes} collective kernels, {len(common)} in common; "
                "a sampled or cut trace): the ranks are replayed each on its own, and what waiting ranks eat is "
                "not counted."
            )
            return
        ordered = sorted(common, key=lambda key: self.rec_start[keyed[0][key]])
        groups = [[here[key] for here in keyed] for key in ordered]
        offsets: list[list[int]] = [[] for _ in self.schedules]
        for members in groups:
            first = self.rec_end[members[0]]
            for r, g in enumerate(members):
                offsets[r].append(first - self.rec_end[g])
        self.offset = [round(median(o)) if o else 0 for o in offsets]
        self.groups = groups
        for n, members in enumerate(groups):
            for g in members:
                self.group_of[g] = n
        skew = max(abs(o) for o in self.offset)
        if skew:
            self.notes.append(
                f"rank clocks differ by up to {skew / 1000:,.1f} µs: aligned on the collectives' ends (median)."
            )

    def _order(self) -> array[int]:
        """Ops (0..n), blocking calls (n..n+b) and collectives after them, in an order where every node follows its
        dependencies: recorded time (an op by its start, a call by its end, a collective by its last arrival) when
        that order holds, as it does unless clocks round against it; otherwise Kahn's algorithm, the earliest
        recorded node first. A cycle is a schedule that cannot be."""
        n, nb = self.n_ops, self.n_blocks
        total = n + nb + len(self.groups)
        offset = self.offset
        key = array("q", [0]) * total
        for g in range(n):
            key[g] = self.rec_start[g] + offset[self.rank[g]]
        for b in range(nb):
            key[n + b] = self.b_rec_end[b] + offset[self._block_rank(b)]
        for x, members in enumerate(self.groups):
            key[n + nb + x] = max(self.rec_start[g] + offset[self.rank[g]] for g in members)
        order = array("q", sorted(range(total), key=key.__getitem__))
        position = array("q", [0]) * total
        for at, v in enumerate(order):
            position[v] = at
        if all(position[before] < position[node] for before, node in self._edges()):
            return order
        del order, position
        indegree = array("q", [0]) * total
        after: list[list[int]] = [[] for _ in range(total)]
        for before, node in self._edges():
            after[before].append(node)
            indegree[node] += 1
        ready = [(key[v], v) for v in range(total) if indegree[v] == 0]
        heapq.heapify(ready)
        out = array("q")
        while ready:
            _, v = heapq.heappop(ready)
            out.append(v)
            for w in after[v]:
                indegree[w] -= 1
                if indegree[w] == 0:
                    heapq.heappush(ready, (key[w], w))
        if len(out) != total:
            raise ProfileError(
                f"the schedule cannot be replayed: {total - len(out)} of its ops and calls wait on each other in a "
                "cycle (out-of-order timestamps or collectives that do not match across ranks)",
                format_expected=FORMAT,
            )
        return out

    def _edges(self) -> Iterator[tuple[int, int]]:
        """Every dependency as (what is waited on, what waits), in node indices (a collective member's end is its
        collective's node)."""
        n, nb = self.n_ops, self.n_blocks
        group_of = self.group_of

        def end_of(op: int) -> int:
            found = group_of.get(op)
            return op if found is None else n + nb + found

        for g in range(n):
            if self.prev[g] >= 0:
                yield end_of(self.prev[g]), g
            if self.source[g] >= 0:
                yield n + self.source[g], g
            for j in self.events.get(g, ()):
                yield end_of(j), g
        for b in range(nb):
            if self.b_prev[b] >= 0:
                yield n + self.b_prev[b], n + b
            for j in self.b_waits[b]:
                yield end_of(j), n + b
        for x, members in enumerate(self.groups):
            for g in members:
                yield g, n + nb + x

    def _block_rank(self, b: int) -> int:
        return bisect_right(self.block_base, b) - 1

    # -- the pass ---------------------------------------------------------------------------------------------------

    def run(self, k: Mapping[int, float], layer: int = RANKS, *, residuals: bool = True) -> Run:
        """Replay with op `g`'s duration divided by ``k[g]`` (global op indices), the model's layers up to `layer`;
        without `residuals`, every device op starts as soon as its dependencies allow. A replay with no k is kept:
        every what-if on the same schedules compares with it."""
        if not k:
            found = self._unchanged.get((layer, residuals))
            if found is None:
                found = self._unchanged[(layer, residuals)] = self._run(k, layer, residuals)
            return found
        return self._run(k, layer, residuals)

    def _run(self, k: Mapping[int, float], layer: int, residuals: bool) -> Run:
        n, nb = self.n_ops, self.n_blocks
        rec_start, rec_end = self.rec_start, self.rec_end
        start = array("q", rec_start)
        end = array("q", rec_end)
        block_end = array("q", self.b_rec_end)
        shift = array("q", [0]) * nb
        prev, launch_at, source = self.prev, self.launch_at, self.source
        events, has_events = self.events, self.has_events
        # Each op's duration in this replay, the targets' divided by their k: no lookup of k an op in the pass.
        duration_of = array("q", self.duration)
        for g, faster in k.items():
            duration_of[g] = scaled(duration_of[g], faster)
        host = layer >= HOST
        fixed, b_fixed = self.fixed, self.b_fixed
        res = self.res_device if layer == DEVICE else self.res_full
        anchor = self.anchor1 if layer == DEVICE else self.anchor2
        join = layer >= RANKS and bool(self.groups)
        b_prev, b_rec_start, b_rec_end, b_tail, b_waits = (
            self.b_prev,
            self.b_rec_start,
            self.b_rec_end,
            self.b_tail,
            self.b_waits,
        )
        group_base = n + nb
        offset, rank_of, groups = self.offset, self.rank, self.groups
        for v in self.order:
            if v < n:
                if fixed[v]:
                    continue
                if anchor[v]:
                    t = rec_start[v]
                else:
                    t = NEG
                    p = prev[v]
                    if p >= 0:
                        t = end[p]
                    if has_events[v]:
                        for j in events[v]:
                            if end[j] > t:
                                t = end[j]
                    if host and launch_at[v] != NEG:
                        src = source[v]
                        at = launch_at[v] + (shift[src] if src >= 0 else 0)
                        if at > t:
                            t = at
                    if residuals:
                        t += res[v]
                start[v] = t
                end[v] = t + duration_of[v]
            elif v < group_base:
                b = v - n
                if b_fixed[b] or layer < HOST:
                    continue
                p = b_prev[b]
                begin = b_rec_start[b] + (shift[p] if p >= 0 else 0)
                t = begin
                for j in b_waits[b]:
                    if end[j] > t:
                        t = end[j]
                block_end[b] = t + b_tail[b]
                shift[b] = block_end[b] - b_rec_end[b]
            elif join:
                members = groups[v - group_base]
                latest = max(start[g] + offset[rank_of[g]] for g in members)
                latest_rec = max(rec_start[g] + offset[rank_of[g]] for g in members)
                for g in members:
                    if fixed[g]:
                        continue
                    transfer = rec_end[g] + offset[rank_of[g]] - latest_rec
                    factor = k.get(g)
                    if factor is not None and transfer > 0:
                        transfer = scaled(transfer, factor)
                    end[g] = max(start[g], latest - offset[rank_of[g]] + transfer)
        return Run(start, end, block_end)

    # -- reading a run ----------------------------------------------------------------------------------------------

    def host_time(self, run: Run, rank: int, thread: int, t: int) -> int:
        """Where the recorded host time `t` on `thread` of `rank` lands in `run`."""
        found = self.thread_blocks[rank].get(thread)
        if found is None:
            return t
        ends, ids = found
        at = bisect_right(ends, t) - 1
        if at < 0:
            return t
        b = ids[at]
        return t + run.block_end[b] - self.b_rec_end[b]

    def spans(self, run: Run, rank: int) -> list[tuple[int, int]]:
        """The window's steps of `rank` in `run`: (start, end) each."""
        return [
            (self.host_time(run, rank, st.thread, st.start), self.host_time(run, rank, st.thread, st.end))
            for st in self.windows[rank].steps
        ]

    def device_end(self, run: Run, rank: int) -> int:
        """The latest end of the device work `rank` launched in its window (its window's start when none): the last
        of `device_ends`, read from the ops in the window alone."""
        window = self._in_window.get(rank)
        if window is None:
            base = self.op_base[rank]
            step = self.step
            window = self._in_window[rank] = array(
                "q", (g for g in range(base, base + len(self.schedules[rank].op_start)) if step[g] >= 0)
            )
        end = run.end
        return max(self.windows[rank].lo, max(map(end.__getitem__, window), default=NEG))

    def device_ends(self, run: Run, rank: int) -> list[int]:
        """Per step of `rank`'s window, the latest end of the device work launched in it or in an earlier step."""
        base = self.op_base[rank]
        steps = self.windows[rank].steps
        out = [NEG] * len(steps)
        end, step = run.end, self.step
        for g in range(base, base + len(self.schedules[rank].op_start)):
            j = step[g]
            if j >= 0 and end[g] > out[j]:
                out[j] = end[g]
        running = self.windows[rank].lo
        for j in range(len(out)):
            running = max(running, out[j])
            out[j] = running
        return out


__all__ = ["DEVICE", "HOST", "RANKS", "RankWindow", "Replayer", "Run", "scaled"]
