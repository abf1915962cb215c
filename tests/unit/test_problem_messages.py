"""Validation messages name the field, what was expected, what was got, and where."""

from __future__ import annotations

import pytest

from worthit.service.validation import path_to_pointer, validation_problem


@pytest.mark.parametrize(
    ("path", "pointer"),
    [
        ("$", ""),
        ("$.p", "/p"),
        ("$.flags.barrier.ranks", "/flags/barrier/ranks"),
        ("$.breakdown[2].ms", "/breakdown/2/ms"),
    ],
)
def test_json_paths_become_json_pointers(path: str, pointer: str) -> None:
    assert path_to_pointer(path) == pointer


def test_constraint_names_the_field_and_value() -> None:
    detail, pointer = validation_problem("Expected `float` <= 1.0 - at `$.p`", {"p": 1.7, "k": 10})
    assert detail == "Expected `p` <= 1.0, got 1.7 - at `$.p`"
    assert pointer == "/p"


def test_wrong_type_shows_the_value_got() -> None:
    detail, pointer = validation_problem("Expected `float | object | null`, got `str` - at `$.p`", {"p": "0.5"})
    assert detail == 'Expected `p` to be `float | object | null`, got "0.5" - at `$.p`'
    assert pointer == "/p"


def test_unknown_field_points_at_it() -> None:
    detail, pointer = validation_problem("Object contains unknown field `pp` - at `$.flags`", {"flags": {"pp": 1}})
    assert pointer == "/flags/pp"
    assert "`pp`" in detail


def test_missing_field_points_at_it() -> None:
    detail, pointer = validation_problem("Object missing required field `k`", {"p": 0.5})
    assert pointer == "/k"
    assert detail.startswith("Expected `k`")
