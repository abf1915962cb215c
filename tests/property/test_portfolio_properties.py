"""The funded set of a budgeted portfolio is the one that saves the most within the budget, whatever the rates."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worthit.rules.model import Proposal
from worthit.rules.policy import default_policy
from worthit.rules.portfolio import FUNDABLE, portfolio

# Shares and speedups that clear the default bars (1% floor, 1% of the step a week) for a few weeks of work, and
# some that do not, so the search also meets proposals it must leave out; costs include 0 and fractions of a week.
# At most 8 targets of at most 12.5% each: disjoint phases of one step (shares adding past it are refused).
proposal = st.builds(
    lambda p, k, weeks: (p, k, weeks),
    st.floats(min_value=0.001, max_value=0.125),
    st.sampled_from([1.1, 1.5, 2.0, 4.0, 10.0, 1e9]),
    st.sampled_from([0.0, 0.2, 0.5, 1.0, 1.4, 2.0, 3.0, 5.0, 8.0]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(proposal, min_size=1, max_size=8), st.sampled_from([0.0, 0.5, 1.0, 2.5, 4.0, 7.3, 30.0]))
def test_the_funded_set_is_the_best_subset_within_the_budget(
    raw: list[tuple[float, float, float]], budget: float
) -> None:
    proposals = [
        Proposal(target=f"kernel_{i}", p=p, k=k, baseline_ms=100, cost_weeks=weeks)
        for i, (p, k, weeks) in enumerate(raw)
    ]
    result = portfolio(proposals, default_policy(), budget_weeks=budget)
    by_index = {entry.index: entry for entry in result.entries}
    fundable = [i for i, entry in by_index.items() if entry.verdict in FUNDABLE]
    # Every subset of the fundable proposals, by brute force, with savings recomputed from p and k.
    saving = {i: raw[i][0] * (1 - 1 / raw[i][1]) * 100 for i in fundable}
    best = max(
        sum(saving[i] for i in subset)
        for n in range(len(fundable) + 1)
        for subset in itertools.combinations(fundable, n)
        if sum(raw[i][2] for i in subset) <= budget + 1e-9
    )
    assert result.combined_saving_ms == pytest.approx(best, rel=1e-9, abs=1e-9)
    assert result.funded_weeks <= budget + 1e-9
    assert all(by_index[i].verdict in FUNDABLE for i in by_index if by_index[i].funded)
