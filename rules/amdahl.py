"""Amdahl's law, small, pure and total (PRODUCT §2).

`p` is the target's share of the measured scope (0 < p <= 1); `k` the target's own speedup (k > 0, `math.inf`
when the work disappears). No policy, no I/O: every function here is defined on that whole domain.
"""

from __future__ import annotations

import math
from typing import Literal

from worthit.rules.model import AmdahlFigures


def speedup(p: float, k: float) -> float:
    """Whole-scope speedup S = 1 / ((1 − p) + p / k); `inf` when nothing is left (p = 1, k = ∞)."""
    remaining = (1.0 - p) + p / k
    return math.inf if remaining <= 0 else 1.0 / remaining


def ceiling(p: float) -> float:
    """S_max = 1 / (1 − p): the speedup with the target at zero time; `inf` when p = 1."""
    return math.inf if p >= 1.0 else 1.0 / (1.0 - p)


def saving_fraction(p: float, k: float) -> float:
    """Share of the scope's time removed: p · (1 − 1/k) (equal to 1 − 1/S)."""
    return p * (1.0 - 1.0 / k)


def headroom_captured(k: float) -> float:
    """Share of the target's own time removed: 1 − 1/k."""
    return 1.0 - 1.0 / k


def remaining_fraction(p: float, k: float) -> float:
    """Share of the scope the target still takes after the speedup: p / k (all a follow-up can still win)."""
    return p / k


def figures(p: float, k: float, *, baseline_ms: float | None = None, cost_weeks: float | None = None) -> AmdahlFigures:
    """Every figure of PRODUCT §2 for one proposal; ms figures only when the scope's time is known.

    >>> f = figures(0.21, 10, baseline_ms=100, cost_weeks=3)
    >>> round(f.new_ms, 1), round(f.speedup, 3), round(f.rate, 1)
    (81.1, 1.233, 6.3)
    """
    saving = saving_fraction(p, k)
    s_max = ceiling(p)
    s = speedup(p, k)
    saving_ms = new_ms = remaining_ms = None
    if baseline_ms is not None:
        saving_ms = baseline_ms * saving
        new_ms = baseline_ms - saving_ms
        remaining_ms = baseline_ms * remaining_fraction(p, k)
    rate: float | None = None
    rate_unit: Literal["ms/week", "fraction/week"] | None = None
    if cost_weeks is not None and cost_weeks > 0:
        rate = (saving_ms if saving_ms is not None else saving) / cost_weeks
        rate_unit = "ms/week" if saving_ms is not None else "fraction/week"
    return AmdahlFigures(
        p=p,
        k="inf" if math.isinf(k) else k,
        speedup=None if math.isinf(s) else s,
        ceiling_speedup=None if math.isinf(s_max) else s_max,
        saving_fraction=saving,
        headroom_captured=headroom_captured(k),
        remaining_fraction=remaining_fraction(p, k),
        baseline_ms=baseline_ms,
        saving_ms=saving_ms,
        new_ms=new_ms,
        remaining_ms=remaining_ms,
        cost_weeks=cost_weeks,
        rate=rate,
        rate_unit=rate_unit,
    )


def combined(baseline_ms: float, savings_ms: list[float]) -> tuple[float, float]:
    """New time and speedup when savings on disjoint phases of one breakdown add (speedups never multiply)."""
    new_ms = baseline_ms - sum(savings_ms)
    return new_ms, (math.inf if new_ms <= 0 else baseline_ms / new_ms)
