"""`worthit profile TRACE… --what-if PATTERN=K`: the replay's figures as a table and under `what_if` in JSON."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from tests.replay_traces import TraceBuilder
from worthit.service.cli import main


def _trace(tmp_path: Path, name: str = "trace.json") -> Path:
    """Steps 1 and 2, each: A 5-105 then B 105-305 after it on one stream, a device sync (ends 310), step end 315."""
    b = TraceBuilder()
    for n, t0 in ((1, 0), (2, 1000)):
        b.launch(t0, "A", t0 + 5, 100)
        b.launch(t0 + 10, "B", t0 + 105, 200)
        b.call("cudaDeviceSynchronize", t0 + 20, 290)
        b.step(n, t0, t0 + 315)
    path = tmp_path / name
    path.write_bytes(b.bytes())
    return path


def test_the_json_has_every_figure_under_what_if(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """B 2x: each step 100 µs shorter, as Amdahl says; both steps (the last is complete) and the target's phases."""
    assert main(["profile", str(_trace(tmp_path)), "--what-if", "B=2", "--what-if", "kind:copy=3", "--json"]) == 2
    assert "kind:copy" in capsys.readouterr().err  # no copy in the trace: refused, naming the target
    assert main(["profile", str(_trace(tmp_path)), "--what-if", "B=2", "--json", "--steps", "all"]) == 0
    doc = msgspec.json.decode(capsys.readouterr().out)["what_if"]
    assert doc["targets"] == [{"pattern": "B", "k": 2.0, "phases": ["B"], "device_ns": 400_000}]
    assert (doc["measured_ns"], doc["replayed_ns"], doc["predicted_ns"], doc["amdahl_ns"]) == (
        315_000,
        315_000,
        215_000,
        215_000,
    )
    assert doc["lost_ns"] == {"overlap": 0, "launch": 0, "sync": 0, "ranks": 0}
    assert [(s["name"], s["rank"], s["measured_ns"], s["predicted_ns"], s["amdahl_ns"]) for s in doc["steps"]] == [
        ("ProfilerStep#1", None, 315_000, 215_000, 215_000),
        ("ProfilerStep#2", None, 315_000, 215_000, 215_000),
    ]
    assert isinstance(doc["notes"], list)


def test_the_table_prints_each_step_and_the_losses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", str(_trace(tmp_path)), "--what-if", "A=2", "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "ProfilerStep#2" in out
    assert "ProfilerStep#1 " not in out
    assert "Amdahl's saving 0.050 ms a step; the replay's 0.050 ms." in out


@pytest.mark.parametrize("what_if", ["B", "B=0", "kind:nothing=2"])
def test_a_malformed_what_if_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], what_if: str) -> None:
    assert main(["profile", str(_trace(tmp_path)), "--what-if", what_if]) == 2
    assert "expected" in capsys.readouterr().err


def test_two_ranks_name_each_step_s_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 0 computes 5-205 then all-reduces until 255, rank 1 computes 5-105 and waits in the all-reduce; both
    steps 0-265. Rank 0's kernel 4x faster: 100 µs a step (rank 1 then sets it), Amdahl's 150."""
    paths = []
    for rank, (name, dur) in enumerate((("straggler_kernel", 200), ("other_kernel", 100))):
        b = TraceBuilder(rank=rank, world_size=2)
        b.launch(0, name, 5, dur)
        b.launch(10, "ncclKernel_AllReduce_RING_LL_Sum_float", 5 + dur, 250 - dur)
        b.call("cudaDeviceSynchronize", 20, 240)
        b.step(1, 0, 265)
        path = tmp_path / f"rank-{rank}.json"
        path.write_bytes(b.bytes())
        paths.append(str(path))
    assert main(["profile", *paths, "--what-if", "straggler*=4", "--json"]) == 0
    doc = msgspec.json.decode(capsys.readouterr().out)["what_if"]
    assert [(s["rank"], s["predicted_ns"]) for s in doc["steps"]] == [(0, 165_000), (1, 165_000)]
    assert (doc["predicted_ns"], doc["amdahl_ns"]) == (165_000, 115_000)
    assert doc["lost_ns"] == {"overlap": 0, "launch": 0, "sync": 0, "ranks": 50_000}


@pytest.mark.parametrize("extra", [["--upload", "http://127.0.0.1:9"], ["--format", "nsys_stats"]])
def test_what_if_refuses_what_it_cannot_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    assert main(["profile", str(_trace(tmp_path)), "--what-if", "A=2", *extra]) == 2
    assert "--what-if" in capsys.readouterr().err


def test_a_summary_with_what_if_carries_the_ranks_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--summary --what-if B=2``: the summary keeps the rank's replay (each step 315 µs, 215 with B 2x) and
    ``worthit profile SUMMARY`` prints it under ``what_if``."""
    out = tmp_path / "trace.summary.json"
    assert main(["profile", "--summary", str(_trace(tmp_path)), "--what-if", "B=2", "-o", str(out)]) == 0
    summary = msgspec.json.decode(out.read_bytes())
    assert summary["version"] == 2
    assert [(s["measured_ns"], s["predicted_ns"]) for s in summary["what_if"]["steps"]] == [(315_000, 215_000)] * 2
    capsys.readouterr()
    assert main(["profile", "--json", str(out)]) == 0
    joined = msgspec.json.decode(capsys.readouterr().out)["what_if"]
    assert (joined["measured_ns"], joined["predicted_ns"], joined["amdahl_ns"]) == (315_000, 215_000, 215_000)
