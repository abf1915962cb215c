"""Strict decoding, and validation messages that name the field: shared by the API, the CLI, the gate and Slack.

No litestar and no database here, so the offline commands (`worthit review`, `worthit gate`) import neither.
"""

from __future__ import annotations

import difflib
import math
import re
from functools import cache
from typing import Any

import msgspec
import msgspec.inspect as mi

from worthit.rules.errors import InvalidInput
from worthit.rules.pointer import from_pointer, to_pointer
from worthit.service import units

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
        detail, pointer = validation_problem(str(exc), document, type_)
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


@cache
def _info(type_: Any) -> mi.Type:
    return mi.type_info(type_)


def _type_at(info: mi.Type, parts: list[str]) -> mi.Type | None:
    """The type of the field at `parts` (a JSON pointer's parts) within `info`, through unions, lists and
    constraints; None where the path leads nowhere the type knows."""
    for part in parts:
        info = _unwrapped(info, struct=True)
        if isinstance(info, mi.StructType):
            found = next((field.type for field in info.fields if field.encode_name == part), None)
            if found is None:
                return None
            info = found
        elif isinstance(info, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType) and part.isdigit():
            info = info.item_type
        elif isinstance(info, mi.DictType):
            info = info.value_type
        else:
            return None
    return info


def _unwrapped(info: mi.Type, *, struct: bool = False) -> mi.Type:
    """`info` without its constraints, and of a union the one member a path or an enum's values can be about."""
    while isinstance(info, mi.Metadata):
        info = info.type
    if isinstance(info, mi.UnionType):
        wanted = (mi.StructType, mi.ListType) if struct else (mi.LiteralType, mi.EnumType)
        for member in info.types:
            member = _unwrapped(member, struct=struct)
            if isinstance(member, wanted):
                return member
    return info


def _choices(info: mi.Type | None) -> list[str]:
    """The values a field of `info`'s type may take, when they are a list (a Literal or an Enum)."""
    if info is None:
        return []
    info = _unwrapped(info)
    if isinstance(info, mi.LiteralType):
        return [str(value) for value in info.values]
    if isinstance(info, mi.EnumType):
        return [str(member.value) for member in info.cls]
    return []


def _takes_numbers(info: mi.Type | None) -> bool:
    """Whether a value of `info`'s type may be a number (a union of a number and a Literal, say)."""
    while isinstance(info, mi.Metadata):
        info = info.type
    if info is None:
        return False
    members = info.types if isinstance(info, mi.UnionType) else (info,)
    return any(isinstance(_unwrapped(member), mi.FloatType | mi.IntType) for member in members)


# A field worthit sets itself (a proposal's replay of its profile's trace): no message offers it to a client.
_SET_BY_WORTHIT = frozenset({"replay"})


def _field_names(info: mi.Type | None) -> list[str]:
    """The fields of the object `info` is, when it is one, less those worthit sets itself."""
    info = None if info is None else _unwrapped(info, struct=True)
    if not isinstance(info, mi.StructType):
        return []
    return [field.encode_name for field in info.fields if field.encode_name not in _SET_BY_WORTHIT]


