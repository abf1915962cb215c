"""Every copy-pasteable ```sh example of the README, pasted in order into one shell against a live server, works.

The server the examples expect (`make serve`, with Slack's local secret) is started by the test on a free port,
on `./worthit.db` of a fresh directory that holds only links to `.venv/` and `tests/`, as a fresh clone after `make`
would. `curl` and `.venv/bin/worthit` are wrapped to record every HTTP status and exit code: no request may fail
(but the one the README shows failing, a 422), and no command may exit 2 ("cannot run").
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from tests.harness import ROOT, start_server

pytestmark = pytest.mark.e2e

# Blocks that need what a test cannot give: a container runtime, a cluster, GitHub's event file, or the commands
# that start the server and the whole suite (the test starts the server itself and is part of the suite).
NOT_HERE = ("docker compose", "kubectl apply", '--event "$GITHUB_EVENT_PATH"', "make test ")
SERVER_LINES = re.compile(r"^(?:WORTHIT_\w+=\S+ )?make serve.*$|^# in another terminal:$", re.MULTILINE)
DOCUMENTED_FAILURES = 1  # `{"p": 1.7, "k": 10}` is shown answering 422


def readme_blocks(text: str) -> list[str]:
    """The ```sh blocks of the README, in order, minus those that cannot run here and the server-starting lines."""
    blocks = re.findall(r"^```sh\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    return [SERVER_LINES.sub("", block) for block in blocks if not any(marker in block for marker in NOT_HERE)]


def test_readme_blocks_are_found() -> None:
    blocks = readme_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 10
    assert any("reevaluate" in block for block in blocks)
    assert not any("make serve" in block for block in blocks)


def test_the_readme_examples_work_pasted_in_order(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    (clone / ".venv" / "bin").mkdir(parents=True)
    (clone / "tests").symlink_to(ROOT / "tests")
    log = tmp_path / "calls.log"
    wrapper = clone / ".venv" / "bin" / "worthit"
    wrapper.write_text(
        f'#!/bin/sh\n"{ROOT / ".venv" / "bin" / "worthit"}" "$@"\ncode=$?\necho "worthit $1 $code" >> "{log}"\n'
        "exit $code\n"
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    server = start_server(
        f"sqlite:///{clone / 'worthit.db'}",
        tmp_path / "server.log",
        env={"WORTHIT_SLACK_SIGNING_SECRET": "local-test-secret"},
    )
    try:
        address = server.url.removeprefix("http://")
        script = "\n".join(
            block.replace("localhost:8000", address)
            for block in readme_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
        )
        prelude = (
            f'curl() {{ command curl --write-out \'%{{stderr}}curl %{{http_code}}\\n\' "$@" 2>>"{log}"; }}\n'
            'echo() { builtin echo "$@"; }\n'
        )
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("WORTHIT_", "GITHUB_"))}
        result = subprocess.run(
            ["bash", "-c", prelude + script],
            cwd=clone,
            capture_output=True,
            text=True,
            timeout=300,
            env=environment,
            check=False,
        )
    finally:
        server.stop()
    calls = log.read_text().splitlines()
    statuses = [int(line.split()[1]) for line in calls if line.startswith("curl ")]
    exits = [line for line in calls if line.startswith("worthit ")]
    failed = [status for status in statuses if status >= 400]
    assert len(statuses) >= 15, result.stdout + result.stderr
    assert failed == [422] * DOCUMENTED_FAILURES, (calls, result.stdout[-3000:])
    assert not [line for line in exits if line.endswith(" 2")], (exits, result.stderr[-3000:])
    assert '"changed":true' in result.stdout.replace(" ", "")
    assert '"before":"fund","after":"decline"' in result.stdout.replace(" ", "")
    assert re.search(r"\"realized_k\":\s*6\.0", result.stdout), result.stdout[-3000:]


def test_the_first_screen_goes_from_clone_to_a_decision(tmp_path: Path) -> None:
    """README's first 40 lines: the two make commands, an offline review of three lines of YAML whose output is shown
    as the command prints it, and a curl that stores a decision."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:40]
    screen = "\n".join(lines)
    assert "make serve" in screen
    assert "make test" in screen
    assert re.search(r"^curl .*localhost:8000/v1/decisions", screen, re.MULTILINE)
    [review] = [
        block for block in re.findall(r"^```sh\n(.*?)^```$", screen, re.MULTILINE | re.DOTALL) if "review" in block
    ]
    yaml_lines = review.split("<<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0].splitlines()
    assert len(yaml_lines) == 3
    [shown] = re.findall(r"^```text\n(.*?)^```$", screen, re.MULTILINE | re.DOTALL)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "worthit").symlink_to(ROOT / ".venv" / "bin" / "worthit")
    result = subprocess.run(
        ["bash", "-c", review], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(shown), (shown, result.stdout)
