"""Every question of the seed "amdahl-exercise-solution" as a test with its exact figures and verdict.

Figures are re-derived, not copied: Part 3 q11's S = 1 / (0.6 + 0.04) = 1.5625 (the text's 1.55 is a slip).
"""

from __future__ import annotations

import msgspec
import pytest

from tests.unit.rules.helpers import SEED_BREAKDOWN, assert_one_sentence, finding, review
from worthit.rules.model import Phase, Proposal
from worthit.rules.plans import plan
from worthit.rules.policy import default_policy
from worthit.rules.portfolio import portfolio

ATTENTION = {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}
LAYERNORM = {"target": "layernorm", "p": 0.06, "k": 10, "baseline_ms": 100, "cost_weeks": 2}
TIGHT = 1e-9


# Part 1 — the synthetic inference step


def test_q1_attention_at_10x() -> None:
    """p = 0.21, k = 10 on 100 ms: 81.1 ms, S = 1 / 0.811 = 1.233×, 18.9 ms (18.9%) saved: fund."""
    evaluation = review(ATTENTION)
    a = evaluation.amdahl
    assert a.new_ms == pytest.approx(81.1, abs=TIGHT)
    assert a.speedup == pytest.approx(1 / 0.811, rel=TIGHT)
    assert round(a.speedup, 3) == 1.233
    assert a.saving_ms == pytest.approx(18.9, abs=TIGHT)
    assert a.saving_fraction == pytest.approx(0.189, abs=TIGHT)
    assert evaluation.verdict == "fund"
    assert "81.1 ms" in evaluation.statement
    assert "1.233×" in evaluation.statement


def test_q2_ceiling_90_percent_captured_2_1_ms_left() -> None:
    """The 10× captures 18.9 / 21 = 90% of the headroom; a follow-up fights over the last 2.1 ms."""
    ceiling = finding(review(ATTENTION), "ceiling")
    assert ceiling.figures["headroom_captured"] == pytest.approx(0.9, abs=TIGHT)
    assert ceiling.figures["remaining_ms"] == pytest.approx(2.1, abs=TIGHT)
    assert ceiling.figures["ceiling_speedup"] == pytest.approx(1 / 0.79, rel=TIGHT)
    assert "90%" in ceiling.message
    assert "2.1 ms" in ceiling.message


@pytest.mark.parametrize(("cost_weeks", "deciding"), [(2, "rate_of_return"), (4, "ceiling")])
def test_q2_further_2x_on_top_of_10x_is_declined(cost_weeks: float, deciding: str) -> None:
    """A further 2× on the 2.1 ms left (of the new 81.1 ms step) returns too little; at 4 weeks not even ∞× would."""
    evaluation = review(
        {
            "target": "attention_softmax",
            "p": 2.1 / 81.1,
            "k": 2,
            "prior_k": 10,
            "baseline_ms": 81.1,
            "cost_weeks": cost_weeks,
        }
    )
    assert evaluation.verdict == "decline"
    assert evaluation.deciding_rule == deciding
    ceiling = finding(evaluation, "ceiling")
    assert ceiling.figures["prior_headroom_captured"] == pytest.approx(0.9, abs=TIGHT)
    assert "fights over the last 2.1 ms" in ceiling.message
    assert evaluation.amdahl.saving_ms == pytest.approx(1.05, abs=TIGHT)


def test_q3_layernorm_and_the_rate_of_return() -> None:
    """layernorm 10×: 94.6 ms, 1.057×, 5.4 ms, 2.7 ms/week; attention 6.3 ms/week is 2.3× the return."""
    evaluation = review(LAYERNORM)
    a = evaluation.amdahl
    assert a.new_ms == pytest.approx(94.6, abs=TIGHT)
    assert round(a.speedup, 3) == 1.057
    assert a.saving_ms == pytest.approx(5.4, abs=TIGHT)
    assert a.rate == pytest.approx(2.7, abs=TIGHT)
    assert review(ATTENTION).amdahl.rate == pytest.approx(6.3, abs=TIGHT)
    proposals = [msgspec.convert(LAYERNORM, Proposal), msgspec.convert(ATTENTION, Proposal)]
    result = portfolio(proposals, default_policy())
    assert [entry.target for entry in result.entries] == ["attention_softmax", "layernorm"]
    assert result.top_ratio == pytest.approx(6.3 / 2.7, rel=TIGHT)
    assert "2.3× the return" in result.message


