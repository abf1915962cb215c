"""Invariants of rules/amdahl.py over its whole domain (0 < p <= 1, k > 0 or infinite)."""

from __future__ import annotations

import math

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tests.strategies import finite_speedups, shares
from worthit.rules import amdahl

ks = st.floats(min_value=1e-3, max_value=1e9, allow_nan=False) | st.just(math.inf)


@settings(deadline=None)
@given(p=shares, k=ks)
def test_speedup_never_exceeds_the_ceiling(p: float, k: float) -> None:
    """S ≤ S_max = 1 / (1 − p), for any k."""
    assert amdahl.speedup(p, k) <= amdahl.ceiling(p) * (1 + 1e-12)


@settings(deadline=None)
@given(p=shares, k1=ks, k2=ks)
def test_speedup_grows_with_k(p: float, k1: float, k2: float) -> None:
    """A faster target never makes the scope slower."""
    low, high = sorted((k1, k2))
    assert amdahl.speedup(p, low) <= amdahl.speedup(p, high) * (1 + 1e-12)


@settings(deadline=None)
@given(p1=shares, p2=shares, k=st.floats(min_value=1.0, max_value=1e9))
def test_speedup_grows_with_p_when_k_at_least_1(p1: float, p2: float, k: float) -> None:
    """For a real speedup (k ≥ 1), a larger share gains more."""
    low, high = sorted((p1, p2))
    assert amdahl.speedup(low, k) <= amdahl.speedup(high, k) * (1 + 1e-12)


@settings(deadline=None)
@given(p=st.floats(min_value=1e-6, max_value=0.999))
def test_speedup_tends_to_the_ceiling(p: float) -> None:
    """S → S_max as k → ∞, and S(∞) = S_max."""
    assert amdahl.speedup(p, math.inf) == amdahl.ceiling(p) or math.isclose(
        amdahl.speedup(p, math.inf), amdahl.ceiling(p), rel_tol=1e-12
    )
    assert math.isclose(amdahl.speedup(p, 1e12), amdahl.ceiling(p), rel_tol=1e-6)


@settings(deadline=None)
@given(p=shares)
def test_k_of_one_changes_nothing(p: float) -> None:
    """k = 1 ⇒ S = 1 and nothing is saved."""
    assert math.isclose(amdahl.speedup(p, 1.0), 1.0, rel_tol=1e-12)
    assert amdahl.saving_fraction(p, 1.0) == 0.0


@settings(deadline=None)
@given(p=shares, k=ks)
@example(p=0.21, k=10.0)
def test_saving_fraction_is_one_minus_one_over_s(p: float, k: float) -> None:
    """saving_fraction = p (1 − 1/k) = 1 − 1/S."""
    s = amdahl.speedup(p, k)
    assert math.isclose(amdahl.saving_fraction(p, k), 1 - 1 / s, rel_tol=1e-9, abs_tol=1e-12)


@settings(deadline=None)
@given(p=shares, k=ks, baseline=st.floats(min_value=1e-3, max_value=1e7), cost=st.floats(min_value=0.01, max_value=100))
def test_figures_are_consistent(p: float, k: float, baseline: float, cost: float) -> None:
    """new = baseline − saving; remaining = baseline p / k; rate = saving / cost; headroom = 1 − 1/k."""
    f = amdahl.figures(p, k, baseline_ms=baseline, cost_weeks=cost)
    assert f.new_ms is not None
    assert f.saving_ms is not None
    assert f.remaining_ms is not None
    assert f.rate is not None
    assert math.isclose(f.new_ms + f.saving_ms, baseline, rel_tol=1e-9)
    assert math.isclose(f.remaining_ms, baseline * p / k, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(f.rate, f.saving_ms / cost, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(f.headroom_captured, 1 - 1 / k, rel_tol=1e-12, abs_tol=1e-15)


@settings(deadline=None)
# Subnormal parts lose their saving to float rounding; real phases are 0 or well above 1e-6 ms.
@given(
    parts=st.lists(st.just(0.0) | st.floats(min_value=1e-6, max_value=1e4), min_size=2, max_size=8),
    k=finite_speedups,
    data=st.data(),
)
def test_savings_on_disjoint_phases_add(parts: list[float], k: float, data: st.DataObject) -> None:
    """Speeding up several disjoint phases saves the sum of their savings (speedups never multiply)."""
    total = sum(parts)
    assume(total > 0)
    chosen = data.draw(st.sets(st.integers(min_value=0, max_value=len(parts) - 1), min_size=1))
    savings = [total * amdahl.saving_fraction(parts[i] / total, k) for i in chosen]
    new_ms, s = amdahl.combined(total, savings)
    direct = total - sum(parts[i] * (1 - 1 / k) for i in chosen)
    assert math.isclose(new_ms, direct, rel_tol=1e-9, abs_tol=1e-9)
    joint = sum(parts[i] for i in chosen) / total
    assert math.isclose(s, amdahl.speedup(joint, k), rel_tol=1e-9)


@settings(deadline=None)
@given(k=ks | st.floats(min_value=5e-324, max_value=1e-300))
@example(k=5e-324)
def test_a_share_of_nothing_saves_nothing_at_any_k(k: float) -> None:
    """p = 0 (a mix part behind a barrier the step does not see) saves exactly 0, never 0 · −∞ = NaN."""
    assert amdahl.saving_fraction(0.0, k) == 0.0
