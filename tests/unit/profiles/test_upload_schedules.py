"""An upload's parse builds the schedule a stored what-if replays: one per trace, within the stored op cap, each
read under a budget of its own; other formats and traces past the cap have none, and the notes say why."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import pytest

from tests.replay_traces import TraceBuilder
from worthit.rules.profiles.kineto import read_schedule
from worthit.rules.profiles.kineto.stored_schedule import decode_schedule
from worthit.service.cli import main
from worthit.service.profiles import parsing
from worthit.service.profiles.parsing import parse_with_schedules
from worthit.service.profiles.worker import Job, parse_in_child


def _trace(rank: int | None = None) -> bytes:
    b = TraceBuilder(rank=rank, world_size=2 if rank is not None else None)
    b.launch(10, "A", 15, 100)
    b.launch(20, "B", 115, 200)
    b.call("cudaDeviceSynchronize", 40, 330)
    b.step(1, 0, 375)
    return b.bytes()


def test_each_trace_of_an_upload_gets_its_schedule_in_order() -> None:
    files = [gzip.compress(_trace(0)), _trace(1)]
    breakdown, schedules, note = parse_with_schedules(files, names=["r0.json.gz", "r1.json"])
    assert note is None
    assert breakdown.device_timeline
    assert schedules is not None
    assert [(s.file, s.rank, list(s.op_name)) for s in schedules] == [
        ("r0.json.gz", 0, ["A", "B"]),
        ("r1.json", 1, ["A", "B"]),
    ]
    assert schedules[1] == read_schedule(_trace(1), "r1.json")


def test_a_profile_of_another_format_has_no_schedule_and_no_note() -> None:
    csv = b"Kernel_Name,Start_Timestamp,End_Timestamp\nk,0,100\n"
    _, schedules, note = parse_with_schedules([csv])
    assert (schedules, note) == (None, None)


def test_a_schedule_past_the_cap_is_not_stored_and_the_note_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing, "storable", lambda s: len(s.op_start) <= 1)
    _, schedules, note = parse_with_schedules([_trace()], names=["t.json"])
    assert schedules is None
    assert note is not None
    assert "t.json has 2 device ops, more than a stored schedule holds (2,000,000)" in note
    assert "--what-if" in note


def test_the_schedule_is_not_refused_for_the_objects_the_parse_counted() -> None:
    """The schedule reads every object again: a trace within the event budget once is within it for both reads."""
    data = _trace()
    objects = data.count(b"{")
    _, schedules, note = parse_with_schedules([data], max_events=objects)
    assert note is None
    assert schedules is not None
    assert len(schedules[0].op_start) == 2


def test_the_worker_answers_the_encoded_schedules_beside_the_breakdown() -> None:
    data = gzip.compress(_trace())
    job = Job(
        format=None,
        steps=None,
        names=["t.json.gz"],
        sizes=[len(data)],
        max_inflated_bytes=1 << 20,
        max_events=10_000,
        max_names=10_000,
        max_stored_bytes=1 << 20,
        max_schedule_ops=2,
    )
    parsed = parse_in_child([data], job, memory_limit=1 << 30, abandoned=threading.Event())
    assert [s.ops for s in parsed.schedules] == [2]
    assert decode_schedule(parsed.schedules[0].data) == read_schedule(_trace(), "t.json.gz")


def test_rank_summaries_uploaded_as_files_have_no_schedule_and_no_note(tmp_path: Path) -> None:
    """A summary keeps no schedule (its trace stayed where it was made): the run is stored without one, silently,
    as a profile of another format is."""
    trace = tmp_path / "t.json"
    trace.write_bytes(_trace())
    summary = tmp_path / "t.summary.json"
    assert main(["profile", "--summary", str(trace), "-o", str(summary)]) == 0
    breakdown, schedules, note = parse_with_schedules([summary.read_bytes()])
    assert breakdown.device_timeline
    assert (schedules, note) == (None, None)
