"""A 512-rank run with a planted straggler: each rank's trace mapped to its summary with ``--jobs 2``, the summaries
combined; the figures are the test's own reference from the JSON, the straggler and the waits the planted ones."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from tests.kineto_traces import Shape
from tests.unit.profiles.test_profiles_summary import reference, run_traces
from worthit.service.cli import main

RANKS = 512
STRAGGLER = 317


def test_512_ranks_map_with_two_jobs_and_combine_to_the_planted_barrier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = run_traces(RANKS, STRAGGLER, scale=1.25, steps=3, layers=1)
    paths = []
    for rank, data in enumerate(traces):
        path = tmp_path / "traces" / f"rank-{rank:03d}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        paths.append(str(path))
    assert main(["profile", "--summary", "--jobs", "2", "-o", str(tmp_path / "run"), *paths]) == 0
    summaries = sorted((tmp_path / "run").glob("*.summary.json"))
    assert len(summaries) == RANKS
    capsys.readouterr()
    assert main(["profile", "--json", *map(str, summaries)]) == 0
    combined = msgspec.json.decode(capsys.readouterr().out)
    slowest, fraction, waits = reference(traces)
    shape = Shape(layers=1)
    planted = round(shape.gemm_ns * 1.25) - shape.gemm_ns + round(shape.elementwise_ns * 1.25) - shape.elementwise_ns
    barrier = combined["barrier"]
    assert barrier["ranks"] == barrier["world_size"] == RANKS
    assert barrier["straggler"] == slowest == STRAGGLER
    assert barrier["steps"] == 2
    assert barrier["wait_fraction"] == pytest.approx(fraction, rel=1e-12)
    assert {r["rank"]: r["wait_ns"] for r in combined["ranks"]} == waits
    assert waits == {r: 0 if r == STRAGGLER else 2 * planted for r in range(RANKS)}
