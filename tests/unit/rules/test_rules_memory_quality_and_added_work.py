"""Proposals that trade more than time: memory the change frees, a quality gate, work the change
adds, GPU time it costs on every start, missing inputs asked for, and statements that stay true.

Each case is one easily answered wrongly (a funded quality regression, a speculative "2.2×" taken at its word, a
capacity fix redirected as a capacity problem); figures are re-derived here from the policy's prices and the
formulas written in the rules' docstrings, not read back from the engine.
"""

from __future__ import annotations

import math

import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, review

GPU_HOUR = 2.0
GPU_YEAR_USD = GPU_HOUR * 8760  # the default policy's $2 per GPU-hour, around the clock
WEEK_USD = 5000.0


# --- a quality gate --------------------------------------------------------------------------------------------------


def test_a_quantization_that_fails_its_quality_gate_is_not_funded_on_fleet_money() -> None:
    """INT8 attention 1.6× on 40% of the step, 4,000 GPUs: $10.5M a year, but BLEU falls 0.8 against a 0.25 gate."""
    evaluation = review(
        {
            "target": "attention_int8",
            "p": 0.4,
            "k": 1.6,
            "cost_weeks": 5,
            "flags": {"fleet_gpus": 4000},
            "quality": {"metric": "BLEU", "baseline": 34.1, "candidate": 33.3, "max_regression": 0.25},
        }
    )
    saving = 0.4 * (1 - 1 / 1.6)
    assert finding(evaluation, "fleet_multiplication").figures["annual_value_usd"] == pytest.approx(
        4000 * saving * GPU_YEAR_USD
    )
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "quality_gate"
    gate = finding(evaluation, "quality_gate")
    assert gate.stage == "worth"
    assert gate.figures["regression"] == pytest.approx(34.1 - 33.3)
    assert gate.figures["recover_to"] == pytest.approx(34.1 - 0.25)
    for words in ("BLEU recovers to at least 33.85", "falls 0.8 points", "0.25-point gate", "cannot ship"):
        assert words in evaluation.statement
    worth = next(stage for stage in evaluation.reasoning or () if stage.stage == "worth")
    assert worth.answer == evaluation.statement  # --explain shows it deciding at the worth stage
    assert_one_sentence(evaluation.statement)


def test_a_failing_gate_on_work_that_does_not_pay_is_declined() -> None:
    """Perplexity (lower is better) rises 0.4 against 0.1 on a 3% kernel for 6 weeks: decline, naming both."""
    evaluation = review(
        {
            "target": "fp8_mlp",
            "p": 0.03,
            "k": 1.5,
            "cost_weeks": 6,
            "quality": {
                "metric": "perplexity",
                "baseline": 5.2,
                "candidate": 5.6,
                "max_regression": 0.1,
                "higher_is_better": False,
            },
        }
    )
    assert evaluation.verdict == "decline"
    assert evaluation.deciding_rule == "quality_gate"
    assert finding(evaluation, "quality_gate").figures["regression"] == pytest.approx(0.4)
    assert "perplexity rises 0.4 points (5.2 → 5.6)" in evaluation.statement
    assert "quality gate" in evaluation.statement
    assert "1%" in evaluation.statement  # 3% × (1 − 1/1.5) saved


def test_a_regression_inside_the_gate_leaves_the_decision_to_the_money() -> None:
    """0.1 points lost against a 0.3 gate: info, and the fleet case funds it."""
    evaluation = review(
        {
            "target": "gemm_fp8",
            "p": 0.3,
            "k": 1.5,
            "cost_weeks": 3,
            "flags": {"fleet_gpus": 1000},
            "quality": {"metric": "accuracy", "baseline": 80.0, "candidate": 79.9, "max_regression": 0.3},
        }
    )
    assert evaluation.verdict == "fund"
    assert finding(evaluation, "quality_gate").effect == "info"


# --- added work ------------------------------------------------------------------------------------------------------