def _listed(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _near(word: str, names: list[str]) -> str:
    close = difflib.get_close_matches(word.lower(), names, n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else ""


def _unknown_field(name: str, parts: list[str], type_: Any) -> str:
    """What to say of a field the object at `parts` does not have: the nearest name, and the names it has."""
    names = _field_names(_type_at(_info(type_), parts)) if type_ is not None else []
    hint = _near(name, names)
    key = units.key_of(name) if not parts and not hint else None
    if key is not None:  # a name another surface accepts: say the field it stands for
        hint = f"did you mean `{'.'.join(key.path)}`?"
    listed = f"The fields here: {_listed(names)}" if names else "Expected only the documented fields"
    return f"Unknown field `{name}`; {hint + ' ' if hint else ''}{listed}"


def _required(name: str, parts: list[str]) -> str:
    """What to say of a required field left out: that it is required, and what it is."""
    key = next((key for key in units.KEYS.values() if list(key.path) == parts), None)
    return f"`{name}` is required" + (f" ({key.expects})" if key else "")


def validation_problem(message: str, document: Any = ..., type_: Any = None) -> tuple[str, str]:
    """A msgspec validation message rewritten to name the field and the value got, and its JSON pointer.

    `document`: the decoded body the message is about, when there is one; the value got is read from it. `type_`:
    the type it was converted to, when known: an unknown field or value is then answered with the nearest name and
    the names allowed."""
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
        detail = _unknown_field(unknown.group(1), parts, type_)
        pointer += to_pointer([unknown.group(1)])
        return f"{detail} - at `{path}`", pointer
    missing = re.match(r"Object missing required field `([^`]+)`", text)
    if missing:
        pointer += to_pointer([missing.group(1)])
        return f"{_required(missing.group(1), [*parts, missing.group(1)])} - at `{path}`", pointer
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
    near = ""
    if value is OUT_OF_RANGE:
        return f"Expected `{field}` to be a finite number, got a number out of range - at `{path}`", pointer
    if field and not field.isdigit():  # a bare index names nothing a reader knows
        constraint = re.match(r"Expected `[^`]+` (?P<rest>(?:[<>]=?|of length|matching).*)$", text)
        if constraint:
            text = f"Expected `{field}` {constraint.group('rest')}"
        elif types := re.match(r"Expected `(?P<types>[^`]+)`(?P<rest>.*)$", text, re.DOTALL):
            text = f"Expected `{field}` to be {_in_words(types['types'])}{types['rest']}"
        elif text.startswith("Invalid enum value"):
            choices = _choices(_type_at(_info(type_), parts)) if type_ is not None else []
            got = _lookup(document, pointer) if document is not ... else ...
            near = _near(got, choices) if isinstance(got, str) else ""
            listed = f"one of {_listed(choices)}" if choices else "one of the documented values"
            if type_ is not None and _takes_numbers(_type_at(_info(type_), parts)):
                listed = f"a number or {listed}"  # `k`: a number, or `inf`
            text = f"Expected `{field}` to be {listed}"
        elif text == "Number out of range":
            text = f"Expected `{field}` to be a finite number, got a number out of range"
    if value is not ...:
        text = re.sub(r", got `[^`]+`$", "", text)
        if ", got" not in text:
            text = f"{text}, got {_shown(value)}"
    if near:
        text = f"{text}; {near}"
    elif isinstance(value, str) and type_ is not None:
        text += _as_number(value, parts)
    return f"{text} - at `{path}`", pointer


_WORDS = {
    "float": "a number",
    "int": "a whole number",
    "str": "text",
    "bool": "true or false",
    "object": "an object",
    "array": "a list",
    "datetime": "a date and time",
}


def _in_words(types: str) -> str:
    """msgspec's `float | object | null` in words: "a number or an object" (null is what leaving it out means)."""
    named = [_WORDS.get(name.strip(), f"`{name.strip()}`") for name in types.split("|") if name.strip() != "null"]
    return " or ".join(named) if named else "null"


def _as_number(value: str, parts: list[str]) -> str:
    """For shorthand where a JSON body takes a number (`"100ms"`, `"21%"`): the number to write instead."""
    read = units.FIELDS.get(tuple("*" if part.isdigit() else part for part in parts))
    try:
        number = read(value) if read is not None else None
    except units.Unreadable:
        return ""
    if isinstance(number, dict):  # a range
        number = {end: float(f"{figure:.15g}") for end, figure in number.items()}
    elif isinstance(number, float):
        number = float(f"{number:.15g}")
    elif not isinstance(number, int):
        return ""
    shown = msgspec.json.encode(number).decode().replace(".0,", ",").replace(".0}", "}").removesuffix(".0")
    return f"; a JSON body takes numbers: write {shown}"