def test_q4_gemm_qkv_is_the_best_single_target() -> None:
    """gemm_qkv, the largest phase: 69.4 ms, 1.441×; bigger_target names it for a smaller proposal."""
    a = review({**ATTENTION, "target": "gemm_qkv", "p": 0.34}).amdahl
    assert a.new_ms == pytest.approx(69.4, abs=TIGHT)
    assert round(a.speedup, 3) == 1.441
    assert a.saving_ms == pytest.approx(30.6, abs=TIGHT)
    bigger = finding(review({**LAYERNORM, "breakdown": SEED_BREAKDOWN}), "bigger_target")
    assert bigger.figures["largest"] == "gemm_qkv"
    assert bigger.figures["largest_new_ms"] == pytest.approx(69.4, abs=TIGHT)
    assert bigger.figures["largest_speedup"] == pytest.approx(100 / 69.4, rel=TIGHT)
    assert "69.4 ms" in bigger.message
    assert "1.441×" in bigger.message


def test_q5_two_x_needs_three_targets() -> None:
    """Greedy 10×: 69.4 → 50.5 ms (1.98×, short of 50) → a third; any remaining kernel completes it."""
    result = plan([Phase(**phase) for phase in SEED_BREAKDOWN], target_speedup=2)
    assert result.reachable
    assert [step.phase for step in result.steps] == ["gemm_qkv", "attention_softmax", "matmul_out"]
    assert [step.new_ms for step in result.steps] == pytest.approx([69.4, 50.5, 39.7], abs=TIGHT)
    assert result.steps[0].saving_ms == pytest.approx(30.6, abs=TIGHT)
    assert result.steps[1].saving_ms == pytest.approx(18.9, abs=TIGHT)
    assert round(result.steps[1].speedup or 0, 3) == 1.980
    assert not result.steps[1].reached
    options = {option.phase: option for option in result.last_step_options}
    assert set(options) == {"matmul_out", "layernorm", "elementwise_gelu"}
    assert options["elementwise_gelu"].new_ms == pytest.approx(46.9, abs=TIGHT)
    assert round(options["elementwise_gelu"].speedup or 0, 3) == 2.132
    assert options["layernorm"].new_ms == pytest.approx(45.1, abs=TIGHT)
    assert round(options["layernorm"].speedup or 0, 3) == 2.217
    assert options["matmul_out"].new_ms == pytest.approx(39.7, abs=TIGHT)


def test_q5_ceilings_of_all_kernel_work() -> None:
    """All five kernels at 10×: 7.7 + 23.0 = 30.7 ms (3.26×); at zero: 23.0 ms (4.35×); left: copy and gaps."""
    result = plan([Phase(**phase) for phase in SEED_BREAKDOWN], target_speedup=2)
    assert result.all_at_k.new_ms == pytest.approx(30.7, abs=TIGHT)
    assert round(result.all_at_k.speedup or 0, 2) == 3.26
    assert result.all_at_zero.new_ms == pytest.approx(23.0, abs=TIGHT)
    assert round(result.all_at_zero.speedup or 0, 2) == 4.35
    assert [(item.name, item.ms) for item in result.left] == [("H2D copy", 18), ("host gaps", 5)]
    assert result.left_ms == pytest.approx(23.0, abs=TIGHT)


def test_q6_the_23_percent_that_is_not_kernel_time() -> None:
    """18 ms of H2D copy and 5 ms of host gaps are 23%: overlap or keep resident; graph capture or fusion."""
    evaluation = review({**ATTENTION, "breakdown": SEED_BREAKDOWN})
    nk = finding(evaluation, "non_kernel_time")
    assert nk.effect == "info"
    assert nk.figures["non_kernel_share"] == pytest.approx(0.23, abs=TIGHT)
    assert nk.figures["copy_ms"] == 18
    assert nk.figures["host_ms"] == 5
    for fix in ("streams, pinned memory, double buffering", "keep data resident", "graph", "fuse"):
        assert fix in nk.message
    assert_one_sentence(nk.message)


