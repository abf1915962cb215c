"""The one step-range grammar: `parse_steps` reads it and `STEPS_PATTERN` is its schema form at the boundaries."""

from __future__ import annotations

import re

import msgspec
from hypothesis import assume, event, given
from hypothesis import strategies as st

from worthit.rules.model import Steps
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto import StepRange, parse_steps
from worthit.rules.step_grammar import STEPS_MAX_LENGTH, STEPS_PATTERN

NUMBER = st.none() | st.integers(min_value=0, max_value=10**19 - 1)
PATTERN = re.compile(STEPS_PATTERN)


@st.composite
def ranges(draw: st.DrawFn) -> StepRange:
    first, last = draw(NUMBER), draw(NUMBER)
    if first is not None and last is not None and last < first:
        first, last = last, first
    return StepRange(first, last)


@given(ranges())
def test_a_range_prints_as_text_the_boundary_accepts_and_parses_back(steps: StepRange) -> None:
    """What a breakdown's notes and errors print of a range is a range a proposal or an upload may name."""
    text = str(steps)
    assert PATTERN.match(text) is not None
    assert len(text) <= STEPS_MAX_LENGTH
    assert msgspec.convert(text, Steps) == text
    assert parse_steps(text) == steps


@given(st.text(alphabet=" :0123456789al", max_size=12))
def test_what_the_boundary_lets_through_is_parsed_or_refused_with_a_reason(text: str) -> None:
    """The schema is the coarser form: text it accepts either parses or is a ProfileError, never another error."""
    assume(PATTERN.match(text) is not None)
    try:
        steps = parse_steps(text)
    except ProfileError:
        event("refused with a reason")
    else:
        event("parsed")
        assert all(steps.includes(n) for n in (steps.first, steps.last) if n is not None)
