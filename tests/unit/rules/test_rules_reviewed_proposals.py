"""Proposals brought the way teams bring them, whose answers a reviewer would not have signed.

Each test names what was wrong; figures are re-derived here from the seeds' formulas and the default policy's prices,
never read back from the engine.
"""

from __future__ import annotations

import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, review

GPU_YEAR_USD = 2.0 * 8760  # the default policy's $2 per GPU-hour, around the clock

# --- a memory fix whose kernel is slower ------------------------------------------------------------------------------

# An FP8 KV cache: 180 GB → 120 GB on 141 GB devices with 8 GB kept free (133 GB usable): 2 → 1 GPU per replica, but
# the attention that dequantizes it is 0.9× as fast on its 25% of the step.
_FP8_KV = {
    "target": "attention",
    "p": 0.25,
    "k": 0.9,
    "baseline_ms": 50,
    "cost_weeks": 6,
    "scope": {"method": "timeline"},
    "goal": {"memory_required_gb": 180, "memory_after_gb": 120, "device_memory_gb": 141, "memory_headroom_gb": 8},
}
_SLOWER = 0.25 * (1 / 0.9 - 1)  # the step gets this much longer: 2.78%
_CAPACITY = 1 - (1 - 0.5) * (1 + _SLOWER)  # 48.6% of the capacity, not the 50% of devices alone


def test_a_memory_fix_with_a_slower_kernel_never_says_the_step_is_faster() -> None:
    """Without a fleet the statement said "48.6% of the capacity with the faster step" for a step 2.8% longer."""
    evaluation = review(_FP8_KV)
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "memory_fit"
    assert finding(evaluation, "memory_fit").figures["capacity_saving"] == pytest.approx(_CAPACITY)
    assert "faster" not in evaluation.statement
    assert f"{_CAPACITY * 100:.1f}% of capacity net of a {_SLOWER * 100:.1f}% longer step" in evaluation.statement
    assert_one_sentence(evaluation.statement)


def test_a_memory_fix_on_a_fleet_says_why_its_gpus_are_fewer_than_the_devices_freed() -> None:
    """The statement said `freeing 50% of the GPUs that serve it: 194 GPU-equivalents on 400 GPUs`, which does not add
    up (50% of 400 is 200) unless it says the longer step takes back 2.8%: 400 · 48.6% = 194."""
    evaluation = review({**_FP8_KV, "flags": {"fleet_gpus": 400, "recurring": True}})
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "memory_fit"
    gpus = 400 * _CAPACITY
    assert finding(evaluation, "memory_fit").figures["gpu_equivalents"] == pytest.approx(gpus)
    assert f"freeing 50% of the GPUs that serve it, {_CAPACITY * 100:.1f}% of capacity" in evaluation.statement
    assert f"{gpus:.0f} GPU-equivalents on 400 GPUs" in evaluation.statement
    assert f"${gpus * GPU_YEAR_USD / 1e6:.1f}M over 12 months" in evaluation.statement
    assert_one_sentence(evaluation.statement)


def test_a_memory_fix_with_a_faster_step_counts_both() -> None:
    """2 → 1 GPU per replica and a 1.2× attention on 10%: 1 − 0.5·(1 − 0.1/6) of the capacity, said as such."""
    saving = 0.1 * (1 - 1 / 1.2)
    capacity = 1 - 0.5 * (1 - saving)
    evaluation = review({**_FP8_KV, "p": 0.1, "k": 1.2})
    assert evaluation.verdict == "fund"
    assert f"{capacity * 100:.1f}% of capacity with a {saving * 100:.1f}% shorter step" in evaluation.statement
    assert_one_sentence(evaluation.statement)


# --- a target under the floor, in a step that is mostly copies ----------------------------------------------------

_COPY_BOUND = {
    "target": "bias_add",
    "p": 0.005,
    "k": 4,
    "baseline_ms": 200,
    "cost_weeks": 2,
    "scope": {"method": "timeline"},
    "breakdown": [
        {"name": "H2D copy", "ms": 110, "kind": "copy"},
        {"name": "hipMalloc", "ms": 50, "kind": "alloc"},
        {"name": "gemm", "ms": 30},
        {"name": "bias_add", "ms": 1},
        {"name": "softmax", "ms": 9},
    ],
}


