"""Stored profile names: cut to what a target can name, distinct, shown as the whole would be."""

from __future__ import annotations

from worthit.rules.model import LONG_NAME_MAX
from worthit.rules.profiles.naming import STORED_NAME_MAX, short_name


def test_stored_names_are_cut_at_the_longest_target() -> None:
    assert STORED_NAME_MAX == LONG_NAME_MAX


def test_a_cut_name_shows_as_the_whole_it_was_cut_from_and_distinct_names_stay_distinct() -> None:
    first, second = "k" + "x" * 400_000 + "1", "k" + "x" * 400_000 + "2"
    cut = short_name(first, STORED_NAME_MAX)
    assert len(cut) == STORED_NAME_MAX
    assert cut != short_name(second, STORED_NAME_MAX)
    assert short_name(cut) == short_name(first)
    assert short_name(cut, STORED_NAME_MAX) == cut


def test_a_glob_over_many_ranks_is_bounded_by_one_budget_for_them_all() -> None:
    """512 ranks of 20 names of 1,000 characters: a 100-character glob is within the per-lookup cap on each rank
    (2 M pairs) but 1 G over all of them (~6 s of the event loop): refused at once, naming the figures."""
    import time

    import pytest

    from worthit.rules.errors import InvalidInput
    from worthit.rules.profiles.model import BarrierFigures, Breakdown, Phase, RankFigures
    from worthit.rules.profiles.proposal import _distributed

    phases = [
        Phase(
            name=f"k{i:02d}" + "x" * 997, kind="kernel", total_ns=10, calls=1, share_of_device=None, share_of_wall=None
        )
        for i in range(20)
    ]
    ranks = [RankFigures(rank=r, file=None, wall_ns=1000, activity=None, phases=phases) for r in range(512)]
    run = Breakdown(format="kineto", wall_ns=1000, device_busy_ns=None, phases=phases, inclusive=False, ranks=ranks)
    barrier = BarrierFigures(
        ranks=512, world_size=512, straggler=0, wait_fraction=0.1, wait_ns=1, step_ns=1000, steps=1
    )
    started = time.monotonic()
    with pytest.raises(InvalidInput, match="more matching than a request may do"):
        _distributed(None, "*" + "x" * 98 + "y*", run, barrier)  # type: ignore[arg-type]
    assert time.monotonic() - started < 0.5
