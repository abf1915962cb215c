"""Progress on long work: bytes or ranks done, the rate and the time left on a terminal; nothing with --json or
into a pipe."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.unit.profiles.test_profiles_summary import run_traces
from worthit.service.cli import main
from worthit.service.present import terminal
from worthit.service.present.terminal import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_done_total_rate_and_time_left() -> None:
    screen = Terminal()
    progress = Progress("ranks", 4, "ranks", stream=screen)
    for _ in range(4):
        progress.advance()
    progress.close()
    last = screen.getvalue().split("\r")[-1]
    assert last.startswith("ranks [##############################] 4/4 ranks, ")
    assert "ranks/s" in last
    assert "s left" in last
    assert "done in" in last
    reading = Progress("reading", 10**9, "bytes", stream=screen)
    reading.advance(250 * 10**6)
    assert "250/1,000 MB" in reading.line(reading.started + 5)
    assert "50.0 MB/s,   15 s left" in reading.line(reading.started + 5)


def test_quiet_into_a_pipe_or_when_told() -> None:
    pipe = io.StringIO()
    progress = Progress("ranks", 2, "ranks", stream=pipe)
    progress.advance(2)
    progress.close()
    screen = Terminal()
    quiet = Progress("ranks", 2, "ranks", show=False, stream=screen)
    quiet.advance(2)
    quiet.close()
    assert pipe.getvalue() == screen.getvalue() == ""


def test_the_cli_shows_ranks_on_a_terminal_and_nothing_with_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = []
    for rank, data in enumerate(run_traces(3, 0)):
        path = tmp_path / f"rank-{rank}.json"
        path.write_bytes(data)
        paths.append(str(path))
    screen = Terminal()
    monkeypatch.setattr(terminal.sys, "stderr", screen)
    assert main(["profile", *paths]) == 0
    assert "ranks [" in screen.getvalue()
    assert "3/3 ranks" in screen.getvalue()
    screen.seek(0)
    screen.truncate()
    assert main(["profile", "--json", *paths]) == 0
    assert screen.getvalue() == ""
    capsys.readouterr()
