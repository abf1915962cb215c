"""What every command shares: one set of exit codes, the error that means "cannot run", and one policy loader.

Exit codes, the same for every command, `--json` or not: 0 the verdict (or the plan, the portfolio) passes, 1 it
fails the gate (a failing verdict, a plan that cannot reach its target, a malformed worthit block), 2 the command
cannot run (unreadable or invalid input, a bad policy file, an unknown rule, a server that cannot be reached).
"""

from __future__ import annotations

import os
import stat
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from worthit.rules.policy import Policy

__all__ = ["EXIT_FAIL", "EXIT_PASS", "EXIT_USAGE", "CannotRun", "Exit", "load_policy", "regular_file"]


class Exit(IntEnum):
    PASS = 0
    FAIL = 1
    CANNOT_RUN = 2


EXIT_PASS, EXIT_FAIL, EXIT_USAGE = Exit.PASS, Exit.FAIL, Exit.CANNOT_RUN


class CannotRun(Exception):
    """The command cannot run at all (exit 2): its setup or input, not the proposal's verdict."""


def load_policy(path: str | None) -> Policy:
    """The bundled default policy, or the TOML file at `path`; `CannotRun` names the file when it fails."""
    from worthit.rules.errors import PolicyError
    from worthit.rules.policy import default_policy, parse_policy

    if path is None:
        return default_policy()
    regular_file(path, "the policy file ")
    try:
        return parse_policy(Path(path).read_bytes())
    except OSError as exc:
        raise CannotRun(f"cannot read the policy file {path}: {exc.strerror or exc}") from exc
    except PolicyError as exc:
        raise CannotRun(f"the policy file {path} is malformed: {exc}") from exc


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def regular_file(path: str, what: str = "") -> None:
    """`CannotRun` naming `path` unless it is a regular file (or a link to one), checked before it is opened: a FIFO
    with no writer blocks the open, a device or a socket reads forever. A path that cannot be looked at passes, so
    reading it says why (no such file, permission). Standard input (`-`, where a command takes it) is not a path."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    raise CannotRun(f"cannot read {what}{path}: {kind}, not a regular file")
