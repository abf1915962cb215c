"""A run of many ranks replayed where its traces live: each rank's summary made with ``--summary --what-if``
carries its arrivals at the collectives, the combine joins them; exact figures worked out in each docstring.

The generated run (`run_ranks`, µs): every rank launches its compute kernel at 0 (it starts at 5), then an
all-reduce on the same stream at 10 (it starts when the compute ends), then synchronises the device at 20; the
all-reduce ends 50 µs (its transfer) after the last rank's compute, at 5 + 300 + 50 = 355 on every rank; the sync
returns at 360, the step is 0-365 and the next one 400-765. The straggler runs ``slow_gemm`` for 300; rank r of the
others runs ``gemm`` (``waiting_gemm`` on rank WAITING) for 100 + (37 r mod 61), at most 160.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.replay_traces import TraceBuilder
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto import (
    combine_summary_what_ifs,
    decode_summary,
    parse_target,
    rank_what_if,
    read_schedule,
    what_if,
)
from worthit.rules.profiles.kineto.parse import parse_trace
from worthit.rules.profiles.kineto.summary import encode_summary, summarize
from worthit.rules.profiles.kineto.whatif import Losses, WhatIf
from worthit.service.cli import main

US = 1000
RANKS = 512
STRAGGLER = 317
WAITING = 5
STEP, SLOW, TRANSFER = 365, 300, 50


def compute_us(rank: int) -> int:
    return SLOW if rank == STRAGGLER else 100 + (37 * rank) % 61


def kernel_of(rank: int) -> str:
    return "slow_gemm" if rank == STRAGGLER else "waiting_gemm" if rank == WAITING else "gemm"


def rank_trace(rank: int, ranks: int = RANKS) -> bytes:
    b = TraceBuilder(rank=rank, world_size=ranks)
    dur = compute_us(rank)
    for n, at in ((1, 0), (2, 400)):
        b.launch(at, kernel_of(rank), at + 5, dur)
        b.launch(at + 10, "ncclKernel_AllReduce_RING_LL_Sum_float", at + 5 + dur, SLOW + TRANSFER - dur)
        b.call("cudaDeviceSynchronize", at + 20, 340)
        b.step(n, at, at + STEP)
    return b.bytes()


def summary(rank: int, targets: tuple[str, ...], ranks: int = RANKS) -> bytes:
    data = rank_trace(rank, ranks)
    joined = rank_what_if(read_schedule(data, f"rank-{rank}.json"), [parse_target(t) for t in targets])
    return encode_summary(summarize(parse_trace(data, f"rank-{rank}.json"), f"rank-{rank}.json", None, joined))


def combined(targets: tuple[str, ...], ranks: int = RANKS) -> WhatIf:
    joined = combine_summary_what_ifs([decode_summary(summary(r, targets, ranks)) for r in range(ranks)])
    assert joined is not None
    return joined


def next_slowest(ranks: int) -> int:
    return max(compute_us(r) for r in range(ranks) if r != STRAGGLER)


def test_the_straggler_saves_what_the_next_slowest_rank_allows() -> None:
    """``slow_gemm`` at 4x: 300 → 75; the straggler reaches the all-reduce at 80, the next-slowest rank (160 of
    compute) at 165, so it ends at 215 and each step at 365 - (305 - 165) = 225. Amdahl's saving is the kernel's own
    225; the replay's 140; the 85 between them is lost to the waiting ranks."""
    slowest_other = next_slowest(RANKS)
    assert slowest_other == 160
    saving = (5 + SLOW) - max(5 + SLOW // 4, 5 + slowest_other)
    assert saving == 140
    w = combined(("slow_gemm=4",))
    assert (w.measured_ns, w.replayed_ns) == (STEP * US, STEP * US)
    assert w.predicted_ns == (STEP - saving) * US
    assert w.amdahl_ns == (STEP - (SLOW - SLOW // 4)) * US
    assert w.lost_ns == Losses(overlap=0, launch=0, sync=0, ranks=(SLOW - SLOW // 4 - saving) * US)
    assert [(s.name, s.rank, s.measured_ns, s.predicted_ns) for s in w.steps] == [
        (f"ProfilerStep#{n}", None, STEP * US, (STEP - saving) * US) for n in (1, 2)
    ]
    assert [(t.pattern, t.phases, t.device_ns) for t in w.targets] == [("slow_gemm", ["slow_gemm"], 2 * SLOW * US)]
    who = max((r for r in range(RANKS) if r != STRAGGLER), key=lambda r: (compute_us(r), -r))
    assert w.statement.endswith(f"not 0.225 ms: the collectives then wait for the slowest rank (rank {who}).")
    assert w.better_target == f"the next-slowest rank (rank {who}) with it"


def test_a_waiting_ranks_kernel_saves_nothing() -> None:
    """``waiting_gemm`` (rank 5: 100 + 185 mod 61 = 102) at 2x: rank 5 reaches the all-reduce 51 earlier and waits
    51 longer for the straggler; the step stays 365. Amdahl's 51 (on rank 5) is lost to the ranks."""
    own = compute_us(WAITING) - round(compute_us(WAITING) / 2)
    assert own == 51
    w = combined(("waiting_gemm=2",))
    assert (w.measured_ns, w.replayed_ns, w.predicted_ns) == (STEP * US, STEP * US, STEP * US)
    assert w.amdahl_ns == (STEP - own) * US
    assert w.lost_ns == Losses(overlap=0, launch=0, sync=0, ranks=own * US)
    assert w.better_target == f"the straggler (rank {STRAGGLER})"


@pytest.mark.parametrize("targets", [("slow_gemm=4",), ("waiting_gemm=2",), ("*gemm=2", "kind:comm=2")])
def test_the_combine_gives_what_replaying_the_traces_together_gives(targets: tuple[str, ...]) -> None:
    """On 16 ranks the summaries' join and the replay of the 16 traces read together agree to the ns (the chain of
    collectives is the whole model when each rank's work waits on the collective before it)."""
    ranks = 16
    assert ranks <= STRAGGLER  # no straggler among 16: slow_gemm is on none of them
    if targets == ("slow_gemm=4",):
        with pytest.raises(ProfileError, match="to match device work in the chosen steps of a rank"):
            combined(targets, ranks)
        return
    joined = combined(targets, ranks)
    schedules = [read_schedule(rank_trace(r, ranks), f"rank-{r}.json") for r in range(ranks)]
    together = what_if(schedules, [parse_target(t) for t in targets])
    assert (joined.measured_ns, joined.replayed_ns, joined.predicted_ns, joined.amdahl_ns) == (
        together.measured_ns,
        together.replayed_ns,
        together.predicted_ns,
        together.amdahl_ns,
    )
    assert joined.lost_ns == together.lost_ns


def test_summaries_with_and_without_a_what_if_or_for_other_targets_are_refused() -> None:
    plain = decode_summary(
        encode_summary(summarize(parse_trace(rank_trace(0, 2), "a"), "a")), "a"
    )  # no what-if: version 2 with what_if null
    assert (plain.version, plain.what_if) == (2, None)
    assert combine_summary_what_ifs([plain, plain]) is None
    with pytest.raises(ProfileError, match="carries no what-if"):
        combine_summary_what_ifs([decode_summary(summary(0, ("gemm=2",), 2)), plain])
    with pytest.raises(ProfileError, match="different what-ifs"):
        combine_summary_what_ifs(
            [decode_summary(summary(0, ("gemm=2",), 2)), decode_summary(summary(1, ("gemm=3",), 2))]
        )


def test_a_version_1_summary_still_reads() -> None:
    doc = msgspec.json.decode(encode_summary(summarize(parse_trace(rank_trace(0, 2), "a"), "a")))
    doc["version"] = 1
    del doc["what_if"]
    old = decode_summary(msgspec.json.encode(doc), "old")
    assert (old.version, old.what_if) == (1, None)


def test_a_what_if_holding_more_collectives_than_its_cap_is_refused() -> None:
    doc = msgspec.json.decode(summary(0, ("gemm=2",), 2))
    step = doc["what_if"]["steps"][0]
    step["collectives"] = step["collectives"] * 70_000
    with pytest.raises(ProfileError, match="damaged"):
        decode_summary(msgspec.json.encode(doc), "big")


def test_512_ranks_through_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``worthit profile --summary --jobs 2 --what-if slow_gemm=4`` on 512 rank traces, then ``worthit profile
    --json`` on the summaries: the joined what-if under ``what_if``, the saving the next-slowest rank allows."""
    paths = []
    for rank in range(RANKS):
        path = tmp_path / "traces" / f"rank-{rank:03d}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(rank_trace(rank))
        paths.append(str(path))
    out = tmp_path / "run"
    assert main(["profile", "--summary", "--jobs", "2", "--what-if", "slow_gemm=4", "-o", str(out), *paths]) == 0
    summaries = sorted(map(str, out.glob("*.summary.json")))
    assert len(summaries) == RANKS
    capsys.readouterr()
    assert main(["profile", "--json", *summaries]) == 0
    doc = msgspec.json.decode(capsys.readouterr().out)
    joined = doc["what_if"]
    assert (joined["measured_ns"], joined["predicted_ns"]) == (STEP * US, (STEP - 140) * US)
    assert joined["lost_ns"] == {"overlap": 0, "launch": 0, "sync": 0, "ranks": 85 * US}
    assert doc["barrier"]["straggler"] == STRAGGLER


def run_of(computes: list[int], transfer: int) -> list[bytes]:
    """Ranks that each compute ``gemm_r`` for ``computes[r]`` µs from 5, then all-reduce (a transfer of `transfer`
    after the last rank's compute) and synchronise, two steps each; what a real profiler would record."""
    last = 5 + max(computes) + transfer
    out = []
    for rank, dur in enumerate(computes):
        b = TraceBuilder(rank=rank, world_size=len(computes))
        for n, at in ((1, 0), (2, last + 20)):
            b.launch(at, f"gemm_{rank}", at + 5, dur)
            b.launch(at + 1, "ncclKernel_AllReduce_RING_LL_Sum_float", at + 5 + dur, last - 5 - dur)
            b.call("cudaDeviceSynchronize", at + 2, last - 2 + 3)
            b.step(n, at, at + last + 10)
        out.append(b.bytes())
    return out


def _joined(traces: list[bytes], targets: list[str]) -> WhatIf:
    summaries = []
    for r, data in enumerate(traces):
        part = rank_what_if(read_schedule(data, f"rank-{r}"), [parse_target(t) for t in targets])
        summaries.append(decode_summary(encode_summary(summarize(parse_trace(data, f"r{r}"), f"r{r}", None, part))))
    joined = combine_summary_what_ifs(summaries)
    assert joined is not None
    return joined


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 10**6), min_size=2, max_size=8),
    st.integers(1, 10**6),
    st.data(),
)
@example([1, 10**6], 1, None)
def test_the_join_is_the_traces_replayed_together_and_never_grows_with_k(
    computes: list[int], transfer: int, data: st.DataObject | None
) -> None:
    """On any run of this shape the summaries' join gives the figures of the traces replayed together (exact at
    k = 1: the measured step), the losses add up to Amdahl's saving less the replayed one, and a larger k never
    lengthens the predicted step."""
    traces = run_of(computes, transfer)
    rank = 0 if data is None else data.draw(st.integers(0, len(computes) - 1))
    together_schedules = [read_schedule(t, f"rank-{r}") for r, t in enumerate(traces)]
    previous = None
    for k in (1.0, 2.0, 1e6):
        targets = [f"gemm_{rank}={k:g}"]
        joined = _joined(traces, targets)
        together = what_if(together_schedules, [parse_target(t) for t in targets])
        figures = (joined.measured_ns, joined.replayed_ns, joined.predicted_ns, joined.amdahl_ns, joined.lost_ns)
        assert figures == (
            together.measured_ns,
            together.replayed_ns,
            together.predicted_ns,
            together.amdahl_ns,
            together.lost_ns,
        )
        assert joined.replayed_ns == joined.measured_ns
        lost = joined.lost_ns
        assert lost.overlap + lost.launch + lost.sync + lost.ranks == (joined.measured_ns - joined.amdahl_ns) - (
            joined.replayed_ns - joined.predicted_ns
        )
        if previous is not None:
            assert joined.predicted_ns <= previous
        previous = joined.predicted_ns


def test_what_if_on_summaries_says_they_carry_their_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rank-0.summary.json"
    path.write_bytes(summary(0, ("gemm=2",), 2))
    assert main(["profile", "--what-if", "gemm=2", str(path)]) == 2
    assert "combine them without --what-if" in capsys.readouterr().err