def test_a_redirect_names_one_alternative_in_the_statement_and_in_stage_four() -> None:
    """bias_add (0.5% of 200 ms) at 4× saves 0.375%: the statement sends the effort to the 80% (160 ms) that is copies
    and allocations, but stage 4 answered "gemm is 15% … rank targets by share first", a smaller alternative."""
    evaluation = review(_COPY_BOUND)
    assert evaluation.verdict == "redirect"
    assert "the 80% that is allocation and host↔device copy" in evaluation.statement
    bigger = finding(evaluation, "bigger_target")
    assert bigger.verdict == "redirect"
    assert bigger.figures["alternative_share"] == pytest.approx((110 + 50) / 200)
    assert bigger.figures["alternative_ms"] == pytest.approx(160)
    assert bigger.figures["largest_share"] == pytest.approx(30 / 200)
    stage = next(answer for answer in evaluation.reasoning if answer.stage == "alternative")
    assert "the 80% that is allocation and host↔device copy is where the effort belongs" in stage.answer
    assert "gemm at 15%" in stage.answer
    assert_one_sentence(stage.answer)


def test_a_target_under_the_floor_beside_a_larger_kernel_is_still_sent_to_that_kernel() -> None:
    """When the largest phase is a kernel bigger than the copies together, the redirect still offers the same k there:
    gemm 60 of 100 ms at 4× saves 45 ms, 55 ms and 1.818×."""
    breakdown = [
        {"name": "gemm", "ms": 60},
        {"name": "bias_add", "ms": 0.5},
        {"name": "softmax", "ms": 9.5},
        {"name": "H2D copy", "ms": 20, "kind": "copy"},
        {"name": "launch gaps", "ms": 10, "kind": "host"},
    ]
    evaluation = review({**_COPY_BOUND, "p": 0.005, "baseline_ms": 100, "breakdown": breakdown})
    assert evaluation.verdict == "redirect"
    bigger = finding(evaluation, "bigger_target")
    assert bigger.verdict == "redirect"
    assert bigger.figures["alternative"] == "gemm"
    assert bigger.figures["largest_new_ms"] == pytest.approx(100 - 60 * (1 - 1 / 4))
    assert f"the same 4× there gives {1 / (0.4 + 0.6 / 4):.3f}× (55 ms)" in bigger.message


# --- hand-written assembly in the product's own kernel, no fallback yet --------------------------------------------

_VENDOR_GEMM = {
    "title": "Hand asm HGEMM in the vendor BLAS",
    "target": "hgemm",
    "p": 0.3,
    "k": 1.1,
    "baseline_ms": 10,
    "cost_weeks": 3,
    "scope": {"method": "timeline"},
    "flags": {"portability": "hand_asm", "kernel_is_product": True},
}


def test_the_products_kernel_without_a_fallback_is_funded_if_one_ships_never_declined() -> None:
    """Seed 13's flip: the kernel is the product *and* sits behind a tested portable fallback. A library team saying
    "it is the product" without the fallback was declined on the per-run rate, 0.3·(1 − 1/1.1) = 2.73% over 3 + 2
    weeks = 0.55% a week, as if it were an application's asm; the one thing between it and funding is the fallback."""
    saving = 0.3 * (1 - 1 / 1.1)
    evaluation = review(_VENDOR_GEMM)
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "maintenance_cost"
    upkeep = finding(evaluation, "maintenance_cost")
    assert upkeep.figures["maintenance_weeks"] == pytest.approx(2.0)  # the policy's 2 a year × 1 arch × 12 months
    assert upkeep.figures["total_weeks"] == pytest.approx(5.0)
    assert evaluation.statement.startswith("Fund on the condition that a tested portable fallback ships with it")
    assert f"the kernel is the product, so {saving * 100:.1f}% is worth 5 engineer-weeks" in evaluation.statement
    assert finding(evaluation, "rate_of_return").effect == "info"  # 0.55% a week is not the bar for a product kernel
    assert finding(evaluation, "vendor_product").verdict == "fund"
    assert "once the assembly sits behind a tested portable fallback" in finding(evaluation, "vendor_product").message
    assert_one_sentence(evaluation.statement)


def test_the_products_kernel_behind_its_fallback_is_still_funded() -> None:
    evaluation = review({**_VENDOR_GEMM, "flags": {**_VENDOR_GEMM["flags"], "portable_fallback": True}})
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "vendor_product"
    assert "sits behind a tested portable fallback, so 2.7% is worth owning" in evaluation.statement


def test_application_asm_without_the_product_flag_is_still_declined_on_its_upkeep() -> None:
    """Seed 13's usual case: 2.73% for 3 + 2 weeks is 0.55% a week, under the 1% bar."""
    evaluation = review({**_VENDOR_GEMM, "flags": {"portability": "hand_asm"}})
    assert evaluation.verdict == "decline"
    assert finding(evaluation, "maintenance_cost").figures["rate_with_maintenance"] == pytest.approx(
        0.3 * (1 - 1 / 1.1) / 5
    )


