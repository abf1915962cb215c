"""Proposals that trade more than time, and combinations of them: answers a reviewer would not
have signed, each test naming what was wrong.

Figures are re-derived here from the seeds' formulas, the rules' docstrings and the default policy's prices ($2 per
GPU-hour around the clock, $5,000 per engineer-week, a 12-month horizon, a 1% noise floor, 1% per engineer-week),
never read back from the engine.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, review
from worthit.rules.policy import default_policy
from worthit.rules.portfolio import Portfolio, PortfolioRequest, portfolio

GPU_YEAR_USD = 2.0 * 8760
WEEK_USD = 5000.0

# --- a quality gate met exactly ---------------------------------------------------------------------------------------


def test_a_regression_equal_to_the_gate_passes_it() -> None:
    """AUC 0.812 → 0.809 against a 0.003 gate is the largest regression allowed, but 0.812 − 0.809 is
    0.0030000000000000027 in floats: the change was held back "recovers to at least 0.81: AUC falls 0 points
    (0.81 → 0.81) against a 0-point gate"."""
    raw: dict[str, Any] = {
        "target": "gemm",
        "p": 0.55,
        "k": 1.7,
        "baseline_ms": 42,
        "cost_weeks": 4,
        "quality": {"metric": "AUC", "baseline": 0.812, "candidate": 0.809, "max_regression": 0.003},
    }
    evaluation = review(raw)
    gate = finding(evaluation, "quality_gate")
    assert gate.effect == "info"
    assert gate.figures["regression"] == pytest.approx(0.003)
    saving = 0.55 * (1 - 1 / 1.7)
    assert evaluation.amdahl.saving_ms == pytest.approx(42 * saving)
    assert evaluation.verdict == "fund"
    assert "AUC loses 0.003 points (0.812 → 0.809), inside the 0.003-point gate" in gate.message


def test_a_perplexity_equal_to_its_gate_passes_it() -> None:
    """Lower is better: 6.1 → 6.3 against a 0.2 gate (6.3 − 6.1 = 0.20000000000000018 in floats) is allowed."""
    evaluation = review(
        {
            "target": "attention",
            "p": 0.3,
            "k": 1.4,
            "baseline_ms": 30,
            "cost_weeks": 2,
            "quality": {
                "metric": "perplexity",
                "baseline": 6.1,
                "candidate": 6.3,
                "max_regression": 0.2,
                "higher_is_better": False,
            },
        }
    )
    assert finding(evaluation, "quality_gate").effect == "info"
    assert evaluation.verdict == "fund"


def test_a_failing_gate_prints_the_metric_with_the_digits_it_was_given_in() -> None:
    """AUC 0.812 → 0.805 against 0.003 fails by 0.007; two decimals printed it `0.81 → 0.81`, a `0-point gate`."""
    evaluation = review(
        {
            "target": "gemm",
            "p": 0.55,
            "k": 1.7,
            "baseline_ms": 42,
            "cost_weeks": 4,
            "quality": {"metric": "AUC", "baseline": 0.812, "candidate": 0.805, "max_regression": 0.003},
        }
    )
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "quality_gate"
    gate = finding(evaluation, "quality_gate")
    assert gate.figures["regression"] == pytest.approx(0.812 - 0.805)
    assert gate.figures["recover_to"] == pytest.approx(0.809)
    for words in ("recovers to at least 0.809", "falls 0.007 points (0.812 → 0.805)", "0.003-point gate"):
        assert words in evaluation.statement
    assert_one_sentence(evaluation.statement)


def test_a_failing_gate_on_a_memory_fix_names_the_capacity_it_frees_not_a_negative_saving() -> None:
    """An INT4 KV cache: 150 → 118 GB on 141 GB devices with 10 GB kept free (131 usable) is 2 → 1 GPU per replica,
    with attention 0.95× on 35% of the step; on 512 GPUs that is worth millions, but recall falls 0.06 against 0.01.
    The statement said "whatever the -1.8% it saves"; the work is worth the capacity it frees."""
    evaluation = review(
        {
            "target": "attention",
            "p": 0.35,
            "k": 0.95,
            "baseline_ms": 40,
            "cost_weeks": 5,
            "flags": {"fleet_gpus": 512, "recurring": True},
            "goal": {
                "memory_required_gb": 150,
                "memory_after_gb": 118,
                "device_memory_gb": 141,
                "memory_headroom_gb": 10,
            },
            "quality": {"metric": "recall", "baseline": 0.97, "candidate": 0.91, "max_regression": 0.01},
        }
    )
    longer = 0.35 * (1 / 0.95 - 1)
    capacity = 1 - 0.5 * (1 + longer)
    value = 512 * capacity * GPU_YEAR_USD
    assert value == pytest.approx(4_402_499.37, rel=1e-6)
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "quality_gate"
    assert finding(evaluation, "quality_gate").figures["value_usd"] == pytest.approx(value)
    assert "-1.8%" not in evaluation.statement
    assert "whatever the $4.4M of capacity it frees over 12 months" in evaluation.statement
    assert "recovers to at least 0.96" in evaluation.statement
    assert_one_sentence(evaluation.statement)