def test_q6_a_counter_profile_misses_the_23_percent() -> None:
    """The same share from counters, without the timeline, is remeasured; with it, it stands."""
    blind = review({**ATTENTION, "scope": {"method": "counters"}})
    assert blind.verdict == "remeasure"
    assert blind.deciding_rule == "counters_blind_spot"
    seen = review({**ATTENTION, "scope": {"method": "counters"}, "breakdown": SEED_BREAKDOWN})
    assert seen.verdict == "fund"


# Part 2 — real numbers, real disappointment

KERNEL_NS, DEVICE_NS = 44_242, 3_606_501
RUN = [
    {"name": "my_kernel", "ms": 0.014},
    {"name": "hipMemcpy", "ms": 62.6, "kind": "copy"},
    {"name": "hipMalloc", "ms": 22.0, "kind": "alloc"},
    {"name": "rest of the run", "ms": 15.386, "kind": "other"},
]
PART2 = {
    "target": "my_kernel",
    "p": KERNEL_NS / DEVICE_NS,
    "k": 10,
    "baseline_ms": DEVICE_NS / 1e6,
    "p_end_to_end": 0.00014,
    "scope": {"measured": "device_activity", "method": "timeline"},
}


def test_q7_share_of_device_activity() -> None:
    """44,242 ns of 3,606,501 ns of device activity is 1.2%."""
    evaluation = review(PART2)
    assert evaluation.amdahl.p == pytest.approx(0.012267, abs=1e-6)
    assert finding(evaluation, "amdahl").message.count("1.2%") == 1


def test_q8_ten_x_buys_forty_microseconds() -> None:
    """3,606,501 − 44,242 + 4,424.2 = 3,566,683.2 ns; S = 1.011×; 39,817.8 ns = 39.8 µs (1.1%) saved."""
    a = review(PART2).amdahl
    assert a.new_ms is not None
    assert a.saving_ms is not None
    assert a.new_ms * 1e6 == pytest.approx(DEVICE_NS - KERNEL_NS + KERNEL_NS / 10, abs=1e-3)
    assert a.new_ms * 1e6 == pytest.approx(3_566_683, abs=0.5)
    assert round(a.speedup, 3) == 1.011
    assert a.saving_ms * 1e6 == pytest.approx(39_817.8, abs=1e-3)
    assert round(a.saving_fraction, 3) == 0.011
    assert "39.8 µs" in finding(review(PART2), "amdahl").message


def test_q9_end_to_end_best_case_is_a_rounding_error() -> None:
    """Even infinitely fast, the kernel changes end-to-end time by 0.014%: under the 1% floor."""
    evaluation = review({**PART2, "k": "inf"})
    assert evaluation.verdict == "decline"
    dvr = finding(evaluation, "device_vs_run")
    assert dvr.figures["end_to_end_saving"] == pytest.approx(0.00014, rel=TIGHT)
    assert finding(evaluation, "noise_floor").overridden_by == "device_vs_run"
    assert "0.014%" in evaluation.statement


def test_q10_the_review_sentence() -> None:
    """Both shares, the rounding error, and the 85% of allocation and copy named as where the week should go."""
    evaluation = review({**PART2, "breakdown": RUN, "breakdown_scope": "end_to_end"})
    assert evaluation.verdict == "redirect"
    assert evaluation.statement == (
        "The kernel my_kernel is 1.2% of device activity and 0.014% of the profiled run, so even making it "
        "infinitely fast is a rounding error; the 84.6% that is allocation and host↔device copy is where the week "
        "should go."
    )
    assert finding(evaluation, "device_vs_run").figures["alternative_share"] == pytest.approx(0.846, abs=1e-9)
    assert_one_sentence(evaluation.statement)


