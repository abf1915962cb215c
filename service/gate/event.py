"""Reading the pull request description: from a GitHub event file, or from a file or standard input."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from worthit.service.gate.errors import UsageError


def body_from_event(path: str) -> str:
    """`pull_request.body` of a GitHub event file (`$GITHUB_EVENT_PATH`); `""` when the body is `null`."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the event file {path}: {exc.strerror or exc}") from exc
    try:
        event = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise UsageError(f"expected a GitHub event (JSON) in {path}: {exc}") from exc
    except RecursionError as exc:  # msgspec's depth limit; no event GitHub writes comes near it
        raise UsageError(f"expected a GitHub event (JSON) in {path}, got one nested too deeply") from exc
    pull_request = event.get("pull_request") if isinstance(event, dict) else None
    if not isinstance(pull_request, dict):
        raise UsageError(
            f"{path} is not a pull_request event (no `pull_request` object); run the gate on `pull_request` events"
        )
    body = pull_request.get("body")
    if body is None:
        return ""
    if not isinstance(body, str):
        raise UsageError(f"expected `pull_request.body` to be a string or null in {path}, got {type(body).__name__}")
    return body


def body_from_file(path: str) -> str:
    """A description from a Markdown file, or from standard input for `-`."""
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return raw.decode("utf-8", errors="replace")