# --- a collective's wait in its ceiling -------------------------------------------------------------------------------

# An all-reduce at 18% of an 850 ms step, 7% of it waiting for the slowest of 8 ranks: 1.5× acts on the 11% transfer.
_ALLREDUCE = {
    "target": "nccl_allreduce",
    "p": 0.18,
    "k": 1.5,
    "baseline_ms": 850,
    "cost_weeks": 2,
    "flags": {"barrier": {"ranks": 8, "target_wait": 0.07}},
}


def test_a_collectives_ceiling_is_its_transfers_not_its_wait() -> None:
    """The ceiling counted the wait a faster transfer never shortens: 697 ms (1.22×), 20.4% captured, 121.8 ms left.
    On the 11% transfer: floor 850 × 0.89 = 756.5 ms (1 / 0.89 = 1.124×), 1 − 1/1.5 = 33.3% captured, 850 × 0.11 / 1.5
    = 62.3 ms left; the saving is unchanged, 850 × 0.11 × (1 − 1/1.5) = 31.2 ms."""
    transfer = 0.18 - 0.07
    evaluation = review(_ALLREDUCE)
    figures = evaluation.amdahl
    assert figures.ceiling_speedup == pytest.approx(1 / (1 - transfer))
    assert figures.headroom_captured == pytest.approx(1 - 1 / 1.5)
    assert figures.remaining_ms == pytest.approx(850 * transfer / 1.5)
    assert figures.saving_ms == pytest.approx(850 * transfer * (1 - 1 / 1.5))
    ceiling = finding(evaluation, "ceiling")
    assert ceiling.figures["floor_ms"] == pytest.approx(850 * (1 - transfer))
    assert ceiling.message == (
        "At 1.5× nccl_allreduce's transfer (11% of the step) captures 33.3% of its headroom, leaving 62.3 ms for any "
        "follow-up, and even at zero the step stops at 756.5 ms (1.124×), the 7% spent waiting for the slowest rank "
        "untouched."
    )


# --- printed parts add up ---------------------------------------------------------------------------------------------


def test_printed_gpu_equivalents_add_up_to_the_printed_whole() -> None:
    """45 GPU-minutes × 2,000 starts a day take 45 × 2000 / 1440 = 62.5 GPU-equivalents out of the 4% × 5,000 = 200
    freed: printed half to even that read "take 62 … out of the 200 …, leaving 138" (or 137 with the float's
    137.4999…). Half up, and the remainder taken from the printed parts: 63 and 137, in both rules."""
    consumed, freed = 45 * 2000 / 1440, 0.04 * 5000
    assert consumed == 62.5
    evaluation = review(
        {
            "target": "step",
            "p": 0.04,
            "k": "inf",
            "cost_weeks": 2,
            "flags": {"fleet_gpus": 5000, "gpu_minutes_per_start": 45, "starts_per_day": 2000},
        }
    )
    taken, left = 63, 200 - 63
    recurring = finding(evaluation, "recurring_gpu_cost")
    assert f"take {taken} GPU-equivalents" in recurring.message
    assert (
        f"out of the {freed:.0f} GPU-equivalents the saving frees, leaving {left} GPU-equivalents." in recurring.message
    )
    assert (
        f"frees {freed:.0f} GPU-equivalents, {left} GPU-equivalents net"
        in finding(evaluation, "fleet_multiplication").message
    )
    assert recurring.figures["net_gpus"] == pytest.approx(freed - consumed)  # the figure stays exact


def test_an_unstated_cost_on_a_fleet_has_one_break_even() -> None:
    """4.5% (9% at 2×) on 1,000 GPUs frees 45 GPU-equivalents, 45 × 8,760 h × $2 = $788,400 a year, which pays for
    $788,400 / $5,000 = 157.68 engineer-weeks: unstated_cost said 157.6 (a bisection) beside fleet_multiplication's
    158. One figure, printed once: 157.7 in both."""
    exact = 45 * GPU_YEAR_USD / 5000
    assert exact == pytest.approx(157.68)
    evaluation = review(
        {"target": "rope", "p": 0.09, "k": 2, "flags": {"fleet_gpus": 1000}, "scope": {"method": "timeline"}}
    )
    unstated, fleet = finding(evaluation, "unstated_cost"), finding(evaluation, "fleet_multiplication")
    assert unstated.figures["break_even_weeks"] == pytest.approx(exact, rel=1e-12)
    assert fleet.figures["pays_for_weeks"] == pytest.approx(exact, rel=1e-12)
    assert "under 157.7 engineer-weeks" in unstated.message
    assert "it pays for up to 157.7 engineer-weeks" in fleet.message
