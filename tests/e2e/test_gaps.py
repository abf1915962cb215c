"""Issue #14 item 8, the smaller gaps, end to end: start-up errors, readiness under failing writes, Slack replays,
idle and slow connections."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import POSTGRES_URL, postgres_answers, worthit

pytestmark = pytest.mark.e2e


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("WORTHIT_")}


def _unusable_databases(tmp_path: Path) -> list[tuple[str, str]]:
    """(database URL, the words its one-line cause must contain)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    cases = [
        (f"sqlite:///{blocker / 'worthit.db'}", "unable to open database file"),
        ("postgresql://postgres:secret-password@127.0.0.1:1/test", "Connect call failed"),
    ]
    if postgres_answers():
        role = POSTGRES_URL.replace("postgres@", "no_such_role@", 1)
        cases.append((role, 'role "no_such_role" does not exist'))
    return cases


@pytest.mark.parametrize("command", [["migrate"], ["serve"], ["serve", "--no-migrate"], ["token", "list"]])
def test_an_unusable_database_is_one_line_and_exit_2(command: list[str], tmp_path: Path) -> None:
    for url, cause in _unusable_databases(tmp_path):
        result = worthit(*command, "--database", url, env=_environment())
        assert result.returncode == 2, (url, result.stderr)
        assert "Traceback" not in result.stderr
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("worthit: cannot use the database ")
        assert cause in lines[0]
        assert "secret-password" not in lines[0], "a password is never printed"


def test_a_setting_that_does_not_read_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = _environment() | {"WORTHIT_TRUSTED_PROXIES": "10.0.0.0/8, proxy"}
    result = worthit("serve", "--database", str(tmp_path / "worthit.db"), env=env)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "worthit: Expected `trusted_proxies` to list addresses or CIDRs (`10.0.0.0/8, 127.0.0.1`), got 'proxy'"
    ]
