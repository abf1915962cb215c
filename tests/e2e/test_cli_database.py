"""The database commands (`token`, `migrate`) report what failed, in one line: a name taken, a full terminal, a
database that cannot be used — each as itself, never one as another."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, worthit
from worthit.service.cli import main

pytestmark = pytest.mark.e2e


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("WORTHIT_")}


def test_creating_a_token_under_a_taken_name_is_one_line_and_exit_2(database_url: str) -> None:
    first = worthit("token", "create", "--name", "ci", "--scope", "write", "--database", database_url)
    assert first.returncode == 0, first.stderr
    again = worthit("token", "create", "--name", "ci", "--scope", "read", "--database", database_url)
    assert again.returncode == 2
    assert again.stdout == ""
    assert again.stderr.splitlines() == ["worthit: A token named 'ci' exists (active or revoked); choose another name"]
    # A revoked token keeps its name: a log line naming a token names one token.
    assert worthit("token", "revoke", "ci", "--database", database_url).returncode == 0
    revoked = worthit("token", "create", "--name", "ci", "--scope", "write", "--database", database_url)
    assert revoked.returncode == 2
    assert "A token named 'ci' exists" in revoked.stderr
    listed = worthit("token", "list", "--database", database_url)
    assert [line.split("\t")[:3] for line in listed.stdout.splitlines()] == [["ci", "write", "revoked"]]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("unbuffered", ["", "1"], ids=["buffered", "unbuffered"])
def test_a_token_that_cannot_be_shown_says_so_not_that_the_database_failed(unbuffered: str, sqlite_url: str) -> None:
    env = _environment() | {"PYTHONUNBUFFERED": unbuffered}
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "worthit.service.cli",
                "token",
                "create",
                "--name",
                "ci",
                "--scope",
                "read",
                "--database",
                sqlite_url,
            ],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "created token 'ci' with scope read; it is shown once, below",
        "worthit: token 'ci' was created but could not be written to standard output (No space left on device); "
        "revoke it (worthit token revoke ci) and create another",
    ]
    listed = worthit("token", "list", "--database", sqlite_url)
    assert [line.split("\t")[:3] for line in listed.stdout.splitlines()] == [["ci", "read", "active"]]


def test_a_host_that_does_not_resolve_is_a_database_that_cannot_be_used() -> None:
    url = "postgresql://postgres@no-such-host.invalid:5432/test"
    result = worthit("token", "list", "--database", url, env=_environment())
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"worthit: cannot use the database {url}: ")


class _FullTerminal(io.StringIO):
    """A standard output that takes nothing, as a full disk or a closed pipe behind it would."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_an_oserror_that_is_not_the_databases_is_reported_as_itself(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`token list` on a database that answers, writing to an output that fails: the output's error, not "cannot
    use the database"."""
    assert worthit("token", "create", "--name", "ci", "--scope", "read", "--database", sqlite_url).returncode == 0
    monkeypatch.setattr(sys, "stdout", _FullTerminal())
    assert main(["token", "list", "--database", sqlite_url]) == 2
    assert capsys.readouterr().err.splitlines() == ["worthit token: No space left on device"]
