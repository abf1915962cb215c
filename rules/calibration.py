"""Calibration: how far a team's estimates of k come true (the second seed's measure → improve → measure again,
applied to the estimates themselves).

An outcome's k ratio is realized k / proposed k. A team whose 10× estimates realize 6× has a ratio of 0.6; under a
policy with `calibrate = true` its new proposals are evaluated at k × that ratio (the `calibration` check says so).
One outcome is an anecdote and one absurd report (a ratio of 3·10⁹ from a typo) must not move a team's verdicts,
so the ratio the engine applies is robust by construction:
- each outcome's ratio is bounded to [1 / `calibration_max_ratio`, `calibration_max_ratio`] before it counts;
- the median is taken, and only over at least `calibration_min_outcomes` outcomes; with fewer there is no
  calibration, and the proposal is evaluated as proposed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import msgspec

from worthit.rules.model import Infinite, Range
from worthit.rules.policy import Policy

__all__ = ["Calibration", "bounded", "calibration_of", "k_ratio", "scaled_k"]


class Calibration(msgspec.Struct, frozen=True, kw_only=True):
    """The ratio the engine applies to a proposal's k, and what it rests on."""

    ratio: float
    """Median of the bounded realized/proposed k ratios."""
    outcomes: int
    """How many outcomes the median is taken over."""
    bounded: int = 0
    """How many of them were past the bound and counted at it."""
    team: str | None = None
    workload: str | None = None


def bounded(ratio: float, policy: Policy) -> float:
    """One outcome's ratio, held inside [1 / bound, bound]: no single report can say more than the bound."""
    bound = policy.calibration_max_ratio
    return min(max(ratio, 1 / bound), bound)


def calibration_of(
    ratios: Sequence[float], policy: Policy, *, team: str | None = None, workload: str | None = None
) -> Calibration | None:
    """The robust calibration of these outcomes' k ratios, or None when there are too few to rest on."""
    usable = [r for r in ratios if r > 0]
    if len(usable) < max(policy.calibration_min_outcomes, 1):
        return None
    held = [bounded(r, policy) for r in usable]
    return Calibration(
        ratio=statistics.median(held),
        outcomes=len(held),
        bounded=sum(1 for r, h in zip(usable, held, strict=True) if r != h),
        team=team,
        workload=workload,
    )


def scaled_k(k: float | Range | Infinite, ratio: float) -> float | Range | Infinite:
    """The proposal's k at the calibrated ratio: a range scales at both ends; a removed phase stays removed."""
    if isinstance(k, str):
        return k
    if isinstance(k, Range):
        return Range(low=k.low * ratio, high=k.high * ratio)
    return k * ratio


def k_ratio(proposed_k: float | None, realized_k: float | None) -> float | None:
    """Realized k / proposed k of one outcome (None when either is unknown or unbounded)."""
    if proposed_k is None or realized_k is None or proposed_k <= 0:
        return None
    return realized_k / proposed_k
