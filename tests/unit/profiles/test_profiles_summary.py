"""Rank summaries: made per rank, combined into the figures reading the raw traces together gives, checked against
the test's own reference (kernel durations summed per step from the JSON, the barrier from its definition) and
against the straggler the generator planted."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from tests.kineto_traces import Shape, write
from worthit.rules.profiles import combine, read_any
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto import parse_steps
from worthit.rules.profiles.kineto.parse import parse_trace
from worthit.rules.profiles.kineto.summary import (
    RankSummary,
    combine_summaries,
    decode_summary,
    encode_summary,
    summarize,
)
from worthit.service.cli import main

PAIR = ["trace_filter_sampled_rank-0.json.gz", "trace_filter_sampled_rank-1.json.gz"]


def trace(shape: Shape) -> bytes:
    out = io.StringIO()
    write(out, shape)
    return out.getvalue().encode()


def run_traces(ranks: int, straggler: int, scale: float = 1.5, steps: int = 3, layers: int = 2) -> list[bytes]:
    return [
        trace(
            Shape(
                rank=r,
                world_size=ranks,
                steps=steps,
                layers=layers,
                compute_scale=scale if r == straggler else 1.0,
                lead_scale=scale,
            )
        )
        for r in range(ranks)
    ]


def summary_bytes(data: bytes, name: str, steps: str | None = None) -> bytes:
    return encode_summary(summarize(parse_trace(data, name), name, parse_steps(steps) if steps else None))


def ns(us: float) -> int:
    return round(us * 1000)


def reference(traces: list[bytes]) -> tuple[int, float, dict[int, int]]:
    """The straggler, the wait fraction and each rank's wait, from the JSON alone: per step (all but the last),
    compute and collective time are the kernels launched in it (none overlap on its stream), the straggler the
    rank with most compute, a rank's wait min(its collective time, the straggler's compute less its own)."""
    per_rank: dict[int, list[tuple[int, int, int]]] = {}
    for data in traces:
        doc = json.loads(data)
        rank = doc["distributedInfo"]["rank"]
        events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
        steps = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events if e["name"].startswith("Profiler"))
        launch = {e["args"]["correlation"]: ns(e["ts"]) for e in events if e["cat"] == "cuda_runtime"}
        rows = []
        for lo, hi in steps[:-1]:
            kernels = [e for e in events if e["cat"] == "kernel" and lo <= launch[e["args"]["correlation"]] < hi]
            compute = sum(ns(e["dur"]) for e in kernels if not e["name"].startswith("nccl"))
            comm = sum(ns(e["dur"]) for e in kernels if e["name"].startswith("nccl"))
            rows.append((compute, comm, hi - lo))
        per_rank[rank] = rows
    waits = dict.fromkeys(per_rank, 0)
    wall = 0
    for step in range(len(next(iter(per_rank.values())))):
        lead = max(rows[step][0] for rows in per_rank.values())
        for rank, rows in per_rank.items():
            compute, comm, step_wall = rows[step]
            waits[rank] += min(comm, lead - compute)
            wall += step_wall
    slowest = max(per_rank, key=lambda r: (sum(c for c, _, _ in per_rank[r]), -r))
    return slowest, sum(waits.values()) / wall, waits


def test_the_two_real_ranks_combine_from_summaries_as_from_their_traces(
    fixture_bytes: Callable[[str], bytes],
) -> None:
    data = [fixture_bytes(f"real/pytorch/{name}") for name in PAIR]
    raw = combine(data, names=PAIR)
    summaries = [summary_bytes(d, n) for d, n in zip(data, PAIR, strict=True)]
    assert combine(summaries, names=PAIR) == raw
    assert raw.barrier is not None
    assert raw.barrier.straggler == 1
    chosen = parse_steps("551")
    assert combine(
        [summary_bytes(d, n, "551") for d, n in zip(data, PAIR, strict=True)], names=PAIR, steps=chosen
    ) == combine(data, names=PAIR, steps=chosen)
    # One summary alone reads as its trace alone.
    assert read_any(summaries[0]) == read_any(data[0])


@pytest.mark.parametrize(("ranks", "straggler"), [(2, 1), (5, 3)])
def test_generated_runs_combine_to_the_reference_and_the_planted_straggler(ranks: int, straggler: int) -> None:
    traces = run_traces(ranks, straggler)
    names = [f"rank-{r}.json" for r in range(ranks)]
    raw = combine(traces, names=names)
    combined = combine_summaries([decode_summary(summary_bytes(t, n)) for t, n in zip(traces, names, strict=True)])
    assert combined == raw
    slowest, fraction, waits = reference(traces)
    assert combined.barrier is not None
    assert combined.barrier.straggler == slowest == straggler
    assert combined.barrier.wait_fraction == pytest.approx(fraction, rel=1e-12)
    assert {r.rank: r.wait_ns for r in combined.ranks} == waits
    # The planted wait: each other rank waits for the straggler's extra compute in every step but the last.
    shape = Shape(layers=2)
    extra = 2 * (round(shape.gemm_ns * 1.5) - shape.gemm_ns + round(shape.elementwise_ns * 1.5) - shape.elementwise_ns)
    assert waits == {r: 0 if r == straggler else 2 * extra for r in range(ranks)}


def test_versions_and_mixtures_are_refused_with_a_sentence() -> None:
    traces = run_traces(2, 1)
    summary = msgspec.json.decode(summary_bytes(traces[0], "rank-0.json"))
    summary["version"] = 3
    with pytest.raises(ProfileError, match=r"version 3; this worthit reads version 1, 2 only"):
        read_any(msgspec.json.encode(summary))
    summary["version"] = 1
    summary["format"] = "something-else"
    with pytest.raises(ProfileError, match="expected"):
        decode_summary(msgspec.json.encode(summary))
    with pytest.raises(ProfileError, match="either rank summaries or profiler files"):
        combine([summary_bytes(traces[0], "a"), traces[1]])
    with pytest.raises(ProfileError, match="different steps"):
        combine_summaries(
            [decode_summary(summary_bytes(traces[0], "a", "1")), decode_summary(summary_bytes(traces[1], "b"))]
        )
    assert RankSummary.__struct_fields__[:2] == ("format", "version")


def test_cli_maps_ranks_with_jobs_then_combines_the_summaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = run_traces(3, 2)
    paths = []
    for rank, data in enumerate(traces):
        path = tmp_path / "traces" / f"rank-{rank}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        paths.append(str(path))
    assert main(["profile", "--summary", "--jobs", "2", "-o", str(tmp_path / "run"), *paths]) == 0
    written = sorted((tmp_path / "run").glob("*.summary.json"))
    assert [p.name for p in written] == [f"rank-{r}.summary.json" for r in range(3)]
    capsys.readouterr()
    assert main(["profile", "--json", *map(str, written)]) == 0
    from_summaries = msgspec.json.decode(capsys.readouterr().out)
    assert main(["profile", "--json", "--jobs", "2", *paths]) == 0
    from_traces = msgspec.json.decode(capsys.readouterr().out)
    expected = msgspec.to_builtins(combine(traces, names=[Path(p).name for p in paths]))
    assert from_summaries == from_traces == expected
    assert from_summaries["barrier"]["straggler"] == 2
