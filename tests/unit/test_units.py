"""The one reader of shorthand values (service/units.py): every form either surface accepted before, read the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from worthit.rules.errors import InvalidInput
from worthit.service import units
from worthit.service.units import Unreadable, forgive, gigabytes, gpus, millis, share, speedup, weeks


@pytest.mark.parametrize(
    ("read", "text", "expected"),
    [
        (share, "21%", 0.21),
        (share, "0.21", 0.21),
        (share, "0.014 %", 0.00014),
        (share, "0.4%", 0.004),
        (share, "170%", 1.7),
        (share, "15%..25%", {"low": 0.15, "high": 0.25}),
        (share, "15..25%", {"low": 0.15, "high": 0.25}),
        (speedup, "10", 10.0),
        (speedup, "10x", 10.0),
        (speedup, "10×", 10.0),
        (speedup, "1e1", 10.0),
        (speedup, "inf", "inf"),
        (speedup, ".inf", "inf"),
        (speedup, "Infinity", "inf"),
        (speedup, "infinite", "inf"),
        (speedup, "∞", "inf"),
        (speedup, "∞x", "inf"),
        (speedup, "5x..10x", {"low": 5.0, "high": 10.0}),
        (weeks, "3", 3.0),
        (weeks, "3w", 3.0),
        (weeks, "3 weeks", 3.0),
        (weeks, "1.5 engineer-weeks", 1.5),
        (weeks, "10d", 2.0),
        (weeks, "3 days", 0.6),
        (weeks, "40h", 1.0),
        (millis, "100", 100.0),
        (millis, "100ms", 100.0),
        (millis, "100 ms", 100.0),
        (millis, "1.5s", 1500.0),
        (millis, "500us", 0.5),
        (millis, "500µs", 0.5),
        (millis, "500μs", 0.5),
        (millis, "250ns", 0.00025),
        (gigabytes, "80GB", 80.0),
        (gigabytes, "80 g", 80.0),
        (gpus, "20000", 20000),
        (gpus, "20,000", 20000),
        (gpus, "20_000", 20000),
        (gpus, "20k", 20000),
        (gpus, "1.5k", 1500),
        (gpus, "20000 GPUs", 20000),
    ],
)
def test_each_form_reads(read: Callable[[str], Any], text: str, expected: object) -> None:
    """Each form gives exactly the double the API's decimal literal is (0.014% is 0.00014, 10d is 2.0 weeks)."""
    assert read(text) == expected


@pytest.mark.parametrize(
    ("read", "text"),
    [
        (share, "twenty"),
        (share, "21 x"),
        (share, "25%..15%"),
        (speedup, "10ms"),
        (weeks, "3 months"),
        (millis, "twelve"),
        (millis, "1e999"),
        (gpus, "1.5"),
        (gpus, "20m"),
        (gigabytes, "80 tb"),
    ],
)
def test_what_does_not_read_is_unreadable(read: Callable[[str], Any], text: str) -> None:
    """Nothing is guessed: an unknown unit, words, a reversed range or an absurd exponent do not read."""
    with pytest.raises(Unreadable):
        read(text)


def test_forgive_reads_known_fields_and_records_what_was_written() -> None:
    written: dict[str, str] = {}
    document = forgive(
        {
            "target": "10x",  # a name, not a speedup: left alone
            "p": "21%",
            "k": float("inf"),
            "cost_weeks": "10d",
            "baseline_ms": "1.5s",
            "flags": {"fleet_gpus": "20k", "strategic": {"p": "30%"}},
            "breakdown": [{"name": "a", "ms": "18ms"}],
            "prior_k": "ten",
        },
        written,
    )
    assert document == {
        "target": "10x",
        "p": 0.21,
        "k": "inf",
        "cost_weeks": 2.0,
        "baseline_ms": 1500.0,
        "flags": {"fleet_gpus": 20000, "strategic": {"p": 0.3}},
        "breakdown": [{"name": "a", "ms": 18.0}],
        "prior_k": "ten",
    }
    assert written == {
        "/p": "21%",
        "/cost_weeks": "10d",
        "/baseline_ms": "1.5s",
        "/flags/fleet_gpus": "20k",
        "/flags/strategic/p": "30%",
        "/breakdown/0/ms": "18ms",
    }


def test_a_range_end_is_one_value() -> None:
    """`p: {low: 15%..20%}` is not a range inside a range, and a speedup's end is a number, not `inf`."""
    assert forgive({"p": {"low": "15%..20%"}, "k": {"low": "inf"}}) == {"p": {"low": "15%..20%"}, "k": {"low": "inf"}}
    assert {("p",), ("p_end_to_end",)} <= units.SHARE_FIELDS


