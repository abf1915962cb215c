"""Figures to the precision a double carries: 15 significant digits (DBL_DIG), once, where an answer is made.

Float arithmetic leaves noise in the last of a double's 17 digits: 100 × (0.21 / 10) is `2.0999999999999996` ms
and 0.21 - 0.189 is `0.020999999999999998`, where the answer is 2.1 and 0.021. Every decimal of at most 15
significant digits survives the trip through a double and back, so rounding to 15 removes that noise and nothing
else: an exact figure prints as the decimal it is (81.1 ms, 18.9 ms, 6.3 ms/week), and one that is not exact
(1/0.811 = 1.23304562268804…) keeps every digit a measurement could justify.

The checks compute on full doubles; what they answer is settled here at the end (`evaluate`, `plan_for`,
`portfolio`), so every surface (the API, the CLI's `--json`, the gate, Slack) prints the same figure. Rounding
is monotonic, so an order between figures (speedup ≤ ceiling) still holds after it.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import msgspec

from worthit.rules.model import AmdahlFigures, Base, Evaluation, Figure

SIGNIFICANT_DIGITS = 15
T = TypeVar("T")


_SETTLED: dict[float, float] = {}
# The same few figures recur (a baseline, a share, a cost, a figure copied into a finding and a stage): formatting a
# float is most of the cost of settling one, a lookup a tenth of it. Bounded: cleared when full.
_SETTLED_MAX = 4096


def settle(value: float) -> float:
    """`value` to 15 significant digits. Whole numbers below 10¹⁵ (zero among them), infinities and NaN are left as
    they are: none carries noise. Larger whole numbers have more digits than 15 and are rounded like any other
    value, so that settling stays monotonic (a whole number and its neighbour settle in order)."""
    if (value.is_integer() and abs(value) < 1e15) or not math.isfinite(value):
        return value
    known = _SETTLED.get(value)
    if known is None:
        rounded = float(f"{value:.{SIGNIFICANT_DIGITS}g}")
        known = rounded if math.isfinite(rounded) else value  # the largest doubles would round up past the largest
        if len(_SETTLED) >= _SETTLED_MAX:
            _SETTLED.clear()
        _SETTLED[value] = known
    return known


_LEAVES = frozenset({str, int, bool, type(None)})
_OPEN: dict[type, bool] = {}
"""Per Struct type: whether its fields are settled (figures), or it is an input or frozen and left alone."""


def _open(kind: type) -> bool:
    known = _OPEN.get(kind)
    if known is None:
        known = _OPEN[kind] = not issubclass(kind, Base) and not kind.__struct_config__.frozen  # type: ignore[attr-defined]
    return known


def _settled(value: Any) -> Any:
    kind = type(value)
    if kind is float:
        return settle(value)
    if kind in _LEAVES:
        return value
    if kind is list:
        for index, item in enumerate(value):
            if type(item) not in _LEAVES:
                value[index] = _settled(item)
    elif kind is dict:
        for key, item in value.items():
            if type(item) not in _LEAVES:
                value[key] = _settled(item)
    elif isinstance(value, msgspec.Struct) and _open(kind):
        for name in value.__struct_fields__:
            item = getattr(value, name)
            if type(item) not in _LEAVES:
                setattr(value, name, _settled(item))
    return value


def settled(answer: T) -> T:
    """`answer` (an Evaluation, a Plan, a Portfolio, built by the engine) with every float of its figures settled,
    in place. Inputs carried inside it (a proposal, a phase: `Base` Structs) are left as the caller gave them."""
    result: T = _settled(answer)
    return result


def _figures(figures: dict[str, Figure]) -> None:
    for name, value in figures.items():
        if type(value) is float:
            figures[name] = settle(value)


EVALUATION_FIGURES = ("amdahl", "findings", "ranges", "reasoning")
"""The fields of an Evaluation that hold figures; the others hold words, a verdict, a reference (a test keeps the
two lists the whole of Evaluation)."""
EVALUATION_WORDS = ("verdict", "statement", "deciding_rule", "policy", "holds_across_range")


def settled_evaluation(evaluation: Evaluation) -> Evaluation:
    """`settled` for the engine's hot path: the fields that hold figures, walked directly (a tenth of the generic
    walk's time, which visits every word of every finding)."""
    amdahl = evaluation.amdahl
    for name in AmdahlFigures.__struct_fields__:
        value = getattr(amdahl, name)
        if type(value) is float:
            setattr(amdahl, name, settle(value))
    for finding in evaluation.findings:
        _figures(finding.figures)
    for stage in evaluation.reasoning or ():
        _figures(stage.figures)
    for interval in (evaluation.ranges or {}).values():
        if type(interval.low) is float:
            interval.low = settle(interval.low)
        if type(interval.high) is float:
            interval.high = settle(interval.high)
    return evaluation