def test_a_failing_gate_on_fleet_money_says_the_money_it_does_not_buy_a_waiver_for() -> None:
    """FP8 GEMMs 1.6× on 60% of a 20,000-GPU fleet: 4,500 GPU-equivalents, $78.8M a year; MMLU falls 1.2 vs 0.5."""
    evaluation = review(
        {
            "target": "gemm",
            "p": 0.6,
            "k": 1.6,
            "cost_weeks": 8,
            "flags": {"fleet_gpus": 20000, "recurring": True},
            "quality": {"metric": "MMLU", "baseline": 68.4, "candidate": 67.2, "max_regression": 0.5},
        }
    )
    value = 20000 * 0.6 * (1 - 1 / 1.6) * GPU_YEAR_USD
    assert value == pytest.approx(78_840_000)
    assert evaluation.verdict == "fund_if"
    assert "MMLU recovers to at least 67.9" in evaluation.statement
    assert "whatever the $78.8M of capacity it frees over 12 months" in evaluation.statement


# --- a strategic workload beside a fleet ------------------------------------------------------------------------------

_MOE = {
    "target": "moe_router",
    "p": 0.02,
    "k": 4,
    "baseline_ms": 60,
    "cost_weeks": 4,
    "scope": {"model": "dense-70b", "measured": "step", "method": "timeline"},
    "flags": {"strategic": {"model": "moe-400b", "p": 0.3, "launch_committed": True}},
}


def test_stating_the_measured_workloads_small_fleet_does_not_take_the_strategic_value_away() -> None:
    """2% at 4× on today's dense model, 30% on the committed MoE model, 4 weeks: funded by the MoE model with no fleet
    stated. With a 60-GPU fleet stated it was declined on that fleet's money (0.9 GPU-equivalents, $15,768 a year
    against $20,000), while the reasoning said "moe-400b justifies it too"."""
    strategic_saving = 0.3 * (1 - 1 / 4)
    assert strategic_saving / 4 >= 0.01  # 5.6% of that step per engineer-week clears the policy's 1%
    assert review(_MOE).verdict == "fund"
    flags = {**_MOE["flags"], "fleet_gpus": 60, "recurring": True}
    evaluation = review({**_MOE, "flags": flags})
    measured = 0.02 * (1 - 1 / 4)
    fleet = finding(evaluation, "fleet_multiplication")
    assert fleet.figures["gpu_equivalents"] == pytest.approx(60 * measured)
    assert fleet.figures["annual_value_usd"] == pytest.approx(60 * measured * GPU_YEAR_USD)
    assert 60 * measured * GPU_YEAR_USD < 4 * WEEK_USD
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "wrong_model"
    assert fleet.effect == "info"
    assert fleet.overridden_by == "wrong_model"
    assert "justified by moe-400b, not dense-70b" in evaluation.statement
    worth = next(stage for stage in evaluation.reasoning or () if stage.stage == "worth")
    assert worth.figures["basis"] == "strategic"


def test_a_strategic_workload_that_slipped_does_not_rescue_a_fleet_that_does_not_pay() -> None:
    """The same on 60 GPUs, but the MoE model slipped twice with no committed launch: the fleet's money decides."""
    strategic = {"model": "moe-400b", "p": 0.3, "launch_committed": False, "slips": 2}
    evaluation = review({**_MOE, "flags": {"strategic": strategic, "fleet_gpus": 60, "recurring": True}})
    assert evaluation.verdict == "decline"
    assert finding(evaluation, "fleet_multiplication").effect == "opposes"


# --- a portfolio ranks each proposal on the saving its decision weighs ------------------------------------------------


