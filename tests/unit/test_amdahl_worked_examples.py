"""The worked examples of PRODUCT §2 and the seed, figure by figure, through the engine's math."""

from __future__ import annotations

import math

import pytest

from worthit.rules import amdahl

TOL = 1e-3


def test_attention_softmax_ten_times_on_a_100ms_step() -> None:
    """p=0.21, k=10, 100 ms: 81.1 ms, S=1.233, 18.9 ms saved, 90% of headroom, 2.1 ms left, 6.3 ms/week."""
    f = amdahl.figures(0.21, 10, baseline_ms=100, cost_weeks=3)
    assert f.new_ms == pytest.approx(81.1, abs=TOL)
    assert f.speedup == pytest.approx(1 / 0.811, rel=1e-12)
    assert round(f.speedup, 3) == 1.233
    assert f.saving_ms == pytest.approx(18.9, abs=TOL)
    assert f.saving_fraction == pytest.approx(0.189, abs=1e-12)
    assert f.headroom_captured == pytest.approx(0.9, abs=1e-12)
    assert f.remaining_ms == pytest.approx(2.1, abs=TOL)
    assert f.rate == pytest.approx(6.3, abs=TOL)
    assert f.rate_unit == "ms/week"
    assert f.ceiling_speedup == pytest.approx(1 / 0.79, rel=1e-12)


def test_rate_without_a_baseline_is_a_share_per_week() -> None:
    f = amdahl.figures(0.21, 10, cost_weeks=3)
    assert f.rate == pytest.approx(0.063, abs=1e-9)
    assert f.rate_unit == "fraction/week"
    assert f.saving_ms is None
    assert f.new_ms is None


def test_infinite_k_removes_the_target_entirely() -> None:
    f = amdahl.figures(0.18, math.inf, baseline_ms=100)
    assert f.k == "inf"
    assert f.new_ms == pytest.approx(82.0, abs=TOL)
    assert f.remaining_ms == 0
    assert f.headroom_captured == 1
    assert f.speedup == pytest.approx(f.ceiling_speedup or 0, rel=1e-12)


def test_whole_step_target_has_no_ceiling() -> None:
    f = amdahl.figures(1.0, 4)
    assert f.ceiling_speedup is None
    assert f.speedup == pytest.approx(4.0)


def test_model_b_is_1_5625_not_the_seeds_1_55() -> None:
    """Seed Part 3 q11 says 1.55×; 1 / (0.6 + 0.04) is 1.5625."""
    assert amdahl.speedup(0.40, 10) == pytest.approx(1.5625, rel=1e-12)


def test_plan_figures_from_summed_ms_savings() -> None:
    """Seed Part 1 q5: 2× needs three 10× targets; all kernels at 10× → 30.7 ms; at zero → 23.0 ms."""
    kernels = {
        "gemm_qkv": 34.0,
        "attention_softmax": 21.0,
        "matmul_out": 12.0,
        "layernorm": 6.0,
        "elementwise_gelu": 4.0,
    }
    saving = {name: ms * (1 - 1 / 10) for name, ms in kernels.items()}
    two = amdahl.combined(100, [saving["gemm_qkv"], saving["attention_softmax"]])
    assert two[0] == pytest.approx(50.5, abs=TOL)
    assert round(two[1], 2) == 1.98
    gelu = amdahl.combined(100, [saving["gemm_qkv"], saving["attention_softmax"], saving["elementwise_gelu"]])
    assert gelu[0] == pytest.approx(46.9, abs=TOL)
    layernorm = amdahl.combined(100, [saving["gemm_qkv"], saving["attention_softmax"], saving["layernorm"]])
    assert layernorm[0] == pytest.approx(45.1, abs=TOL)
    assert round(layernorm[1], 3) == 2.217
    all_ten = amdahl.combined(100, list(saving.values()))
    assert all_ten[0] == pytest.approx(30.7, abs=TOL)
    assert round(all_ten[1], 2) == 3.26
    all_zero = amdahl.combined(100, list(kernels.values()))
    assert all_zero[0] == pytest.approx(23.0, abs=TOL)
    assert round(all_zero[1], 2) == 4.35


def test_part_two_device_activity() -> None:
    """44,242 ns of 3,606,501 ns: 1.2% of device activity; 10× → 3,566,683 ns, 1.011×, 39.8 µs saved (1.1%)."""
    p = 44_242 / 3_606_501
    assert p == pytest.approx(0.012267, abs=1e-6)
    f = amdahl.figures(p, 10, baseline_ms=3.606501)
    assert f.new_ms == pytest.approx(3.5666832, abs=1e-6)
    assert round(f.speedup, 3) == 1.011
    assert f.saving_ms == pytest.approx(0.0398178, abs=1e-6)
    assert f.saving_fraction == pytest.approx(0.011040, abs=1e-5)
