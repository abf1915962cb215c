"""Figures are settled to the 15 significant digits a double carries: float noise goes, no other digit does."""

from __future__ import annotations

import math
import typing
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.rules.helpers import SEED_BREAKDOWN, review
from worthit.rules.model import Evaluation, Finding, Proposal, StageAnswer
from worthit.rules.plans import PlanRequest, plan_for
from worthit.rules.policy import default_policy
from worthit.rules.portfolio import portfolio
from worthit.rules.precision import EVALUATION_FIGURES, EVALUATION_WORDS, settle

ATTENTION = {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}


@pytest.mark.parametrize(
    ("noisy", "settled"),
    [
        (2.0999999999999996, 2.1),
        (0.020999999999999998, 0.021),
        (0.30000000000000004, 0.3),
        (1 / 0.811, 1.23304562268804),
        (-7.000000000000001, -7.0),
        (0.0, 0.0),
        (5e-324, 5e-324),
        (1.7976931348623157e308, 1.7976931348623157e308),  # would round up past the largest double: kept
    ],
)
def test_settle_removes_the_noise_and_keeps_the_digits(noisy: float, settled: float) -> None:
    assert settle(noisy) == settled


def test_infinities_and_nan_are_left_as_they_are() -> None:
    assert settle(math.inf) == math.inf
    assert math.isnan(settle(math.nan))


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_settling_is_idempotent_close_and_monotonic_with_its_neighbour(value: float) -> None:
    once = settle(value)
    assert settle(once) == once
    assert once == pytest.approx(value, rel=1e-14, abs=1e-300)  # subnormals have fewer digits
    assert settle(math.nextafter(value, math.inf)) >= once


def _floats(document: Any) -> list[float]:
    if isinstance(document, float):
        return [document]
    if isinstance(document, dict):
        return [x for value in document.values() for x in _floats(value)]
    if isinstance(document, list):
        return [x for value in document for x in _floats(value)]
    return []


def test_the_seed_figures_come_out_exactly() -> None:
    """81.1 ms, 18.9 ms, 6.3 ms/week, 2.1 ms left, 0.021 of the step: the decimals themselves, not their noise."""
    evaluation = review(ATTENTION)
    a = evaluation.amdahl
    assert (a.new_ms, a.saving_ms, a.rate, a.rate_unit) == (81.1, 18.9, 6.3, "ms/week")
    assert (a.remaining_ms, a.remaining_fraction, a.saving_fraction) == (2.1, 0.021, 0.189)
    assert a.speedup == 1.23304562268804
    assert a.ceiling_speedup == 1.26582278481013
    assert "from 100 ms to 81.1 ms (1.233×), saving 18.9 ms, 6.3 ms per engineer-week" in evaluation.statement
    figures = {f.rule: f.figures for f in evaluation.findings}
    assert (figures["ceiling"]["remaining_ms"], figures["ceiling"]["remaining_fraction"]) == (2.1, 0.021)
    every = _floats(msgspec.to_builtins(evaluation))
    assert every
    assert all(value == settle(value) for value in every)


def test_plans_and_portfolios_are_settled_and_inputs_are_left_alone() -> None:
    proposals = [
        msgspec.convert(ATTENTION | {"p": 0.21000000000000002}, Proposal),
        msgspec.convert(ATTENTION, Proposal),
    ]
    ranked = portfolio(proposals, default_policy(), 10)
    assert proposals[0].p == 0.21000000000000002, "the caller's proposal is not rewritten"
    assert all(value == settle(value) for value in _floats(msgspec.to_builtins(ranked)))
    request = msgspec.convert({"breakdown": SEED_BREAKDOWN, "target_speedup": 1.3, "k": 10}, PlanRequest)
    planned = plan_for(request, default_policy())
    assert all(value == settle(value) for value in _floats(msgspec.to_builtins(planned)))


def test_the_fast_path_knows_every_field_of_an_evaluation() -> None:
    """A field added to Evaluation must be said to hold figures (and be settled) or words; findings and stages keep
    their figures in `figures` alone."""
    assert sorted(EVALUATION_FIGURES + EVALUATION_WORDS) == sorted(Evaluation.__struct_fields__)
    for struct in (Finding, StageAnswer):
        hints = typing.get_type_hints(struct)
        assert [name for name, hint in hints.items() if "float" in str(hint)] == ["figures"], struct.__name__
