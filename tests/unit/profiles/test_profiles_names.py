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