def test_speculative_decoding_is_judged_at_its_end_to_end_k_not_tokens_per_pass() -> None:
    """γ = 3, α = 0.65, draft 0.2, verify 1.35: 2.35 tokens per pass for 1.95 steps, 1.2×; "2.2×" would fund."""
    raw = {"target": "decode", "p": 0.9, "k": 2.2, "baseline_ms": 1200, "cost_weeks": 16}
    alpha, gamma, draft, verify = 0.65, 3, 0.2, 1.35
    tokens = (1 - alpha ** (gamma + 1)) / (1 - alpha)
    k = tokens / (gamma * draft + verify)
    assert tokens == pytest.approx(2.34712, rel=1e-4)
    assert k == pytest.approx(1.20366, rel=1e-4)
    assert review(raw).verdict == "fund"  # at the stated 2.2×: 49% for 16 weeks
    spec = {"draft_tokens": gamma, "acceptance": alpha, "draft_cost": draft, "verify_cost": verify}
    evaluation = review(raw | {"added_work": {"speculative": spec}})
    saving = 0.9 * (1 - 1 / k)
    assert evaluation.amdahl.saving_fraction == pytest.approx(saving)
    assert saving / 16 < 0.01  # under the policy's 1% per engineer-week
    assert evaluation.verdict == "decline"
    assert evaluation.deciding_rule == "rate_of_return"
    added = finding(evaluation, "added_work")
    assert added.figures["effective_k"] == pytest.approx(k)
    assert added.figures["expected_tokens"] == pytest.approx(tokens)
    assert "1.2× faster end to end, not 2.2×" in added.message
    assert "16 engineer-weeks for 15.2% of the step" in evaluation.statement


def test_an_added_dequantize_comes_out_of_the_speedup() -> None:
    """A 30 ms GEMM of a 120 ms step at 2.5×, plus 4 ms of dequantize: 30 / (12 + 4) = 1.875× end to end."""
    evaluation = review(
        {
            "target": "gemm_int4",
            "p": 0.25,
            "k": 2.5,
            "baseline_ms": 120,
            "cost_weeks": 2,
            "added_work": {"phases": [{"name": "dequantize", "ms": 4}]},
        }
    )
    k = 30 / (30 / 2.5 + 4)
    assert evaluation.amdahl.k == pytest.approx(k)
    assert evaluation.amdahl.new_ms == pytest.approx(120 - 30 + 16)
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "added_work"
    assert "1.88× faster end to end, not 2.5×" in evaluation.statement
    assert "the 4 ms of dequantize it adds" in evaluation.statement


def test_added_work_that_eats_the_whole_saving_is_declined() -> None:
    """8 ms of a 100 ms step at 3× is 2.67 ms; 6 ms of repacking added makes it 8.67 ms: slower, decline."""
    evaluation = review(
        {
            "target": "small_gemm",
            "p": 0.08,
            "k": 3,
            "baseline_ms": 100,
            "cost_weeks": 1,
            "added_work": {"phases": [{"name": "repack", "ms": 6}]},
        }
    )
    assert evaluation.verdict == "decline"
    assert finding(evaluation, "added_work").figures["effective_k"] == pytest.approx(8 / (8 / 3 + 6))
    assert evaluation.amdahl.saving_fraction < 0


# --- GPU time the change costs on every start -------------------------------------------------------------------------


def test_a_compile_that_costs_more_gpu_time_per_start_than_it_saves_is_declined() -> None:
    """800 GPUs, 5% per step frees 40 GPU-equivalents; 50 GPU-minutes × 1,800 starts a day take 62.5: net −22.5."""
    evaluation = review(
        {
            "target": "autotuned_graph",
            "p": 1.0,
            "k": 1 / 0.95,
            "cost_weeks": 1,
            "flags": {"fleet_gpus": 800, "gpu_minutes_per_start": 50, "starts_per_day": 1800, "recurring": True},
        }
    )
    freed, taken = 800 * 0.05, 50 * 1800 / 1440
    assert taken == pytest.approx(62.5)
    assert evaluation.verdict == "decline"
    cost = finding(evaluation, "recurring_gpu_cost")
    assert cost.stage == "cost"
    assert cost.figures["freed_gpus"] == pytest.approx(freed)
    assert cost.figures["net_gpus"] == pytest.approx(freed - taken)
    assert cost.figures["consumed_usd_per_year"] == pytest.approx(taken * GPU_YEAR_USD)
    # 62.5 printed half up, and the loss from the printed figures: 63 − 40 = 23 (not "take 62 … loses 23")
    assert "50 GPU-minutes on each of 1,800 starts a day take 63 GPU-equivalents" in evaluation.statement
    assert "loses 23 GPU-equivalents of capacity overall" in evaluation.statement
    assert "of capacity overall" in evaluation.statement
    assert "frees 40 GPU-equivalents" in evaluation.statement
    assert_one_sentence(evaluation.statement)