def test_q9_the_summary_percentages_are_inclusive() -> None:
    """hipMemcpy's 62.6% PERCENT (INC) is inclusive: arithmetic on it is remeasured."""
    evaluation = review({"target": "hipMemcpy", "p": 0.626, "k": 2, "scope": {"method": "inclusive_summary"}})
    assert evaluation.verdict == "remeasure"
    assert evaluation.deciding_rule == "inclusive_percentages"
    assert "do" in evaluation.statement
    assert "100" in evaluation.statement


# Part 3 — when the arithmetic is not the whole answer

MODEL_A = {"target": "attention", "p": 0.02, "k": 10, "cost_weeks": 3, "scope": {"model": "model A"}}
MODEL_B = {"model": "model B", "p": 0.40}


def test_q11_strategic_model_b_justifies_the_work() -> None:
    """2% on model A, 40% on model B: S = 1 / (0.6 + 0.04) = 1.5625 on B, fund, "justified by model B, not model A"."""
    evaluation = review({**MODEL_A, "flags": {"strategic": MODEL_B}})
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "wrong_model"
    wrong = finding(evaluation, "wrong_model")
    assert wrong.figures["strategic_speedup"] == pytest.approx(1.5625, abs=1e-12)
    assert "justified by model B, not model A" in evaluation.statement
    assert finding(evaluation, "rate_of_return").overridden_by == "wrong_model"


def test_q11_flip_roadmap_item_slipped_twice() -> None:
    """The flip: model B slipped twice with no committed launch date: the justification drops, decline."""
    evaluation = review({**MODEL_A, "flags": {"strategic": {**MODEL_B, "slips": 2, "launch_committed": False}}})
    assert evaluation.verdict == "decline"
    assert evaluation.deciding_rule == "roadmap_risk"
    assert finding(evaluation, "wrong_model").overridden_by == "roadmap_risk"
    assert "slipped 2 times" in evaluation.statement


def test_q11_without_model_b_share_remeasure() -> None:
    """Naming the strategic model without its p: re-run the arithmetic there first."""
    evaluation = review({**MODEL_A, "flags": {"strategic": {"model": "model B"}}})
    assert evaluation.verdict == "remeasure"
    assert evaluation.deciding_rule == "wrong_model"


FLEET = {"target": "gemm", "p": 0.1, "k": 2, "cost_weeks": 4, "flags": {"fleet_gpus": 20_000}}


def test_q12_five_percent_on_20000_gpus() -> None:
    """5% of 20,000 GPUs is 1,000 GPU-equivalents, recurring: $17.52M a year at $2/GPU-hour vs $20k: fund."""
    evaluation = review(FLEET)
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "fleet_multiplication"
    fleet = finding(evaluation, "fleet_multiplication").figures
    assert fleet["gpu_equivalents"] == pytest.approx(1000, rel=TIGHT)
    assert fleet["annual_value_usd"] == pytest.approx(1000 * 2.0 * 8760, rel=TIGHT)
    assert fleet["horizon_value_usd"] == pytest.approx(17_520_000, rel=TIGHT)
    assert fleet["engineering_cost_usd"] == pytest.approx(20_000, rel=TIGHT)
    assert fleet["payback_months"] == pytest.approx(20_000 / (17_520_000 / 12), rel=TIGHT)
    assert "1,000 GPU-equivalents" in evaluation.statement


def test_q12_fleet_carries_a_poor_per_run_rate() -> None:
    """0.5% on 20,000 GPUs over 10 weeks is under min_rate per run, but 100 GPU-equivalents pay for it."""
    evaluation = review({**FLEET, "p": 0.01, "k": 2, "cost_weeks": 10}, noise_floor=0.001)
    assert finding(evaluation, "rate_of_return").overridden_by == "fleet_multiplication"
    assert evaluation.verdict == "fund"


@pytest.mark.parametrize(
    ("slo", "verdict"),
    [
        ({"p99_ms": 50, "tail_risk": True}, "fund_if"),
        ({"p99_ms": 50}, "fund_if"),
        ({"p99_ms": 50, "p99_measured_worse": True}, "decline"),
    ],
)
def test_q12_flip_latency_slo_service(slo: dict[str, object], verdict: str) -> None:
    """The flip: on a latency-SLO service the p99 decides: measure it (fund_if), decline when measured worse."""
    evaluation = review({**FLEET, "flags": {"fleet_gpus": 20_000, "latency_slo": slo}})
    assert evaluation.verdict == verdict
    assert evaluation.deciding_rule == "tail_latency"
    assert verdict != "fund_if" or "distribution, not the mean" in evaluation.statement