def test_a_portfolio_ranks_a_traffic_mix_on_its_decisions_saving_not_the_measured_batch() -> None:
    """A split-K decode GEMM measured 1.8× at batch 1, which is 10% of the traffic (batch 32 unmeasured): its own
    decision is a decline on 0.1 × 50% × (1 − 1/1.8) of the production time, but the portfolio ranked it first at
    "1.9 ms per engineer-week", the batch-1 step's 5.6 ms applied to all the traffic."""
    serving = {"workload": "serving", "measured": "step", "method": "timeline"}
    request = {
        "budget_weeks": 10,
        "proposals": [
            {
                "target": "decode_gemm",
                "p": 0.5,
                "k": 1.8,
                "baseline_ms": 25,
                "cost_weeks": 3,
                "scope": {**serving, "input": "bs1"},
                "flags": {"traffic_mix": [{"name": "bs1", "share": 0.1}, {"name": "bs32", "share": 0.9}]},
            },
            {"target": "layernorm", "p": 0.08, "k": 3, "baseline_ms": 25, "cost_weeks": 2, "scope": serving},
            {"target": "attention", "p": 0.3, "k": 1.5, "baseline_ms": 25, "cost_weeks": 4, "scope": serving},
        ],
    }
    result = _portfolio(request)
    mix = 0.1 * 0.5 * (1 - 1 / 1.8)
    rates = {
        "decode_gemm": mix * 25 / 3,
        "layernorm": 0.08 * (1 - 1 / 3) * 25 / 2,
        "attention": 0.3 * (1 - 1 / 1.5) * 25 / 4,
    }
    by_target = {entry.target: entry for entry in result.entries}
    for target, rate in rates.items():
        assert by_target[target].rate == pytest.approx(rate)
    gemm = by_target["decode_gemm"]
    assert gemm.saving_fraction == pytest.approx(mix)
    assert gemm.saving_ms == pytest.approx(mix * 25)
    assert gemm.verdict == "decline"
    assert [entry.target for entry in result.entries] == ["layernorm", "attention", "decode_gemm"]
    assert result.top_ratio == pytest.approx(rates["layernorm"] / rates["attention"])
    funded = 0.08 * (1 - 1 / 3) + 0.3 * (1 - 1 / 1.5)
    assert result.combined_new_ms == pytest.approx(25 * (1 - funded))
    assert result.message.startswith("Fund layernorm first: 666.7 µs per engineer-week is 1.1× the return of attention")


def _portfolio(request: dict[str, object]) -> Portfolio:
    decoded = msgspec.convert(request, PortfolioRequest)
    return portfolio(decoded.proposals, default_policy(), decoded.budget_weeks)


# --- a condition's lower bound is the one that passes -----------------------------------------------------------------

_AUTOTUNE: dict[str, Any] = {
    "target": "fused_mlp",
    "p": 0.2,
    "k": 1.18,
    "cost_weeks": 3,
    "scope": {"method": "timeline"},
    "flags": {"gpu_minutes_per_start": 30, "starts_per_day": 1500},
}


def test_the_break_even_fleet_for_a_per_start_cost_is_rounded_up() -> None:
    """Autotuning that takes 30 GPU-minutes on each of 1,500 replica starts a day keeps 31.25 GPUs busy; a 3.05%
    faster step pays that and $15,000 of engineering from 1,052.4 GPUs. "At least 1,052 GPUs" was printed, and on
    1,052 GPUs the same proposal is declined."""
    saving = 0.2 * (1 - 1 / 1.18)
    consumed = 30 * 1500 / 1440
    fleet = (consumed + 3 * WEEK_USD / GPU_YEAR_USD) / saving
    assert fleet == pytest.approx(1052.37, abs=0.01)
    evaluation = review(_AUTOTUNE)
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "recurring_gpu_cost"
    assert finding(evaluation, "recurring_gpu_cost").figures["break_even_fleet_gpus"] == pytest.approx(fleet)
    assert "at least 1,053 GPUs" in evaluation.statement
    on = {**_AUTOTUNE["flags"], "recurring": True}
    assert review({**_AUTOTUNE, "flags": {**on, "fleet_gpus": 1053}}).verdict == "fund"
    assert review({**_AUTOTUNE, "flags": {**on, "fleet_gpus": 1052}}).verdict == "decline"


_BACKFILL: dict[str, Any] = {
    "target": "convert",
    "p": 0.4,
    "k": 3,
    "cost_weeks": 2,
    "scope": {"method": "timeline"},
    "flags": {"fleet_gpus": 64, "recurring": False},
}


def test_the_days_a_one_off_job_must_run_are_rounded_up() -> None:
    """26.7% of 64 GPUs is 17.07 GPU-equivalents, $819.20 a day against $10,000: 12.2 days. "At least 12 days" was
    printed, and a 12-day job is declined."""
    per_day = 64 * 0.4 * (1 - 1 / 3) * 2.0 * 24
    assert per_day == pytest.approx(819.2)
    days = 2 * WEEK_USD / per_day
    assert days == pytest.approx(12.207, abs=0.001)
    evaluation = review(_BACKFILL)
    assert evaluation.verdict == "fund_if"
    assert finding(evaluation, "fleet_multiplication").figures["break_even_days"] == pytest.approx(days)
    assert "runs at least 13 days" in evaluation.statement
    flags = _BACKFILL["flags"]
    assert review({**_BACKFILL, "flags": {**flags, "run_days": 13}}).verdict == "fund"
    assert review({**_BACKFILL, "flags": {**flags, "run_days": 12}}).verdict == "decline"


