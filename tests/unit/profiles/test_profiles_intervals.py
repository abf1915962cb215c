"""Properties of the interval union every trace reader relies on."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worthit.rules.profiles.intervals import clip, union_length, union_length_arrays

interval = st.tuples(st.integers(0, 10_000), st.integers(0, 500)).map(lambda t: (t[0], t[0] + t[1]))
intervals = st.lists(interval, max_size=40)


def covered_points(pairs: list[tuple[int, int]]) -> int:
    """Independent reference: count the integer nanoseconds [t, t+1) covered by any interval."""
    points: set[int] = set()
    for start, end in pairs:
        points.update(range(start, end))
    return len(points)


@given(intervals)
def test_union_equals_covered_points(pairs: list[tuple[int, int]]) -> None:
    """The union is exactly the time covered by at least one interval."""
    assert union_length(pairs) == covered_points(pairs)


@given(intervals)
def test_union_at_most_sum(pairs: list[tuple[int, int]]) -> None:
    """Merging never adds time: union ≤ summed durations."""
    assert union_length(pairs) <= sum(e - s for s, e in pairs)


@given(intervals.filter(bool))
def test_union_at_least_longest(pairs: list[tuple[int, int]]) -> None:
    """The union covers at least the longest single interval."""
    assert union_length(pairs) >= max(e - s for s, e in pairs)


@given(st.lists(st.integers(1, 300), max_size=30), st.lists(st.integers(0, 50), max_size=30))
def test_union_of_disjoint_is_sum(lengths: list[int], gaps: list[int]) -> None:
    """Disjoint (possibly touching) intervals: union = sum."""
    pairs = []
    t = 0
    for i, length in enumerate(lengths):
        t += gaps[i] if i < len(gaps) else 0
        pairs.append((t, t + length))
        t += length
    assert union_length(pairs) == sum(lengths)


@given(intervals, st.randoms())
def test_union_order_independent(pairs: list[tuple[int, int]], rnd: object) -> None:
    """The order of rows in a file does not change the union."""
    shuffled = list(pairs)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert union_length(shuffled) == union_length(pairs)


@given(intervals, st.integers(0, 10_000), st.integers(0, 2_000))
def test_clip_keeps_only_the_window(pairs: list[tuple[int, int]], lo: int, width: int) -> None:
    """Clipping to a window keeps exactly the covered time inside it."""
    hi = lo + width
    starts, ends = clip([s for s, _ in pairs], [e for _, e in pairs], lo, hi)
    inside = {t for s, e in pairs for t in range(max(s, lo), min(e, hi))}
    assert union_length_arrays(starts, ends) == len(inside)


def test_empty_union_is_zero() -> None:
    """No intervals, no time."""
    assert union_length([]) == 0
