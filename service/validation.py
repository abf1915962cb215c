"""Strict decoding, and validation messages that name the field: shared by the API, the CLI, the gate and Slack.

No litestar and no database here, so the offline commands (`worthit review`, `worthit gate`) import neither.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from worthit.rules.errors import InvalidInput


def decode_strict(body: bytes, type_: Any) -> Any:
    """Decode JSON `body` as `type_`, turning a validation error into one that names the field and the value got."""
    try:
        return msgspec.json.decode(body, type=type_, strict=True)
    except msgspec.ValidationError as exc:
        detail, pointer = validation_problem(str(exc), body)
        raise InvalidInput(detail, pointer) from exc
    except RecursionError as exc:  # msgspec stops at its own depth limit, by raising this
        raise InvalidInput("Expected a JSON body nested a few levels deep, got one nested too deeply", "") from exc


_AT = re.compile(r"^(?P<message>.*?)(?: - at `(?P<path>\$[^`]*)`)?$", re.DOTALL)
_PATH_PART = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def path_to_pointer(path: str) -> str:
    """`$.flags.barrier.ranks` → `/flags/barrier/ranks`; `$.breakdown[2].ms` → `/breakdown/2/ms`."""
    parts = [name or index for name, index in _PATH_PART.findall(path[1:])]
    return "".join(f"/{part.replace('~', '~0').replace('/', '~1')}" for part in parts)


def _lookup(document: Any, pointer: str) -> Any:
    for part in pointer.split("/")[1:]:
        if isinstance(document, dict):
            document = document.get(part.replace("~1", "/").replace("~0", "~"), ...)
        elif isinstance(document, list) and part.isdigit() and int(part) < len(document):
            document = document[int(part)]
        else:
            return ...
        if document is ...:
            return ...
    return document


def _shown(value: Any) -> str:
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def validation_problem(message: str, body: bytes | None = None) -> tuple[str, str]:
    """A msgspec validation message rewritten to name the field and the value got, and its JSON pointer."""
    match = _AT.match(message)
    if match is None:  # pragma: no cover - the pattern matches every string
        return message, ""
    text, path = match.group("message"), match.group("path") or "$"
    pointer = path_to_pointer(path)
    named = re.match(r"Expected `(\w+)` of length", text)
    if named and not pointer:
        # A cross-field check (`__post_init__`) reports at the root; its message names the field it is about.
        pointer = f"/{named.group(1)}"
    parts = pointer.split("/")[1:]
    field = parts[-1] if parts else ""
    if field.isdigit() and len(parts) > 1:
        field = f"{parts[-2]}[{field}]"  # an item of a list: name the list
    unknown = re.match(r"Object contains unknown field `([^`]+)`", text)
    if unknown:
        pointer = f"{pointer}/{unknown.group(1)}"
        return f"Unknown field `{unknown.group(1)}`; expected only the documented fields - at `{path}`", pointer
    missing = re.match(r"Object missing required field `([^`]+)`", text)
    if missing:
        pointer = f"{pointer}/{missing.group(1)}"
        return f"Expected `{missing.group(1)}`, got nothing - at `{path}`", pointer
    named_field = re.match(
        r"Expected `([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)` (?:large|small) enough|"
        r"Expected `(breakdown)` phase times",
        text,
    )
    if named_field and not parts:
        # A cross-field check of the whole body (`__post_init__`) names its field in the message: point at it.
        pointer = "/" + (named_field.group(1) or named_field.group(2)).replace(".", "/")
        return f"{text} - at `{path}`", pointer
    value: Any = ...
    if body is not None and pointer:
        try:
            value = _lookup(msgspec.json.decode(body), pointer)
        except msgspec.DecodeError:
            value = ...
    if field and not field.isdigit():  # a bare index names nothing a reader knows
        constraint = re.match(r"Expected `[^`]+` (?P<rest>(?:[<>]=?|of length|matching).*)$", text)
        if constraint:
            text = f"Expected `{field}` {constraint.group('rest')}"
        elif text.startswith("Expected `"):
            text = f"Expected `{field}` to be {text[len('Expected ') :]}"
        elif text.startswith("Invalid enum value"):
            text = f"Expected `{field}` to be one of the documented values"
        elif text == "Number out of range":
            text = f"Expected `{field}` to be a finite number, got a number out of range"
    if value is not ...:
        text = re.sub(r", got `[^`]+`$", "", text)
        if ", got" not in text:
            text = f"{text}, got {_shown(value)}"
    return f"{text} - at `{path}`", pointer