def test_a_short_break_even_is_rounded_up_at_its_tenth() -> None:
    """An eval sweep on 128 GPUs saving 16.7%, less 1 GPU-equivalent of per-start compiles: $976 a day against $5,000
    is 5.12 days, printed "at least 5.1 days" (declined at 5.1): now 5.2."""
    per_day = (128 * 0.5 * (1 - 1 / 1.5) - 60 * 24 / 1440) * 2.0 * 24
    days = WEEK_USD / per_day
    assert days == pytest.approx(5.123, abs=0.001)
    raw: dict[str, Any] = {
        "target": "eval_step",
        "p": 0.5,
        "k": 1.5,
        "cost_weeks": 1,
        "scope": {"method": "timeline"},
        "flags": {"fleet_gpus": 128, "recurring": False, "gpu_minutes_per_start": 60, "starts_per_day": 24},
    }
    evaluation = review(raw)
    assert "runs at least 5.2 days" in evaluation.statement
    assert review({**raw, "flags": {**raw["flags"], "run_days": 5.2}}).verdict == "fund"
    assert review({**raw, "flags": {**raw["flags"], "run_days": 5.1}}).verdict == "decline"


def test_an_estimated_ps_break_even_is_printed_at_a_share_that_passes() -> None:
    """A sampler estimated at 12% of a 40 ms step, 3.3× for 3 weeks: the policy's 1% a week needs a 3% saving, so
    p ≥ 0.03 / (1 − 1/3.3) = 4.304%. It printed "p ≥ 4.3%", and at a measured 4.3% the same work is declined."""
    edge = 0.03 / (1 - 1 / 3.3)
    assert edge == pytest.approx(0.043043, abs=1e-6)
    raw: dict[str, Any] = {
        "target": "sampler",
        "p": 0.12,
        "k": 3.3,
        "baseline_ms": 40,
        "cost_weeks": 3,
        "scope": {"method": "estimate"},
    }
    evaluation = review(raw)
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "estimate"
    assert finding(evaluation, "estimate").figures["break_even_p"] == pytest.approx(edge, rel=2e-3)
    assert "p ≥ 4.4%" in evaluation.statement
    measured = {**raw, "scope": {"method": "timeline"}}
    assert review({**measured, "p": 0.044}).verdict == "fund"
    assert review({**measured, "p": 0.043}).verdict == "decline"


def test_an_exact_break_even_is_printed_as_it_is() -> None:
    """The rule's own example: 15% estimated, 3× on 40 ms for 3 weeks breaks even at exactly 4.5% (bisection lands
    a hair above it): still "p ≥ 4.5%", which passes."""
    evaluation = review(
        {"target": "sampler", "p": 0.15, "k": 3, "baseline_ms": 40, "cost_weeks": 3, "scope": {"method": "estimate"}}
    )
    assert "p ≥ 4.5%" in evaluation.statement


def test_a_device_activity_shares_break_even_run_share_is_printed_at_a_share_that_passes() -> None:
    """12% of device activity, its share of the run unknown, 3.3× for 3 weeks: the run share must be at least
    4.304%; "at 4.3% of the run or more" was printed, and 4.3% of the run is declined."""
    raw: dict[str, Any] = {
        "target": "sampler",
        "p": 0.12,
        "k": 3.3,
        "cost_weeks": 3,
        "scope": {"measured": "device_activity", "method": "timeline"},
    }
    evaluation = review(raw)
    assert evaluation.verdict == "fund_if"
    assert "at 4.4% of the run or more" in evaluation.statement
    assert review({**raw, "p_end_to_end": 0.044}).verdict == "fund"
    assert review({**raw, "p_end_to_end": 0.043}).verdict == "decline"


# --- CPU and storage phases -------------------------------------------------------------------------------------------


def test_a_statement_naming_cpu_work_and_io_is_never_cut_inside_a_parenthesis() -> None:
    """An embedding kernel (6% of a 120 ms step, 3× for 2 weeks) beside 38 ms of CPU tokenizing and 30 ms of
    object-store reads: the two fixes ran past 300 characters and the sentence was cut to "…off the step's path (more
    CPU workers; overlap or cache the 30 ms of storage…", a parenthesis never closed."""
    evaluation = review(
        {
            "target": "embedding_bag",
            "p": 0.06,
            "k": 3,
            "baseline_ms": 120,
            "cost_weeks": 2,
            "scope": {"method": "timeline"},
            "breakdown": [
                {"name": "embedding_bag", "ms": 7.2},
                {"name": "mlp", "ms": 30},
                {"name": "tokenize", "ms": 38, "kind": "cpu"},
                {"name": "s3_read", "ms": 30, "kind": "io"},
                {"name": "allreduce", "ms": 14.8, "kind": "comm"},
            ],
        }
    )
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "non_kernel_time"
    statement = evaluation.statement
    assert f"{(38 + 30) / 120 * 100:.1f}% of the step (68 ms) is not kernel time" in statement
    assert f"against the {0.06 * (1 - 1 / 3) * 100:.0f}% this saves" in statement
    assert "38 ms of CPU work" in statement
    assert "30 ms of I/O" in statement
    assert statement.count("(") == statement.count(")")
    assert_one_sentence(statement)


