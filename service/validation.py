"""Strict decoding, and validation messages that name the field: shared by the API, the CLI, the gate and Slack.

No litestar and no database here, so the offline commands (`worthit review`, `worthit gate`) import neither.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from worthit.rules.errors import InvalidInput
from worthit.rules.pointer import from_pointer, to_pointer

__all__ = ["OUT_OF_RANGE", "decode_json", "decode_strict", "path_to_pointer", "validation_problem"]


class _OutOfRange:
    """A JSON number beyond a double's range, kept in place so that conversion reports where it is."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OutOfRange"


OUT_OF_RANGE = _OutOfRange()


def _float_or_marker(text: str) -> float | _OutOfRange:
    value = float(text)
    return OUT_OF_RANGE if math.isinf(value) else value


_decoder = msgspec.json.Decoder()
_locating_decoder = msgspec.json.Decoder(float_hook=_float_or_marker)


def decode_json(body: bytes) -> Any:
    """`body` decoded once, untyped, with a depth limit: nesting deeper than msgspec goes (the interpreter's recursion
    limit, about a thousand levels) is an InvalidInput, never a RecursionError. A number out of a double's range is
    kept as `OUT_OF_RANGE`, for the conversion to report with its path. Malformed JSON raises `msgspec.DecodeError`."""
    try:
        try:
            return _decoder.decode(body)
        except msgspec.ValidationError:
            # Untyped, only a number out of range fails, and its path names no keys (`$[...]`): decode again with a
            # hook that keeps such numbers in place (rare, and as deep as the first attempt got).
            return _locating_decoder.decode(body)
    except RecursionError as exc:  # msgspec stops at its depth limit by raising this
        raise InvalidInput("Expected a JSON body nested a few levels deep, got one nested too deeply", "") from exc


def decode_strict(body: bytes, type_: Any) -> Any:
    """Decode JSON `body` as `type_`, turning a validation error into one that names the field and the value got.

    The body is decoded once (`decode_json`) and converted strictly; an error's value is read from that document, so
    building the message never decodes the body again (a value nested 100,000 deep under `title` is one error)."""
    document = decode_json(body)
    try:
        return msgspec.convert(document, type_, strict=True)
    except msgspec.ValidationError as exc:
        detail, pointer = validation_problem(str(exc), document)
        raise InvalidInput(detail, pointer) from exc
    except RecursionError as exc:  # pragma: no cover - the document is no deeper than its decoding allowed
        raise InvalidInput("Expected a JSON body nested a few levels deep, got one nested too deeply", "") from exc


_AT = re.compile(r"^(?P<message>.*?)(?: - at `(?P<path>\$[^`]*)`)?$", re.DOTALL)
_PATH_PART = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def path_to_pointer(path: str) -> str:
    """`$.flags.barrier.ranks` → `/flags/barrier/ranks`; `$.breakdown[2].ms` → `/breakdown/2/ms`."""
    return to_pointer(name or index for name, index in _PATH_PART.findall(path[1:]))


def _lookup(document: Any, pointer: str) -> Any:
    for part in from_pointer(pointer):
        if isinstance(document, dict):
            document = document.get(part, ...)
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


def validation_problem(message: str, document: Any = ...) -> tuple[str, str]:
    """A msgspec validation message rewritten to name the field and the value got, and its JSON pointer.

    `document`: the decoded body the message is about, when there is one; the value got is read from it."""
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
        pointer += to_pointer([unknown.group(1)])
        return f"Unknown field `{unknown.group(1)}`; expected only the documented fields - at `{path}`", pointer
    missing = re.match(r"Object missing required field `([^`]+)`", text)
    if missing:
        pointer += to_pointer([missing.group(1)])
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
    value: Any = _lookup(document, pointer) if document is not ... and pointer else ...
    if value is OUT_OF_RANGE:
        return f"Expected `{field}` to be a finite number, got a number out of range - at `{path}`", pointer
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