ASM = {"target": "gemm_asm", "p": 0.06, "k": 2, "cost_weeks": 2, "flags": {"portability": "hand_asm"}}


def test_q13_three_percent_via_hand_asm_is_declined() -> None:
    """3% for 2 weeks is 1.5%/week on paper; with 2 weeks of upkeep a year it is 0.75%/week: decline."""
    evaluation = review(ASM)
    assert evaluation.amdahl.saving_fraction == pytest.approx(0.03, rel=TIGHT)
    assert evaluation.verdict == "decline"
    assert evaluation.deciding_rule == "maintenance_cost"
    figures = finding(evaluation, "maintenance_cost").figures
    assert figures["total_weeks"] == pytest.approx(4, rel=TIGHT)
    assert figures["rate_with_maintenance"] == pytest.approx(0.0075, rel=TIGHT)
    assert "not 2" in evaluation.statement


def test_q13_flip_vendor_library_kernel_with_portable_fallback() -> None:
    """The flip: the kernel is the product, behind a tested portable fallback: maintenance lifted, fund."""
    flags = {"portability": "hand_asm", "kernel_is_product": True, "portable_fallback": True}
    evaluation = review({**ASM, "flags": flags})
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "vendor_product"
    assert finding(evaluation, "maintenance_cost").overridden_by == "vendor_product"
    assert "3%" in evaluation.statement


STRAGGLER = {"target": "straggler", "p": 0.02, "k": 10, "scope": {"measured": "rank"}}


def test_q14_straggler_on_a_barrier_critical_path_remeasure() -> None:
    """2% on the critical path of an 8-rank barrier is paid by all ranks: remeasure across the collective."""
    evaluation = review({**STRAGGLER, "flags": {"barrier": {"ranks": 8}}})
    assert evaluation.verdict == "remeasure"
    assert evaluation.deciding_rule == "barrier_denominator"
    assert finding(evaluation, "barrier_denominator").figures["rank_time_paid"] == pytest.approx(0.16, rel=TIGHT)
    assert "--rccl-trace" in evaluation.statement
    assert "NCCL" in evaluation.statement


def test_q14_off_the_critical_path_the_step_saves_nothing() -> None:
    """The same 2% off the critical path runs on a rank that waits for the slowest: 10× faster, that rank waits
    longer and the step, which the slowest rank sets, saves nothing — a redirect to the slowest rank's compute, not a
    fund on a saving the step cannot see. Slower, it is counted in full (the rank's slack is not stated)."""
    off = review({**STRAGGLER, "baseline_ms": 100, "flags": {"barrier": {"ranks": 8, "critical_path": False}}})
    assert off.verdict == "redirect"
    assert off.deciding_rule == "barrier_denominator"
    assert off.amdahl.saving_fraction == 0
    assert off.amdahl.new_ms == 100
    assert off.amdahl.ceiling_speedup == 1
    figures = finding(off, "barrier_denominator").figures
    assert figures["longer_wait_ms"] == pytest.approx(100 * 0.02 * 0.9, rel=TIGHT)  # 1.8 ms more waiting
    assert "1.8 ms more" in off.statement
    assert "saves nothing" in off.statement
    slower = review({**STRAGGLER, "k": 0.5, "flags": {"barrier": {"ranks": 8, "critical_path": False}}})
    assert slower.amdahl.saving_fraction == pytest.approx(-0.02, rel=TIGHT)


def test_q14_flip_profiled_collectively() -> None:
    """With the collective profiled, the 2% on the critical path is judged on its arithmetic: fund."""
    profiled = review({**STRAGGLER, "flags": {"barrier": {"ranks": 8, "wait_fraction": 0.3}}})
    assert profiled.verdict == "fund"
    assert finding(profiled, "barrier_denominator").effect == "info"
