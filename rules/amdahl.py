"""Amdahl's law, small, pure and total (PRODUCT §2).

`p` is the target's share of the measured scope (0 < p <= 1); `k` the target's own speedup (k > 0, `math.inf`
when the work disappears). No policy, no I/O: every function here is defined on that whole domain.
"""

from __future__ import annotations

import math
from typing import Literal

from worthit.rules.model import AmdahlFigures

__all__ = [
    "ceiling",
    "combined",
    "expected_tokens",
    "figures",
    "headroom_captured",
    "remaining_fraction",
    "saving_fraction",
    "speculative_k",
    "speedup",
    "with_added_ms",
]


def speedup(p: float, k: float) -> float:
    """Whole-scope speedup S = 1 / ((1 − p) + p / k); `inf` when nothing is left (p = 1, k = ∞)."""
    remaining = (1.0 - p) + p / k
    return math.inf if remaining <= 0 else 1.0 / remaining


def ceiling(p: float) -> float:
    """S_max = 1 / (1 − p): the speedup with the target at zero time; `inf` when p = 1."""
    return math.inf if p >= 1.0 else 1.0 / (1.0 - p)


def saving_fraction(p: float, k: float) -> float:
    """Share of the scope's time removed: p · (1 − 1/k) (equal to 1 − 1/S); nothing for a share of 0, at any k.

    A share of 0 is what a part of a fleet or traffic mix touches behind a barrier the step does not see (rules.context
    `mix`): at k = 5e-324, 1/k is ∞ and 0 · −∞ would be NaN, a figure no sentence can print."""
    return p * (1.0 - 1.0 / k) if p else 0.0


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
        if not math.isfinite(rate):  # a cost of 5e-324 weeks overflows it: as free as a cost of 0, no rate either
            rate = rate_unit = None
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


# --- work the change adds: k derived end to end ------------------------------------------------------------------


def speculative_k(draft_tokens: int, acceptance: float, draft_cost: float, verify_cost: float) -> float:
    """The end-to-end speedup of speculative decoding over plain decoding, per token.

    A draft model proposes γ = `draft_tokens` tokens; the target verifies them in one pass and accepts each with
    probability α = `acceptance`, stopping at the first rejection and always adding one token of its own. The
    expected tokens per verify pass are (1 − α^(γ+1)) / (1 − α) (γ + 1 when α = 1). One round costs γ draft steps
    and one verify pass: γ·`draft_cost` + `verify_cost`, both in units of one plain decode step. So
    k = [(1 − α^(γ+1)) / (1 − α)] / (γ·draft_cost + verify_cost).

    >>> round(speculative_k(4, 0.7, 0.1, 1.2), 3)  # 2.773 tokens per pass for 1.6 steps' time
    1.733
    """
    tokens = expected_tokens(draft_tokens, acceptance)
    return tokens / (draft_tokens * draft_cost + verify_cost)


def expected_tokens(draft_tokens: int, acceptance: float) -> float:
    """Tokens one verify pass yields on average: (1 − α^(γ+1)) / (1 − α), or γ + 1 when every draft is accepted."""
    if acceptance >= 1:
        return float(draft_tokens + 1)
    return (1 - acceptance ** (draft_tokens + 1)) / (1 - acceptance)


def with_added_ms(target_ms: float, k: float, added_ms: float) -> float:
    """The target's speedup once the change's added work is counted: its time T becomes T/k + added, so
    k_end_to_end = T / (T/k + added) (∞ only when nothing is left and nothing is added).

    >>> with_added_ms(40, 2, 5)  # 40 ms at 2× is 20 ms, plus a 5 ms dequantize: 1.6×
    1.6
    """
    after = target_ms / k + added_ms
    if after <= 0:
        return math.inf
    return target_ms / after
