"""msgspec's validation messages rewritten to name the field, the value got and its JSON pointer (RFC 6901).

Pure (msgspec only): the HTTP problems (service/http/problems.py), the strict body codec and the `/worthit` parser
share it, and the Socket Mode bot imports the parser without loading the HTTP stack or the database.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

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
