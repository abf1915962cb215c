"""JSON pointers (RFC 6901), the one builder and reader of the `pointer` an `InvalidInput` and a problem carry.

`~` is written `~0` and `/` `~1`, so a key holding either still names one field: `{"a/b": 1}`'s field is `/a~1b`,
not `/a/b` (which would be `b` inside `a`).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["from_pointer", "to_pointer"]


def to_pointer(parts: Iterable[str | int]) -> str:
    """`("flags", "a/b", 2)` → `/flags/a~1b/2`; no parts → `""`, the whole document."""
    return "".join(f"/{str(part).replace('~', '~0').replace('/', '~1')}" for part in parts)


def from_pointer(pointer: str) -> list[str]:
    """`/flags/a~1b/2` → `["flags", "a/b", "2"]`, the reverse of `to_pointer`; `""` → `[]`."""
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:]]