# --- a memory fix beside a breakdown and a latency goal ---------------------------------------------------------------


def test_a_memory_fix_is_not_told_to_rank_targets_by_share_with_its_slowdown() -> None:
    """An FP8 KV cache: 96 → 61 GB on 80 GB devices (2 → 1 GPU per replica), attention 0.9× on 14 of 35 ms. The
    decision was fund_if "mlp at 42.9% is the larger target: the same 0.9× there gives 0.955×", a slowdown offered
    as the better target, against a change worth 47.8% of the capacity. The latency goal's plan used the policy's
    default 10× without saying so."""
    evaluation = review(
        {
            "target": "attention",
            "p": 0.4,
            "k": 0.9,
            "baseline_ms": 35,
            "cost_weeks": 4,
            "scope": {"method": "timeline"},
            "breakdown": [
                {"name": "attention", "ms": 14},
                {"name": "mlp", "ms": 15},
                {"name": "sampler", "ms": 2, "kind": "cpu"},
                {"name": "other", "ms": 4, "kind": "other"},
            ],
            "goal": {"latency_ms": 25, "memory_required_gb": 96, "memory_after_gb": 61, "device_memory_gb": 80},
        }
    )
    new_ms = 35 - 14 + 14 / 0.9
    capacity = 1 - 0.5 * new_ms / 35
    assert capacity == pytest.approx(0.4778, abs=1e-4)
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "memory_fit"
    assert finding(evaluation, "memory_fit").figures["capacity_saving"] == pytest.approx(capacity)
    assert "bigger_target" not in {f.rule for f in evaluation.findings}
    goal = finding(evaluation, "resource_goal")
    assert goal.figures["plan_k"] == 10
    assert goal.figures["plan_k_source"] == "policy"
    assert new_ms - 15 + 15 / 10 <= 25  # mlp at 10× reaches the goal
    assert "short of the 25 ms latency goal, which one GPU reaches with mlp 10× faster (the policy's default k)" in (
        goal.message
    )


