"""Validation messages name the field, what was expected, what was got, and where."""

from __future__ import annotations

import msgspec
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
    assert detail == 'Expected `p` to be a number or an object, got "0.5" - at `$.p`'
    assert pointer == "/p"


def test_unknown_field_points_at_it() -> None:
    detail, pointer = validation_problem("Object contains unknown field `pp` - at `$.flags`", {"flags": {"pp": 1}})
    assert pointer == "/flags/pp"
    assert "`pp`" in detail


def test_missing_field_points_at_it() -> None:
    detail, pointer = validation_problem("Object missing required field `k`", {"p": 0.5})
    assert pointer == "/k"
    assert (
        detail == "`k` is required (the target's own speedup: `10`, `10x`, or `inf` when its work disappears) - at `$`"
    )


def _problem(document: object) -> tuple[str, str]:
    from worthit.rules.errors import InvalidInput
    from worthit.rules.model import Proposal
    from worthit.service.validation import decode_strict

    with pytest.raises(InvalidInput) as caught:
        decode_strict(msgspec.json.encode(document), Proposal)
    return caught.value.detail, caught.value.pointer


PROPOSAL_FIELDS = (
    "`title`, `team`, `target`, `p`, `k`, `baseline_ms`, `cost_weeks`, `profile_id`, `steps`, `p_end_to_end`, "
    "`scope`, `breakdown`, `flags`, `goal`, `breakdown_scope`, `prior_k`, `more_targets`, `quality`, `added_work`, "
    "`cost_gpu_hours`, `cost_people`, `cost_calendar_weeks`"
)


@pytest.mark.parametrize(
    ("document", "detail", "pointer"),
    [
        (
            {"p": 0.2, "k": 2, "cost_wekks": 3},
            f"Unknown field `cost_wekks`; did you mean `cost_weeks`? The fields here: {PROPOSAL_FIELDS} - at `$`",
            "/cost_wekks",
        ),
        (  # a name Slack takes: the field it stands for
            {"p": 0.2, "k": 2, "portability": "asm"},
            "Unknown field `portability`; did you mean `flags.portability`? "
            f"The fields here: {PROPOSAL_FIELDS} - at `$`",
            "/portability",
        ),
        (
            {"p": 0.2, "k": 2, "breakdown": [{"name": "a", "mss": 1}]},
            "Unknown field `mss`; did you mean `ms`? The fields here: `name`, `ms`, `kind`, `k` - at `$.breakdown[0]`",
            "/breakdown/0/mss",
        ),
        (
            {"p": 0.2, "k": 2, "scope": {"measured": "device"}},
            'Expected `measured` to be one of `device_activity`, `end_to_end`, `rank`, `step`, got "device" '
            "- at `$.scope.measured`",
            "/scope/measured",
        ),
        (
            {"p": 0.2, "k": 2, "flags": {"portability": "hand_asn"}},
            'Expected `portability` to be one of `hand_asm`, `portable`, `vendor_specific`, got "hand_asn"; did you '
            "mean `hand_asm`? - at `$.flags.portability`",
            "/flags/portability",
        ),
        (
            {"p": 0.2},
            "`k` is required (the target's own speedup: `10`, `10x`, or `inf` when its work disappears) - at `$`",
            "/k",
        ),
        (  # shorthand where a JSON body takes a number: the number to write
            {"p": 0.2, "k": 2, "baseline_ms": "1.5s"},
            'Expected `baseline_ms` to be a number, got "1.5s"; a JSON body takes numbers: write 1500 '
            "- at `$.baseline_ms`",
            "/baseline_ms",
        ),
        (
            {"p": "15%..25%", "k": 2},
            'Expected `p` to be a number or an object, got "15%..25%"; a JSON body takes numbers: write '
            '{"low":0.15,"high":0.25} - at `$.p`',
            "/p",
        ),
        (
            {"p": 0.2, "k": "10x"},
            'Expected `k` to be a number or one of `inf`, got "10x"; a JSON body takes numbers: write 10 - at `$.k`',
            "/k",
        ),
    ],
)
def test_unknown_names_and_values_get_the_nearest_and_the_list(document: object, detail: str, pointer: str) -> None:
    """Every unknown field or value is answered with the nearest valid name and the names allowed; a required field
    left out says what it is; shorthand in a JSON body says the number it stands for."""
    assert _problem(document) == (detail, pointer)
