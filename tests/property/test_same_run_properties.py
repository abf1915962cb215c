"""The ranks-of-one-run check: sorted once (n log n), it refuses exactly the ranges the pairwise definition refuses."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.distributed import check_same_run

# Few distinct instants, so that ranges touch, nest and repeat; and the extremes a trace's clock can hold.
INSTANT = st.sampled_from([0, 1, 2, 3, 5, 8]) | st.integers(min_value=-(2**63), max_value=2**63 - 1)


@st.composite
def spans(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    count = draw(st.integers(min_value=0, max_value=8))
    out = []
    for i in range(count):
        lo, hi = sorted((draw(INSTANT), draw(INSTANT)))
        out.append((f"rank-{i}.json", lo, hi))
    return out


def pairwise(ranges: list[tuple[str, int, int]]) -> bool:
    """The definition: every range overlaps another (a < hi and lo < b) or starts inside one (a <= lo <= b)."""
    if len(ranges) < 2:
        return True
    return all(
        any((a < hi and lo < b) or (a <= lo <= b) for j, (_, a, b) in enumerate(ranges) if j != i)
        for i, (_, lo, hi) in enumerate(ranges)
    )


@given(spans())
@example([("a", 0, 0), ("b", -(2**63), 0)])  # an end at the smallest instant a clock can read
@example([("a", 0, 1), ("b", 1, 2)])  # touching: b starts where a ends
@example([("a", 0, 1), ("b", 2, 3)])  # apart
@example([("a", 5, 5), ("b", 5, 5)])  # two instants at once
@example([("a", 0, 10), ("b", 2, 3), ("c", 20, 30)])  # one nested, one apart
def test_check_same_run_refuses_what_the_pairwise_definition_refuses(ranges: list[tuple[str, int, int]]) -> None:
    if pairwise(ranges):
        check_same_run(ranges)
    else:
        with pytest.raises(ProfileError, match="do not overlap in time"):
            check_same_run(ranges)