def test_start_cost_without_a_fleet_funds_only_above_the_break_even_fleet() -> None:
    """12 GPU-minutes × 300 starts = 2.5 GPU-equivalents; 4% saved: fund if the fleet has (2.5 + eng.)/0.04 GPUs."""
    evaluation = review(
        {
            "target": "step",
            "p": 0.4,
            "k": 1 / 0.9,
            "cost_weeks": 2,
            "flags": {"gpu_minutes_per_start": 12, "starts_per_day": 300},
        }
    )
    saving = 0.4 * 0.1
    needed = (12 * 300 / 1440 + 2 * WEEK_USD / GPU_YEAR_USD) / saving
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "recurring_gpu_cost"
    assert finding(evaluation, "recurring_gpu_cost").figures["break_even_fleet_gpus"] == pytest.approx(needed)
    assert f"at least {round(needed)} GPUs" in evaluation.statement


def test_a_fleet_nobody_said_recurs_is_not_called_recurring() -> None:
    """No `recurring`, no `run_days`: the horizon's value is an assumption, said so; `recurring: true` says it."""
    raw = {"target": "attn", "p": 0.1, "k": 2, "cost_weeks": 2, "flags": {"fleet_gpus": 500}}
    unsaid = review(raw)
    assert "recurring" not in unsaid.statement
    assert "a year if the fleet keeps running it" in unsaid.statement
    said = review(raw | {"flags": {"fleet_gpus": 500, "recurring": True}})
    assert "a year and recurring" in said.statement


def test_a_one_off_job_of_unstated_length_funds_on_its_break_even_days() -> None:
    """A one-off job on 2,000 GPUs saving 3% frees 60 GPU-equivalents, $2,880 a day, against $40k: 13.9 days."""
    evaluation = review(
        {"target": "attn", "p": 0.06, "k": 2, "cost_weeks": 8, "flags": {"fleet_gpus": 2000, "recurring": False}}
    )
    per_day = 2000 * 0.03 * GPU_HOUR * 24
    days = 8 * WEEK_USD / per_day
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "fleet_multiplication"
    assert finding(evaluation, "fleet_multiplication").figures["break_even_days"] == pytest.approx(days)
    assert "runs at least 14 days" in evaluation.statement
    assert "recurring" not in evaluation.statement


# --- memory the proposal frees ----------------------------------------------------------------------------------------

_KV_GOAL = {"memory_required_gb": 150, "memory_after_gb": 88, "device_memory_gb": 96}


def test_a_kv_cache_that_brings_the_need_under_capacity_is_funded_on_what_fitting_frees() -> None:
    """150 GB needed on 96 GB GPUs is 2 per replica; an FP8 KV cache brings it to 88 GB, 1 per replica: not a
    capacity problem to redirect, but half the serving GPUs freed (with no speedup of its own)."""
    raw = {"target": "kv_cache", "p": 0.2, "k": 1.0, "cost_weeks": 5, "goal": _KV_GOAL}
    before = review({**raw, "goal": {"memory_required_gb": 150, "device_memory_gb": 96}})
    assert before.verdict == "redirect"  # without the need after the change: a capacity problem, as before
    evaluation = review(raw)
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "memory_fit"
    fit = finding(evaluation, "memory_fit")
    assert (fit.figures["gpus_before"], fit.figures["gpus_after"]) == (2, 1)
    assert fit.figures["memory_saving"] == pytest.approx(0.5)
    assert finding(evaluation, "resource_goal").effect == "info"
    assert finding(evaluation, "noise_floor").overridden_by == "memory_fit"  # 0% per run, carried by fitting
    for words in ("from 150 GB to 88 GB", "1 GPU of a 96 GB device instead of 2", "freeing 50% of the GPUs"):
        assert words in evaluation.statement
    assert "capacity problem no speedup fixes" not in evaluation.statement


def test_a_memory_fix_on_a_fleet_is_priced_as_the_gpus_it_frees() -> None:
    """300 GPUs, 2 → 1 per replica and a 1.2× attention on 10%: 1 − 0.5·(1 − 0.1/6) of the fleet freed."""
    evaluation = review(
        {
            "target": "attention",
            "p": 0.1,
            "k": 1.2,
            "cost_weeks": 8,
            "flags": {"fleet_gpus": 300, "recurring": True},
            "goal": _KV_GOAL,
        }
    )
    capacity = 1 - 0.5 * (1 - 0.1 * (1 - 1 / 1.2))
    assert evaluation.verdict == "fund"
    fleet = finding(evaluation, "fleet_multiplication")
    assert fleet.figures["gpu_equivalents"] == pytest.approx(300 * capacity)
    assert fleet.figures["annual_value_usd"] == pytest.approx(300 * capacity * GPU_YEAR_USD)
    assert f"{math.floor(300 * capacity + 0.5)} GPU-equivalents on 300 GPUs" in evaluation.statement  # half up