def test_a_throughput_goal_without_requests_per_step_says_it_counts_one() -> None:
    """3,000 requests a second on a 48 → 38.4 ms step: 116 replicas at one request per pass, an assumption the
    statement did not state (a batch of 32 needs 4)."""
    evaluation = review(
        {
            "target": "gemm",
            "p": 0.6,
            "k": 1.5,
            "baseline_ms": 48,
            "cost_weeks": 4,
            "goal": {"throughput_per_s": 3000},
        }
    )
    goal = finding(evaluation, "resource_goal")
    assert goal.figures["replicas_after"] == -(-3000 // (1000 / 38.4))
    assert goal.figures["replicas_after"] == 116
    assert "one request per 38.4 ms pass (give `requests_per_step` for a batch)" in goal.message


# --- upkeep with no build cost ----------------------------------------------------------------------------------------


def test_unportable_code_with_no_build_cost_never_says_the_build_is_free() -> None:
    """A vendor-specific GEMM 1.3× on 30% of a 50 ms step, no cost given: the policy's 2 weeks of upkeep a year are
    the only cost known. Stage 3 said "2 engineer-weeks ($10k): 0 to build", the condition "6.9% pays for 2
    engineer-weeks including 2 weeks of upkeep", and the rate was given as if the build were free."""
    evaluation = review(
        {
            "target": "gemm",
            "p": 0.3,
            "k": 1.3,
            "baseline_ms": 50,
            "scope": {"method": "timeline"},
            "flags": {"portability": "vendor_specific"},
        }
    )
    saving = 0.3 * (1 - 1 / 1.3)
    assert evaluation.verdict == "fund_if"
    # the build's break-even: (saving / 1% per week) weeks in all, less the 2 weeks of upkeep
    assert finding(evaluation, "unstated_cost").figures["break_even_weeks"] == pytest.approx(
        saving / 0.01 - 2, rel=2e-3
    )
    cost = next(stage for stage in evaluation.reasoning or () if stage.stage == "cost")
    assert cost.answer == "At least 2 engineer-weeks ($10k): 2 of upkeep over the horizon; no build cost given."
    assert "0 to build" not in cost.answer
    upkeep = finding(evaluation, "maintenance_cost").message
    assert "pays for 2 weeks of upkeep over 12 months" in upkeep
    assert "with the build not yet estimated" in upkeep
    assert "including" not in upkeep
    assert finding(evaluation, "amdahl").message.endswith(
        f"{50 * saving / 2:.1f} ms per engineer-week, counting only 2 weeks of upkeep (no build cost given)."
    )


def test_a_change_to_the_whole_step_has_no_floor_to_stop_at() -> None:
    """torch.compile on the whole step (p = 1), 1.08×, no baseline: the ceiling said "even at zero the step stops at
    unbounded"."""
    evaluation = review({"target": "step", "p": 1.0, "k": 1.08, "cost_weeks": 2})
    ceiling = finding(evaluation, "ceiling")
    assert ceiling.figures["ceiling_speedup"] is None
    assert ceiling.figures["headroom_captured"] == pytest.approx(1 - 1 / 1.08)
    assert "stops at unbounded" not in ceiling.message
    assert ceiling.message.endswith("and at zero nothing of the step would be left.")


def test_a_latency_goal_is_not_a_redirect_away_from_a_kernel_it_needs() -> None:
    """70 ms: attention 24.5, mlp 30, an allreduce 9, a CPU sampler 6.5; a 40 ms goal. Attention 2× for 3 weeks
    saves 12.25 ms (4.1 ms a week). Every kernel 2× leaves 42.75 ms; without the sampler 36.25 ms, which needs this
    2× (without it the kernels take 48.5 ms). It was redirected: "not this; ... overlap or remove it, and the kernels
    alone take 36.2 ms", a figure that counts this very change."""
    evaluation = review(
        {
            "target": "attention",
            "p": 0.35,
            "k": 2,
            "baseline_ms": 70,
            "cost_weeks": 3,
            "scope": {"method": "timeline"},
            "breakdown": [
                {"name": "attention", "ms": 24.5},
                {"name": "mlp", "ms": 30},
                {"name": "allreduce", "ms": 9, "kind": "comm"},
                {"name": "sampler", "ms": 6.5, "kind": "cpu"},
            ],
            "goal": {"latency_ms": 40},
        }
    )
    floor = 24.5 / 2 + 30 / 2 + 9 + 6.5
    kernels = floor - 6.5
    without = kernels + 24.5 / 2
    assert (floor, kernels, without) == (42.75, 36.25, 48.5)
    goal = finding(evaluation, "resource_goal")
    assert goal.effect == "info"
    assert goal.figures["single_gpu_floor_ms"] == pytest.approx(floor)
    assert goal.figures["kernel_floor_ms"] == pytest.approx(kernels)
    assert goal.figures["kernel_floor_without_ms"] == pytest.approx(without)
    assert "every kernel 2× faster, this one included, and the 6.5 ms of CPU work off the step's path" in goal.message
    assert evaluation.verdict != "redirect"
    # what stage 4 still names is a materially larger phase: mlp's 30 ms is 42.9% against the 17.5% this saves
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "bigger_target"


def test_a_failing_gate_on_a_ranged_k_quotes_the_range_not_its_midpoint() -> None:
    """FP8 attention, k 1.1–1.8 on 30% of the step, accuracy 71 → 70.2 against 0.5: "whatever the 9.3% it saves"
    was the midpoint k = 1.45, a saving nobody proposed; the range saves 2.7–13.3%."""
    evaluation = review(
        {
            "target": "attention",
            "p": 0.3,
            "k": {"low": 1.1, "high": 1.8},
            "baseline_ms": 30,
            "cost_weeks": 4,
            "quality": {"metric": "accuracy", "baseline": 71.0, "candidate": 70.2, "max_regression": 0.5},
        }
    )
    low, high = 0.3 * (1 - 1 / 1.1), 0.3 * (1 - 1 / 1.8)
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "quality_gate"
    gate = finding(evaluation, "quality_gate")
    assert gate.figures["saving_fraction_low"] == pytest.approx(low)
    assert gate.figures["saving_fraction_high"] == pytest.approx(high)
    assert f"whatever the {low * 100:.1f}–{high * 100:.1f}% it saves" in evaluation.statement
    assert "recovers to at least 70.5" in evaluation.statement


# --- added work that leaves the target slower -------------------------------------------------------------------------


def test_a_draft_model_that_makes_decoding_slower_is_declined_naming_the_stated_k() -> None:
    """A 7B draft for a 70B model: γ = 4, α = 0.5, draft steps at 0.25 and a verify pass at 1.3 plain steps yield
    1.9375 tokens for 2.3 steps, 0.842×, against the "2.4×" proposed. The statement said "At 0.842× decode gets
    slower", a k the proposer never wrote, without saying why."""
    evaluation = review(
        {
            "target": "decode",
            "p": 0.9,
            "k": 2.4,
            "baseline_ms": 1800,
            "cost_weeks": 5,
            "added_work": {
                "speculative": {"draft_tokens": 4, "acceptance": 0.5, "draft_cost": 0.25, "verify_cost": 1.3}
            },
        }
    )
    tokens = (1 - 0.5**5) / (1 - 0.5)
    k = tokens / (4 * 0.25 + 1.3)
    assert (tokens, k) == (pytest.approx(1.9375), pytest.approx(0.842391, abs=1e-6))
    longer = -0.9 * (1 - 1 / k)
    assert evaluation.verdict == "decline"
    assert evaluation.amdahl.new_ms == pytest.approx(1800 * (1 + longer))
    assert evaluation.statement == (
        f"Counting the work it adds, decode ends up {k:.3f}× as fast, not the 2.4× stated, and the run "
        f"{longer * 100:.1f}% longer, so there is nothing to win."
    )


def test_a_ranged_k_with_no_cost_states_one_break_even() -> None:
    """k 1.2–1.6 on 30% of the step, measured on H100 (300 of 1,000 GPUs), no cost: stage 2 said "it pays for up to
    90.1 engineer-weeks" (the midpoint's 1.4×) and the condition "under 52.5 engineer-weeks" (the low end's 1.2×)."""
    evaluation = review(
        {
            "target": "gemm",
            "p": 0.3,
            "k": {"low": 1.2, "high": 1.6},
            "scope": {"method": "timeline", "device": "H100"},
            "flags": {"recurring": True, "fleet_mix": [{"name": "H100", "gpus": 300}, {"name": "A100", "gpus": 700}]},
        }
    )
    low_end = 300 * 0.3 * (1 - 1 / 1.2) * GPU_YEAR_USD / WEEK_USD
    assert low_end == pytest.approx(52.56)
    assert finding(evaluation, "unstated_cost").figures["break_even_weeks"] == pytest.approx(low_end, rel=2e-3)
    said = [f.message for f in evaluation.findings] + [stage.answer for stage in evaluation.reasoning or ()]
    assert not any("pays for up to" in text for text in said), said
    assert "pays_for_weeks" not in finding(evaluation, "fleet_multiplication").figures


def test_the_break_even_fleet_of_a_fixed_job_is_counted_over_the_job() -> None:
    """A 20-day run restarting 3 times a day, each restart's max-autotune taking 8,000 GPU-minutes (16.7 GPUs around
    the clock), for a 5.7% faster step and $10,000 of engineering, no fleet given: the break-even fleet was counted
    over a year (305 GPUs, "$292k a year"), and on 305 GPUs the 20-day job is declined."""
    saving = 1 - 1 / 1.06
    consumed = 8000 * 3 / 1440
    hours = 20 * 24
    fleet = (consumed + 2 * WEEK_USD / 2.0 / hours) / saving
    assert fleet == pytest.approx(478.5, abs=0.1)
    raw: dict[str, Any] = {
        "target": "step",
        "p": 1.0,
        "k": 1.06,
        "cost_weeks": 2,
        "scope": {"method": "timeline"},
        "flags": {"run_days": 20, "recurring": False, "gpu_minutes_per_start": 8000, "starts_per_day": 3},
    }
    evaluation = review(raw)
    cost = finding(evaluation, "recurring_gpu_cost")
    assert evaluation.verdict == "fund_if"
    assert cost.figures["break_even_fleet_gpus"] == pytest.approx(fleet)
    assert cost.figures["consumed_usd_over_job"] == pytest.approx(consumed * 2.0 * hours)
    assert "at least 479 GPUs" in evaluation.statement
    assert "$16k over the 20-day job" in evaluation.statement
    assert review({**raw, "flags": {**raw["flags"], "fleet_gpus": 479}}).verdict == "fund"
    assert review({**raw, "flags": {**raw["flags"], "fleet_gpus": 478}}).verdict == "decline"


# --- a portfolio funds what its proposals' own decisions fund, on what they weigh ------------------------------------

_SERVING = {"workload": "serving", "measured": "step", "method": "timeline"}
# INT8 MLP: 30% of a 50 ms step at 1.5× saves 0.3 · (1 − 1/1.5) = 10% (5 ms) for 3 weeks, but accuracy falls
# 76 → 75.1 against a 0.3-point gate: its own decision is fund_if accuracy recovers to 76 − 0.3 = 75.7.
_INT8_MLP = {
    "title": "INT8 mlp",
    "target": "mlp",
    "p": 0.3,
    "k": 1.5,
    "baseline_ms": 50,
    "cost_weeks": 3,
    "scope": _SERVING,
    "quality": {"metric": "accuracy", "baseline": 76.0, "candidate": 75.1, "max_regression": 0.3},
}
# Fused layernorm: 8% at 3× saves 0.08 · (2/3) = 5.33% (2.67 ms) for 2 weeks.
_LAYERNORM = {"title": "fused layernorm", "target": "layernorm", "p": 0.08, "k": 3, "baseline_ms": 50}
_LAYERNORM |= {"cost_weeks": 2, "scope": _SERVING}
# FP8 KV cache: attention (40%) at 0.9× makes the step 0.4 · (1/0.9 − 1) = 4.44% longer, but 180 GB → 120 GB on a
# 141 GB device fits a replica on 1 GPU instead of 2: 1 − (1 − 0.5) · (1 + 0.0444) = 47.8% of the capacity freed.
_FP8_KV = {
    "title": "FP8 KV cache",
    "target": "attention",
    "p": 0.4,
    "k": 0.9,
    "baseline_ms": 50,
    "cost_weeks": 4,
    "scope": _SERVING,
    "goal": {"memory_required_gb": 180, "memory_after_gb": 120, "device_memory_gb": 141},
}
_LONGER = 0.4 * (1 / 0.9 - 1)
_CAPACITY = 1 - (1 - 0.5) * (1 + _LONGER)


def test_a_portfolio_holds_back_a_proposal_funded_only_if_its_quality_gate_recovers() -> None:
    """INT8 mlp has the best return (5 ms / 3 weeks = 1.67 ms a week, layernorm's 2.67 / 2 = 1.33) and its own
    decision is fund_if on the failing gate, yet the portfolio funded it and counted its 5 ms in the combined step
    (50 → 42.3 ms): a change that cannot ship as built. It is now ranked, held back, and the gate named."""
    result = _portfolio({"proposals": [_INT8_MLP, _LAYERNORM]})
    mlp, layernorm = result.entries
    assert (mlp.target, layernorm.target) == ("mlp", "layernorm")
    assert mlp.rate == pytest.approx(0.1 * 50 / 3)
    assert mlp.verdict == "fund_if"
    assert not mlp.funded
    assert mlp.held_by == "quality_gate"
    assert mlp.note == (
        "held back until accuracy recovers to at least 75.7: it fails its quality gate, and cannot ship as built"
    )
    assert layernorm.funded
    assert result.combined_new_ms == pytest.approx(50 * (1 - 0.08 * (1 - 1 / 3)))
    assert result.message == (
        "Fund layernorm: mlp has the best return (1.7 ms per engineer-week) but waits until accuracy recovers to at "
        "least 75.7; it takes the step from 50 ms to 47.3 ms (1.056×)."
    )
    alone = _portfolio({"proposals": [_INT8_MLP]})
    assert alone.message == (
        "Nothing is funded: mlp has the best return (1.7 ms per engineer-week) but waits until accuracy recovers to "
        "at least 75.7."
    )
    assert alone.combined_saving_fraction == 0


def test_a_portfolio_ranks_a_memory_fix_on_the_capacity_it_frees_and_says_its_step_is_longer() -> None:
    """The FP8 KV cache's own decision funds it on 47.8% of the capacity, but the portfolio ranked it on its step,
    4.4% longer: last, at "-555.6 µs per engineer-week". It now ranks first on 47.8% · 50 ms / 4 weeks = 5.97 ms a
    week (11.9% of the capacity), ahead of layernorm's 1.33, and the message says its longer step, which stays in
    the combined step (50 − 2.67 + 2.22 = 49.6 ms): that is the step the funded set leaves."""
    result = _portfolio({"proposals": [_LAYERNORM, _FP8_KV]})
    kv, layernorm = result.entries
    assert kv.title == "FP8 KV cache"
    assert kv.valued_on == "capacity"
    assert kv.value_fraction == pytest.approx(_CAPACITY)
    assert kv.saving_fraction == pytest.approx(-_LONGER)
    assert kv.saving_ms == pytest.approx(-_LONGER * 50)
    assert kv.rate == pytest.approx(_CAPACITY * 50 / 4)
    assert layernorm.rate == pytest.approx(0.08 * (2 / 3) * 50 / 2)
    assert layernorm.value_fraction == layernorm.saving_fraction
    assert kv.funded
    assert layernorm.funded
    assert kv.note == (
        "valued on the 47.8% of the capacity it frees by fitting a replica on fewer GPUs, net of its 4.4% longer step"
    )
    assert result.combined_new_ms == pytest.approx(50 * (1 - 0.08 * (2 / 3) + _LONGER))
    assert result.top_ratio == pytest.approx((_CAPACITY / 4) / (0.08 * (2 / 3) / 2))
    assert result.message == (
        "Fund attention first: 11.9% of the capacity per engineer-week is 4.5× the return of layernorm's 2.7% of the "
        "step a week; the 2 funded take the step from 50 ms to 49.6 ms (1.009×), counting attention's 4.4% longer "
        "step, which frees 47.8% of the capacity."
    )
    assert_one_sentence(result.message)


def test_a_budget_funds_a_memory_fix_on_the_capacity_it_frees() -> None:
    """Four weeks: the FP8 KV cache alone (47.8% of the capacity) or layernorm (5.33%), never the memory fix's
    -4.4% that the knapsack once weighed and left out."""
    result = _portfolio({"proposals": [_LAYERNORM, _FP8_KV], "budget_weeks": 4})
    funded = [entry.title for entry in result.entries if entry.funded]
    assert funded == ["FP8 KV cache"]
    assert result.funded_weeks == 4
    assert result.combined_new_ms == pytest.approx(50 * (1 + _LONGER))
