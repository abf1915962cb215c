"""rules/pointer.py: the one JSON pointer (RFC 6901) builder and reader, and the surfaces that use it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worthit.rules.pointer import from_pointer, to_pointer
from worthit.service.validation import validation_problem


@pytest.mark.parametrize(
    ("parts", "pointer"),
    [
        ((), ""),
        (("p",), "/p"),
        (("breakdown", 2, "ms"), "/breakdown/2/ms"),
        (("a/b",), "/a~1b"),  # RFC 6901 §5's examples
        (("m~n",), "/m~0n"),
        (("~1",), "/~01"),  # `~` first, so a written `~1` is not read back as `/`
        (("",), "/"),
    ],
)
def test_parts_become_an_escaped_pointer_and_back(parts: tuple[str | int, ...], pointer: str) -> None:
    assert to_pointer(parts) == pointer
    assert from_pointer(pointer) == [str(part) for part in parts]


@given(st.lists(st.text(alphabet="ab/~01")))
def test_reading_a_built_pointer_gives_its_parts(parts: list[str]) -> None:
    assert from_pointer(to_pointer(parts)) == parts


def test_an_unknown_field_with_a_slash_points_at_one_field() -> None:
    """`{"a/b": 1}` names one unknown field, `/a~1b`, not `b` inside `a`."""
    _, pointer = validation_problem("Object contains unknown field `a/b` - at `$`", {"a/b": 1})
    assert pointer == "/a~1b"