def test_memory_that_fits_already_decides_nothing_and_is_never_called_uncheckable() -> None:
    """60 GB needed on 141 GB: memory fits; the reasoning says so, never "cannot be checked"."""
    evaluation = review(
        {
            "target": "gemm",
            "p": 0.3,
            "k": 2,
            "cost_weeks": 2,
            "goal": {"memory_required_gb": 60, "memory_after_gb": 45, "device_memory_gb": 141},
        }
    )
    assert evaluation.verdict == "fund"
    assert finding(evaluation, "memory_fit").effect == "info"
    goal = finding(evaluation, "resource_goal")
    assert (
        goal.message
        == "The 60 GB the execution needs already fits on a 141 GB device, so memory is not what decides this change."
    )
    text = " ".join(stage.answer for stage in evaluation.reasoning or ()) + " ".join(
        f.message for f in evaluation.findings
    )
    assert "cannot be checked" not in text
    plain = review(
        {
            "target": "gemm",
            "p": 0.3,
            "k": 2,
            "cost_weeks": 2,
            "goal": {"memory_required_gb": 60, "device_memory_gb": 141},
        }
    )
    assert "cannot be checked" not in " ".join(f.message for f in plain.findings)


def test_a_change_that_still_does_not_fit_with_the_headroom_wanted_is_redirected() -> None:
    """170 → 150 GB on 141 GB GPUs with 8 GB headroom (133 usable): still 2 per replica, a capacity problem."""
    evaluation = review(
        {
            "target": "recompute",
            "p": 0.1,
            "k": 1.0,
            "cost_weeks": 3,
            "goal": {
                "memory_required_gb": 170,
                "memory_after_gb": 150,
                "device_memory_gb": 141,
                "memory_headroom_gb": 8,
            },
        }
    )
    assert evaluation.verdict == "redirect"
    assert evaluation.deciding_rule == "resource_goal"
    assert finding(evaluation, "resource_goal").figures["gpus_for_memory"] == 2
    assert "(133 GB usable), and after this change still 150 GB" in evaluation.statement


# --- missing inputs are questions -------------------------------------------------------------------------------------


def test_a_clean_timeline_with_no_cost_funds_only_under_the_break_even_weeks() -> None:
    """30% at 2× of an 80 ms step saves 15% (12 ms); at 1% (0.8 ms) per week it pays up to 15 weeks: fund_if."""
    raw = {
        "target": "gemm_qkv",
        "p": 0.3,
        "k": 2,
        "baseline_ms": 80,
        "scope": {"measured": "step", "method": "timeline", "timing": "device_events"},
    }
    evaluation = review(raw)
    weeks = 0.3 * (1 - 1 / 2) / 0.01
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "unstated_cost"
    assert finding(evaluation, "unstated_cost").figures["break_even_weeks"] == pytest.approx(weeks, rel=2e-3)
    assert "under 15 engineer-weeks: no cost was given" in evaluation.statement
    assert review(raw | {"cost_weeks": 14}).verdict == "fund"
    assert review(raw | {"cost_weeks": 16}).verdict == "decline"


def test_zero_upkeep_claimed_for_hand_assembly_is_replaced_by_the_policys_and_said_so() -> None:
    """8% at 1.5× for 2 weeks, "0 weeks a year" of upkeep: the policy's 2 a year makes it 4 weeks, 0.67%/week."""
    flags = {"portability": "hand_asm", "maintenance_weeks_per_year": 0}
    evaluation = review({"target": "softmax_asm", "p": 0.08, "k": 1.5, "cost_weeks": 2, "flags": flags})
    saving = 0.08 * (1 - 1 / 1.5)
    upkeep = finding(evaluation, "maintenance_cost")
    assert upkeep.figures["maintenance_weeks"] == pytest.approx(2.0)
    assert upkeep.figures["upkeep_source"] == "policy_over_zero"
    assert upkeep.figures["rate_with_maintenance"] == pytest.approx(saving / 4)
    assert evaluation.verdict == "decline"
    assert "(2 a year × one architecture, the policy's figure, not the 0 claimed)" in evaluation.statement


def test_the_policys_upkeep_is_never_said_as_the_proposers_and_is_per_architecture() -> None:
    """No upkeep stated, 3 architectures: 2 a year × 3 over 12 months is the policy's, and the statement says so."""
    flags = {"portability": "vendor_specific", "architectures": 3, "fleet_gpus": 5000}
    evaluation = review({"target": "attn_asm", "p": 0.1, "k": 1.5, "cost_weeks": 4, "flags": flags})
    assert evaluation.verdict == "fund_if"
    assert finding(evaluation, "maintenance_cost").figures["maintenance_weeks"] == pytest.approx(2 * 3)
    assert "(2 a year × 3 architectures, the policy's figure)" in evaluation.statement
    given = review(
        {
            "target": "attn_asm",
            "p": 0.1,
            "k": 1.5,
            "cost_weeks": 4,
            "flags": flags | {"maintenance_weeks_per_year": 1},
        }
    )
    assert "(1 a year × 3 architectures)" in given.statement


