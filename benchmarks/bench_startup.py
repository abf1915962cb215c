"""Start-up: `worthit --version` and `worthit review proposal.json` as a user runs them, a whole process each.

    python benchmarks/bench_startup.py [--runs 9]

The baseline is the same interpreter doing nothing (`python -c pass`), measured in the same run: what no command can
go below. The medians of `--runs` runs each, so one busy moment of a shared machine does not decide a figure. Each
command runs once first, unmeasured, with bytecode caching on (PYTHONDONTWRITEBYTECODE dropped), as on a user's
machine: `pip install` compiles a wheel's modules, and Python caches a checkout's after the first run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PROPOSAL = '{"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}'
# The figure each command is held to: a CLI that starts at once.
TARGET_S = 0.25


@dataclass
class Startup:
    command: str
    seconds: float
    runs: int


def _median_seconds(argv: list[str], runs: int, cwd: Path) -> float:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(argv, cwd=cwd, capture_output=True, check=True, env=env)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, capture_output=True, check=True, env=env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(runs: int = 9) -> tuple[list[Startup], float]:
    """The commands' medians and the bare interpreter's, in seconds."""
    worthit = str(Path(sys.executable).with_name("worthit"))
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        (cwd / "proposal.json").write_text(PROPOSAL, encoding="utf-8")
        bare = _median_seconds([sys.executable, "-c", "pass"], runs, cwd)
        figures = [
            Startup(" ".join(["worthit", *argv]), _median_seconds([worthit, *argv], runs, cwd), runs)
            for argv in (["--version"], ["review", "proposal.json"])
        ]
    return figures, bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    figures, bare = measure(args.runs)
    for figure in figures:
        print(f"{figure.command}: {figure.seconds * 1000:.0f} ms (python -c pass {bare * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