PROPOSAL_FIELDS = frozenset({"p", "k", "baseline_ms", "cost_weeks", "flags", "scope", "title", "target"})


def test_expand_moves_the_names_slack_accepts_to_their_fields() -> None:
    """`baseline: 100ms` is `baseline_ms`, `portability: asm` is `flags.portability`, a word as `word: true` sets
    its flag; the document's own names stay, and `renamed` says where each moved field was written."""
    renamed: dict[str, str] = {}
    document = {
        "p": "21%",
        "k": 10,
        "baseline": "100ms",
        "cost": "3w",
        "portability": "asm",
        "fallback": True,
        "oneoff": True,
        "flags": {"fleet_gpus": "20k"},
        "model": '"llama"',
    }
    expanded = units.expand(document, PROPOSAL_FIELDS, renamed)
    assert expanded == {
        "p": "21%",
        "k": 10,
        "baseline_ms": "100ms",
        "cost_weeks": "3w",
        "flags": {"fleet_gpus": "20k", "portability": "asm", "portable_fallback": True, "recurring": False},
        "scope": {"model": "llama"},
    }
    assert renamed == {
        "/baseline_ms": "/baseline",
        "/cost_weeks": "/cost",
        "/flags/portability": "/portability",
        "/flags/portable_fallback": "/fallback",
        "/flags/recurring": "/oneoff",
        "/scope/model": "/model",
    }
    assert forgive(expanded)["flags"]["portability"] == "hand_asm"
    assert forgive(expanded)["baseline_ms"] == 100.0


def test_expand_refuses_a_field_given_under_two_names() -> None:
    with pytest.raises(InvalidInput, match=r"`baseline_ms` is given twice \(also as `baseline`\)") as caught:
        units.expand({"baseline_ms": 100, "baseline": "1s"}, PROPOSAL_FIELDS)
    assert caught.value.pointer == "/baseline"


def test_expand_leaves_unknown_names_and_other_values_alone() -> None:
    """A name no surface knows stays, for strict validation to refuse with the nearest name; `asm: 3` (a word that
    is no flag) too."""
    document = {"p": 0.2, "cost_wekks": 3, "asm": 3, "fallback": "yes"}
    assert units.expand(document, PROPOSAL_FIELDS) == document
    assert units.expand([1, 2], PROPOSAL_FIELDS) == [1, 2]


@pytest.mark.parametrize(
    ("text", "word"),
    [("asm", "hand_asm"), ("ASM", "hand_asm"), ("vendor", "vendor_specific"), ("portable", "portable")],
)
def test_portability_words(text: str, word: str) -> None:
    assert units.portability(text) == word


def test_portability_refuses_what_it_does_not_name() -> None:
    with pytest.raises(Unreadable):
        units.portability("arm")


def test_every_name_reads_to_a_field_of_the_proposal() -> None:
    """Each name of the table (a Slack key, an alias, the field's own dotted or last name) stands for a field the
    proposal has, and `key_of` finds the key of each."""
    from worthit.rules.model import Proposal

    info = msgspec.inspect.type_info(Proposal)
    for name, path in units.NAMES.items():
        key = units.key_of(name)
        assert key is not None, name
        assert key.path == path, name
        assert units.key_of(name.upper()) == key
        node: Any = info
        for part in path:
            while isinstance(node, msgspec.inspect.UnionType):
                node = next(
                    t for t in node.types if isinstance(t, msgspec.inspect.StructType | msgspec.inspect.ListType)
                )
            if isinstance(node, msgspec.inspect.ListType):
                node = node.item_type
            node = next(field.type for field in node.fields if field.encode_name == part)
    assert units.key_of("flags.fleet_gpus") == units.KEYS["fleet"]
    assert units.key_of("cost-weeks") == units.KEYS["cost"]
    assert units.key_of("nosuch") is None


def test_nearest() -> None:
    assert units.nearest("cost_wekks", ["cost_weeks", "baseline_ms"]) == "cost_weeks"
    assert units.nearest("zzz", ["cost_weeks"]) is None


def test_expand_leaves_the_document_given_unchanged() -> None:
    document = {"p": 0.2, "k": 2, "portability": "asm", "flags": {"fleet_gpus": 8}}
    expanded = units.expand(document, PROPOSAL_FIELDS)
    assert document == {"p": 0.2, "k": 2, "portability": "asm", "flags": {"fleet_gpus": 8}}
    assert expanded["flags"] == {"fleet_gpus": 8, "portability": "asm"}