# --- small untruths ---------------------------------------------------------------------------------------------------


def test_the_return_counts_the_upkeep_the_cost_stage_counts() -> None:
    """7.5 ms of a 50 ms step for 3 weeks + 1 week a year × 2 architectures: 1.5 ms per engineer-week, not 2.5."""
    flags = {"portability": "vendor_specific", "maintenance_weeks_per_year": 1, "architectures": 2}
    evaluation = review({"target": "gemm", "p": 0.3, "k": 2, "baseline_ms": 50, "cost_weeks": 3, "flags": flags})
    assert evaluation.amdahl.cost_weeks == pytest.approx(3 + 2)
    assert evaluation.amdahl.rate == pytest.approx(50 * 0.15 / 5)
    assert "1.5 ms per engineer-week, counting 2 weeks of upkeep" in finding(evaluation, "amdahl").message
    cost = next(stage for stage in evaluation.reasoning or () if stage.stage == "cost")
    assert cost.figures["cost_weeks"] == pytest.approx(5)


def test_a_range_of_k_is_quoted_as_a_range_never_its_midpoint() -> None:
    """21% at 5–10× of 100 ms: 81.1–83.2 ms (1.202–1.233×), 16.8–18.9%, 5.6–6.3 ms a week; 7.5× is nowhere."""
    evaluation = review(
        {"target": "attention_softmax", "p": 0.21, "k": {"low": 5, "high": 10}, "baseline_ms": 100, "cost_weeks": 3}
    )
    assert evaluation.verdict == "fund"
    low, high = 100 - 21 * (1 - 1 / 5), 100 - 21 * (1 - 1 / 10)
    assert (low, high) == (pytest.approx(83.2), pytest.approx(81.1))
    assert evaluation.statement == (
        "Making attention_softmax (21% of the step) 5–10× faster takes the step from 100 ms to 81.1–83.2 ms "
        "(1.202–1.233×), saving 16.8–18.9% of it, 5.6–6.3 ms per engineer-week."
    )
    assert "7.5" not in evaluation.statement


def test_unportable_cpu_code_is_at_risk_from_the_next_cpu_not_the_next_gpu() -> None:
    """AVX-512 tokenizer code on EPYC, no fallback: fund_if, and the risk named is the next CPU."""
    evaluation = review(
        {
            "target": "tokenizer_avx512",
            "p": 0.2,
            "k": 2,
            "cost_weeks": 2,
            "scope": {"device": "EPYC 9654"},
            "flags": {"portability": "vendor_specific"},
        }
    )
    assert evaluation.verdict == "fund_if"
    assert "can break silently on the next CPU" in evaluation.statement
    assert "GPU" not in evaluation.statement


def test_a_memory_fix_with_a_tiny_time_saving_is_not_sent_to_a_fleet_ab() -> None:
    """0.5% of time per run, but 2 → 1 GPU per replica on 200 GPUs: fund on the fitting, no A/B condition."""
    evaluation = review(
        {
            "target": "kv_cache",
            "p": 0.1,
            "k": 1 / 0.95,
            "cost_weeks": 4,
            "flags": {"fleet_gpus": 200, "recurring": True},
            "goal": _KV_GOAL,
        }
    )
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "memory_fit"
    noise = finding(evaluation, "noise_floor")
    assert noise.effect == "info"
    assert noise.figures["capacity_saving"] == pytest.approx(1 - 0.5 * (1 - 0.1 * 0.05))
    assert "fleet A/B" not in evaluation.statement


def test_a_ranged_k_with_no_cost_funds_under_the_break_even_of_its_low_end() -> None:
    """30% at 1.5–2.2× of 25 ms, no cost: the low end saves 10%, so under 10 engineer-weeks, said at the low end."""
    evaluation = review(
        {
            "target": "attention_decode",
            "p": 0.3,
            "k": {"low": 1.5, "high": 2.2},
            "baseline_ms": 25,
            "scope": {"method": "timeline"},
        }
    )
    low_saving = 0.3 * (1 - 1 / 1.5)
    assert evaluation.verdict == "fund_if"
    found = finding(evaluation, "unstated_cost")
    assert found.figures["break_even_weeks"] == pytest.approx(low_saving / 0.01, rel=2e-3)
    assert "under 10 engineer-weeks" in evaluation.statement
    assert "the 10% it saves at the range's low end" in evaluation.statement
