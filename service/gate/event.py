"""Reading the pull request description: from a GitHub event file, or from a file or standard input."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from worthit.service.gate.errors import UsageError
from worthit.service.offline import regular_file


def body_from_event(path: str) -> str:
    """`pull_request.body` of a GitHub event file (`$GITHUB_EVENT_PATH`); `""` when the body is `null`."""
    regular_file(path, "the event file ")
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
    if path != "-":
        regular_file(path)
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return raw.decode("utf-8", errors="replace")


def pull_request_detail(path: str) -> dict[str, str]:
    """Which pull request an event is about, as a stored decision's `source_detail`: `repository` (owner/name),
    `pull_request` (its number) and `head_sha`, each when the event carries it. The event was read already
    (`body_from_event`), so an unreadable one here has no detail rather than an error."""
    try:
        event = msgspec.json.decode(Path(path).read_bytes())
    except (OSError, msgspec.DecodeError):
        return {}
    pull_request = event.get("pull_request") if isinstance(event, dict) else None
    if not isinstance(pull_request, dict):
        return {}
    repository, head = event.get("repository"), pull_request.get("head")
    found = {
        "repository": repository.get("full_name") if isinstance(repository, dict) else None,
        "pull_request": pull_request.get("number"),
        "head_sha": head.get("sha") if isinstance(head, dict) else None,
    }
    return {key: str(value)[:200] for key, value in found.items() if isinstance(value, str | int) and str(value)}
