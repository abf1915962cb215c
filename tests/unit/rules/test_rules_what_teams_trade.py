"""Proposals whose value or cost is not "time saved on GPUs we pay for, bought with engineer-weeks": a change that
pushes memory past the device, shares that contradict each other, costs in GPU-hours and people, a slowdown that
buys an SLO or capacity, devices the company does not own, a kernel near its roofline, and sentences that fit.

Figures are derived here from the policy's prices and the rules' docstrings, not read back from the engine.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, review
from worthit.service.cli import parser
from worthit.service.gate.command import run as gate_run

GPU_HOUR = 2.0
WEEK_USD = 5000.0

# --- memory read both ways --------------------------------------------------------------------------------------------


def test_turning_off_activation_recompute_past_the_device_is_declined_whatever_its_speed() -> None:
    """Recompute off: 48 GB → 86 GB on an 80 GB device with 10 GB kept free; a quarter of a 1.2 s step removed on
    512 GPUs would be $2.2M a year, but 86 GB is 16 GB over the 70 GB usable: it does not run."""
    evaluation = review(
        {
            "target": "recompute_forward",
            "p": 0.25,
            "k": "inf",
            "baseline_ms": 1200,
            "cost_weeks": 1,
            "flags": {"fleet_gpus": 512},
            "goal": {"memory_required_gb": 48, "memory_after_gb": 86, "device_memory_gb": 80, "memory_headroom_gb": 10},
        }
    )
    assert evaluation.verdict == "decline"
    assert evaluation.deciding_rule == "memory_fit"
    usable = 80 - 10
    figures = finding(evaluation, "memory_fit").figures
    assert figures["memory_over_gb"] == pytest.approx(86 - usable)
    assert (figures["gpus_before"], figures["gpus_after"]) == (1, 2)
    assert "48 GB to 86 GB, 16 GB over the 70 GB a device can use, so it does not run" in evaluation.statement
    assert "a smaller batch" in evaluation.statement
    assert_one_sentence(evaluation.statement)
    # the capacity it would free is said to be moot, never a reason to fund
    assert finding(evaluation, "fleet_multiplication").effect == "info"
    assert evaluation.reasoning is not None
    assert evaluation.reasoning[1].rules[0] == "memory_fit"


def test_a_doubled_batch_that_needs_a_third_gpu_per_replica_does_not_run_on_two() -> None:
    """A replica on 2 × 141 GB GPUs (180 GB needed) doubles its batch to 300 GB: over the 282 GB its two can hold."""
    evaluation = review(
        {
            "target": "decode",
            "p": 0.6,
            "k": 1.4,
            "cost_weeks": 2,
            "goal": {"memory_required_gb": 180, "memory_after_gb": 300, "device_memory_gb": 141},
        }
    )
    assert evaluation.verdict == "decline"
    figures = finding(evaluation, "memory_fit").figures
    assert figures["memory_room_gb"] == pytest.approx(2 * 141)
    assert figures["memory_over_gb"] == pytest.approx(300 - 282)
    assert "the 282 GB the replica's 2 GPUs can use" in evaluation.statement


def test_a_larger_need_that_still_fits_is_judged_on_its_time() -> None:
    """48 GB → 62 GB on a 70 GB-usable device still fits: the speed decides, as before."""
    evaluation = review(
        {
            "target": "recompute_forward",
            "p": 0.25,
            "k": "inf",
            "baseline_ms": 1200,
            "cost_weeks": 1,
            "goal": {"memory_required_gb": 48, "memory_after_gb": 62, "device_memory_gb": 80, "memory_headroom_gb": 10},
        }
    )
    assert evaluation.verdict == "fund"
    assert finding(evaluation, "memory_fit").effect == "info"


# --- inconsistent shares are decisions -------------------------------------------------------------------------------

_INCLUSIVE = {
    "target": "attention",
    "p": 0.41,
    "k": 1.5,
    "baseline_ms": 80,
    "cost_weeks": 6,
    "more_targets": [{"name": "mlp", "p": 0.52, "k": 1.3}, {"name": "norm", "p": 0.31, "k": 2}],
}


def test_targets_whose_shares_add_up_past_the_step_are_a_remeasure_naming_the_sum_and_the_step() -> None:
    """41% + 52% + 31% of an 80 ms step (inclusive shares from a summary table): 124%, 99.2 ms of 80 ms."""
    evaluation = review(_INCLUSIVE)
    assert evaluation.verdict == "remeasure"
    assert evaluation.deciding_rule == "consistency"
    total = 0.41 + 0.52 + 0.31
    assert finding(evaluation, "consistency").figures["targets_share"] == pytest.approx(total)
    assert f"add up to 124% of the step ({total * 80:.1f} ms of 80 ms)" in evaluation.statement
    assert_one_sentence(evaluation.statement)
    assert evaluation.reasoning is not None
    assert evaluation.reasoning[0].rules == ["consistency"]


def test_the_gate_fails_inconsistent_shares_as_a_decision_not_as_a_gate_that_cannot_run(tmp_path: Path) -> None:
    """The gate exits 1 (the remeasure verdict fails it), never 2 (a gate that cannot run)."""
    body = tmp_path / "body.md"
    body.write_text(
        "```worthit\ntarget: attention\np: 41%\nk: 1.5\nbaseline_ms: 80\ncost_weeks: 6\nmore_targets:\n"
        "  - {name: mlp, p: 52%, k: 1.3}\n  - {name: norm, p: 31%, k: 2}\n```\n",
        encoding="utf-8",
    )
    out = io.StringIO()
    code = gate_run(parser().parse_args(["gate", "--body", str(body)]), out, {})
    assert code == 1
    assert "::error title=worthit%3A remeasure::" in out.getvalue()
    assert "add up to 124%25 of the step" in out.getvalue()


def test_p_against_its_own_breakdown_is_a_remeasure_naming_both() -> None:
    """p = 30% beside a breakdown that gives the target 18 ms of 100 ms: both named."""
    evaluation = review(
        {
            "target": "softmax",
            "p": 0.3,
            "k": 2,
            "baseline_ms": 100,
            "breakdown": [{"name": "softmax", "ms": 18}, {"name": "gemm", "ms": 82}],
        }
    )
    assert evaluation.verdict == "remeasure"
    assert "p is 30% but the breakdown gives softmax 18 ms of 100 ms, 18%" in evaluation.statement


# --- costs in every unit ------------------------------------------------------------------------------------------


def test_a_distillation_run_that_costs_more_compute_than_it_saves_is_declined() -> None:
    """150,000 GPU-hours to distill a draft model; decode 50% of the step at 1/0.92 saves 4% on 256 GPUs: 10.24
    GPU-equivalents, 89,702 GPU-hours a year, less than spent. 3 people for 6 weeks: 18 engineer-weeks."""
    evaluation = review(
        {
            "target": "decode",
            "p": 0.5,
            "k": 1 / 0.92,
            "cost_people": 3,
            "cost_calendar_weeks": 6,
            "cost_gpu_hours": 150_000,
            "flags": {"fleet_gpus": 256, "recurring": True},
        }
    )
    saving = 0.5 * (1 - 0.92)
    saved_hours = 256 * saving * 8760
    engineering, compute = 18 * WEEK_USD, 150_000 * GPU_HOUR
    assert evaluation.verdict == "decline"
    compute_finding = finding(evaluation, "one_off_compute")
    assert compute_finding.figures["saved_gpu_hours"] == pytest.approx(saved_hours)
    assert "costs more compute than it will ever save" in compute_finding.message
    assert finding(evaluation, "fleet_multiplication").figures["engineering_cost_usd"] == pytest.approx(
        engineering + compute
    )
    assert "$390k of engineering and compute" in evaluation.statement
    assert evaluation.reasoning is not None
    cost = evaluation.reasoning[2]
    assert cost.answer.startswith(
        "$390k in all: 18 engineer-weeks (3 people for 6 calendar weeks) to build and 150,000 GPU-hours of one-off "
        "compute ($300k)."
    )
    assert (cost.figures["people"], cost.figures["calendar_weeks"], cost.figures["cost_weeks"]) == (3, 6, 18)
    assert cost.figures["cost_usd"] == pytest.approx(engineering + compute)


def test_the_same_distillation_on_a_fleet_that_earns_it_back_is_funded() -> None:
    """On 2,048 GPUs the 4% frees 81.9 GPU-equivalents, $1.43M a year, against $390k."""
    evaluation = review(
        {
            "target": "decode",
            "p": 0.5,
            "k": 1 / 0.92,
            "cost_weeks": 18,
            "cost_gpu_hours": 150_000,
            "flags": {"fleet_gpus": 2048, "recurring": True},
        }
    )
    assert evaluation.verdict == "fund"
    assert finding(evaluation, "one_off_compute").effect == "info"


def test_compute_without_a_fleet_is_funded_only_over_the_break_even_fleet() -> None:
    """No fleet: the whole cost in GPU-hours ($15k + $300k = 157,500) over 4% of a year's GPU-hours: 449.5 GPUs."""
    evaluation = review({"target": "decode", "p": 0.5, "k": 1 / 0.92, "cost_weeks": 3, "cost_gpu_hours": 150_000})
    fleet = (3 * WEEK_USD + 150_000 * GPU_HOUR) / GPU_HOUR / (0.04 * 8760)
    assert evaluation.verdict == "fund_if"
    assert finding(evaluation, "one_off_compute").figures["break_even_fleet_gpus"] == pytest.approx(fleet)
    assert "at least 450 GPUs" in evaluation.statement


def test_people_and_calendar_weeks_must_agree_with_a_stated_cost() -> None:
    """3 people × 6 weeks is 18 engineer-weeks: a `cost_weeks` of 6 beside them is refused naming both fields."""
    import msgspec

    from worthit.rules.model import Proposal

    with pytest.raises(msgspec.ValidationError, match="cost_people"):
        msgspec.convert(
            {"p": 0.2, "k": 2, "cost_weeks": 6, "cost_people": 3, "cost_calendar_weeks": 6},
            Proposal,
        )


def test_a_follow_up_returns_per_engineer_week_on_the_cost_stage_3_counts() -> None:
    """A hand-asm follow-up: 4 weeks to build + 2 a year of upkeep = 6; the return is the last 2.6% over 6 weeks."""
    evaluation = review(
        {
            "target": "attention_softmax",
            "p": 0.026,
            "k": 2,
            "prior_k": 10,
            "baseline_ms": 81.1,
            "cost_weeks": 4,
            "flags": {"portability": "hand_asm"},
        }
    )
    assert finding(evaluation, "ceiling").figures["follow_up_best_rate"] == pytest.approx(0.026 / 6)


# --- a slowdown that buys something --------------------------------------------------------------------------------

GPU_YEAR = GPU_HOUR * 8760


def _chunked_prefill(slo: dict[str, object], fleet: int | None = 1000) -> dict[str, object]:
    flags: dict[str, object] = {"recurring": True, "latency_slo": {"p99_ms": 1500, **slo}}
    if fleet is not None:
        flags["fleet_gpus"] = fleet
    return {"target": "serving_step", "p": 1.0, "k": 1 / 1.04, "cost_weeks": 3, "flags": flags}


def test_chunked_prefill_that_meets_a_violated_ttft_slo_is_funded_on_the_slo() -> None:
    """Each step 4% slower; p99 TTFT 2.4 s → 1.3 s under 1.5 s; meeting it otherwise takes 96 GPUs ($1.68M a
    year); the slowdown takes 40 of 1,000 GPUs ($701k): $981k a year net against $15k."""
    evaluation = review(_chunked_prefill({"p99_before_ms": 2400, "p99_after_ms": 1300, "gpus_otherwise": 96}))
    slowdown = 1000 * 0.04
    net = 96 * GPU_YEAR - slowdown * GPU_YEAR
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "slo_met"
    figures = finding(evaluation, "slo_met").figures
    assert figures["slowdown_gpus"] == pytest.approx(slowdown)
    assert figures["net_usd_per_year"] == pytest.approx(net)
    # what was bought, and what it cost in step time
    assert evaluation.statement.startswith(
        "At a 4% slower step the p99 goes from 2400 ms to 1300 ms, under its 1500 ms SLO: meeting it otherwise "
        "takes 96 more GPUs"
    )
    assert "less the 40 GPU-equivalents its slower step takes on 1,000 GPUs" in evaluation.statement
    assert_one_sentence(evaluation.statement)
    assert "nothing to win" not in " ".join(f.message for f in evaluation.findings)


def test_the_same_slo_on_a_fleet_where_the_slowdown_costs_more_is_declined() -> None:
    """On 4,000 GPUs the 4% slowdown takes 160 GPUs, more than the 96 meeting the SLO otherwise takes."""
    evaluation = review(
        _chunked_prefill({"p99_before_ms": 2400, "p99_after_ms": 1300, "gpus_otherwise": 96}, fleet=4000)
    )
    assert evaluation.verdict == "decline"
    assert finding(evaluation, "slo_met").figures["net_usd_per_year"] == pytest.approx((96 - 160) * GPU_YEAR)


def test_an_unpriced_slo_is_funded_only_over_the_value_it_must_have() -> None:
    """The policy prices no SLO and no GPUs are named: fund if meeting it is worth the slowdown's $701k a year and
    the $15k of engineering."""
    evaluation = review(_chunked_prefill({"p99_before_ms": 2400, "p99_after_ms": 1300}))
    least = 40 * GPU_YEAR + 3 * WEEK_USD
    assert evaluation.verdict == "fund_if"
    assert finding(evaluation, "slo_met").figures["break_even_usd_per_year"] == pytest.approx(least)
    assert "worth at least $716k a year" in evaluation.statement


def test_the_policys_price_for_an_slo_is_used_when_it_has_one() -> None:
    """$2M a year as the policy prices meeting an SLO, less the $701k slowdown."""
    evaluation = review(_chunked_prefill({"p99_before_ms": 2400, "p99_after_ms": 1300}), slo_met_usd_per_year=2_000_000)
    assert evaluation.verdict == "fund"
    assert finding(evaluation, "slo_met").figures["net_usd_per_year"] == pytest.approx(2_000_000 - 40 * GPU_YEAR)
    assert "as the policy prices it" in evaluation.statement


def test_a_p99_still_over_its_slo_buys_nothing_and_the_slowdown_is_declined() -> None:
    """2.4 s → 1.8 s against 1.5 s: still violated; a 4% slower step is nothing to win."""
    evaluation = review(_chunked_prefill({"p99_before_ms": 2400, "p99_after_ms": 1800, "gpus_otherwise": 96}))
    assert evaluation.verdict == "decline"
    assert "slo_met" not in {f.rule for f in evaluation.findings}


def test_a_power_cap_at_a_power_limited_site_is_funded_on_the_capacity_it_gains() -> None:
    """40 MW at 1,000 W: 40,000 GPUs; at 800 W: 50,000, each 8% slower: 46,000 GPU-equivalents, 6,000 more."""
    evaluation = review(
        {
            "target": "every_kernel",
            "p": 1.0,
            "k": 0.92,
            "cost_weeks": 2,
            "flags": {
                "fleet_gpus": 40_000,
                "recurring": True,
                "power": {"site_mw": 40, "watts_per_gpu_before": 1000, "watts_per_gpu_after": 800},
            },
        }
    )
    before, after = 40e6 // 1000, 40e6 // 800
    gained = after * 0.92 - before
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "power_capacity"
    figures = finding(evaluation, "power_capacity").figures
    assert (figures["gpus_before"], figures["gpus_after"]) == (before, after)
    assert figures["gained_gpus"] == pytest.approx(gained)
    assert figures["annual_value_usd"] == pytest.approx(gained * GPU_YEAR)
    assert evaluation.statement.startswith(
        "At 800 W a GPU instead of 1,000 W the 40 MW site runs 50,000 GPUs instead of 40,000, each 8% slower: "
        "6,000 GPU-equivalents more work (15%)"
    )


def test_a_power_cap_that_slows_more_than_it_powers_is_declined() -> None:
    """At 950 W the site runs 42,105 GPUs, each 20% slower: 33,684 GPU-equivalents, fewer than 40,000."""
    evaluation = review(
        {
            "target": "every_kernel",
            "p": 1.0,
            "k": 0.8,
            "cost_weeks": 2,
            "flags": {"power": {"site_mw": 40, "watts_per_gpu_before": 1000, "watts_per_gpu_after": 950}},
        }
    )
    assert evaluation.verdict == "decline"
    assert finding(evaluation, "power_capacity").figures["gained_gpus"] == pytest.approx(42_105 * 0.8 - 40_000)


# --- whose devices ----------------------------------------------------------------------------------------------


_ASR = {
    "target": "asr_encoder",
    "p": 0.6,
    "k": 2,
    "cost_weeks": 6,
    "flags": {"unowned": {"devices": 120_000_000, "kind": "phones", "generations": 4}},
}


def test_phones_the_company_does_not_pay_for_are_never_gpu_equivalents() -> None:
    """30% faster on-device ASR on 120M phones, 3 more NPU generations at the policy's 4 weeks: $90k; unpriced, so
    fund if the whole step is worth $90k / (120M × 30%) = $0.0025 per phone a year."""
    evaluation = review(_ASR)
    cost = (6 + 3 * 4) * WEEK_USD
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "unowned_devices"
    figures = finding(evaluation, "unowned_devices").figures
    assert figures["break_even_usd_per_device_year"] == pytest.approx(cost / (120e6 * 0.3))
    assert "the company does not pay for" in evaluation.statement
    assert "GPU-equivalent" not in evaluation.statement
    assert "fleet_multiplication" not in {f.rule for f in evaluation.findings}
    assert evaluation.reasoning is not None
    assert "12 engineer-weeks to ship to 3 further device generations" in evaluation.reasoning[2].answer


def test_phones_priced_by_the_policy_are_worth_what_it_says_per_device() -> None:
    """$0.01 per phone a year for the whole step: 120M × $0.01 × 30% = $360k against $90k."""
    evaluation = review(_ASR, unowned_device_usd_per_year=0.01)
    assert evaluation.verdict == "fund"
    assert finding(evaluation, "unowned_devices").figures["value_usd"] == pytest.approx(120e6 * 0.01 * 0.3)


def test_billions_print_as_billions() -> None:
    """$2.6B, never $2600M."""
    from worthit.rules.text import usd

    assert usd(2.6e9) == "$2.6B"
    assert usd(999_960_000) == "$1B"
    assert usd(999_940_000) == "$999.9M"


# --- a roofline ceiling on k --------------------------------------------------------------------------------------


def test_a_3x_claim_on_a_layernorm_at_80_percent_of_hbm_bandwidth_is_decided_at_1_25x() -> None:
    """12% of a 40 ms step at 1.25× (not 3×): saves 12% × 0.2 = 2.4%, 0.96 ms."""
    evaluation = review(
        {
            "target": "fused_layernorm",
            "p": 0.12,
            "k": 3,
            "baseline_ms": 40,
            "cost_weeks": 2,
            "flags": {"fleet_gpus": 2000, "roofline_fraction": 0.8, "roofline_bound": "memory"},
        }
    )
    saving = 0.12 * (1 - 1 / 1.25)
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "roofline"
    assert evaluation.amdahl.saving_fraction == pytest.approx(saving)
    assert evaluation.amdahl.saving_ms == pytest.approx(40 * saving)
    assert finding(evaluation, "fleet_multiplication").figures["gpu_equivalents"] == pytest.approx(2000 * saving)
    assert evaluation.statement.startswith("Fund only the 1.25× its roofline allows, not the 3× claimed")
    assert "80% of peak memory bandwidth" in evaluation.statement
    assert evaluation.reasoning is not None
    assert evaluation.reasoning[0].answer.startswith("Only in part: ")


def test_at_the_roofline_a_claim_that_then_saves_too_little_is_declined() -> None:
    """3% of the step at 90% of peak: at most 1.11×, saving 0.3%, under the 1% noise floor."""
    evaluation = review({"target": "gemm", "p": 0.03, "k": 4, "cost_weeks": 2, "flags": {"roofline_fraction": 0.9}})
    assert evaluation.verdict == "decline"
    assert finding(evaluation, "noise_floor").figures["end_to_end_saving"] == pytest.approx(0.03 * (1 - 0.9))


# --- sentences that fit the situation --------------------------------------------------------------------------------


def test_profiler_overhead_in_host_gaps_is_called_overhead_not_overlap() -> None:
    """Kernels 80 ms and host gaps 35 ms in a 100 ms step timed without the profiler: 15 ms is its overhead."""
    evaluation = review(
        {
            "target": "attention",
            "p": 0.3,
            "k": 2,
            "baseline_ms": 100,
            "scope": {"profiler_overhead": True},
            "breakdown": [
                {"name": "attention", "ms": 30},
                {"name": "mlp", "ms": 50},
                {"name": "launch gaps", "ms": 35, "kind": "host"},
            ],
        }
    )
    assert evaluation.verdict == "remeasure"
    message = finding(evaluation, "overlap_double_count").message
    assert "15 ms is the profiler's own overhead, most of it in the 35 ms of host gaps" in message
    assert "counted twice" not in message


def test_a_burst_measured_for_a_sustained_service_is_about_clocks_not_batching() -> None:
    """A 10-second burst against sustained load: thermal and power limits, not "batching changes what dominates"."""
    evaluation = review(
        {"target": "decode", "p": 0.4, "k": 1.3, "scope": {"load": "burst", "target_load": "sustained"}}
    )
    assert evaluation.verdict == "remeasure"
    message = finding(evaluation, "input_shift").message
    assert "clocks settle lower once hot and power-limited" in message
    assert "batching" not in message


def test_a_k_from_a_microbenchmark_is_said_to_be_where_k_came_from() -> None:
    """k from a 4096² microbenchmark for a share of the serving step: not "the share compares unlike runs"."""
    evaluation = review(
        {
            "target": "gemm",
            "p": 0.3,
            "k": 1.8,
            "scope": {"input": "serving batch", "k_measured": "microbenchmark", "compared_to": {"input": "4096x4096"}},
        }
    )
    message = finding(evaluation, "measurement_scope").message
    assert message.startswith("The k was measured on a microbenchmark (4096x4096), not in the step the 30% share is of")
    assert "compares unlike runs" not in message


_GOODPUT = [
    {"name": "productive training", "ms": 800, "kind": "other"},
    {"name": "checkpoint save", "ms": 120, "kind": "io"},
    {"name": "restart and reload", "ms": 80, "kind": "other"},
]


def test_the_productive_work_itself_is_never_offered_as_the_larger_target() -> None:
    """A goodput breakdown: a checkpoint at 12% made 4× faster; "productive training at 80%" is no alternative."""
    evaluation = review({"target": "checkpoint save", "p": 0.12, "k": 4, "cost_weeks": 3, "breakdown": _GOODPUT})
    everything = " ".join(f.message for f in evaluation.findings) + " ".join(
        stage.answer for stage in evaluation.reasoning or ()
    )
    assert "productive training" not in everything
    assert evaluation.verdict == "fund"


def test_a_samplers_k_is_never_offered_on_a_vendor_library_gemm() -> None:
    """A 6.7× top-k sampler kernel (8% of the step) beside cuBLAS GEMMs at 60%: their lever is their own."""
    evaluation = review(
        {
            "target": "topk_sampler",
            "p": 0.08,
            "k": 6.7,
            "baseline_ms": 50,
            "cost_weeks": 2,
            "breakdown": [
                {"name": "topk_sampler", "ms": 4},
                {"name": "sm90_xmma_gemm_bf16bf16_bf16f32", "ms": 30},
                {"name": "flash_attn_fwd", "ms": 16},
            ],
        }
    )
    message = finding(evaluation, "bigger_target").message
    assert "6.7× there" not in message
    assert "vendor library's GEMMs are near their peak already" in message


def test_a_fifth_of_the_step_waiting_at_the_barrier_is_named_as_the_better_target() -> None:
    """A 0.5% kernel on a rank whose barrier wait is 20% of the step: decline names the wait, never "None known"."""
    evaluation = review(
        {
            "target": "rope",
            "p": 0.005,
            "k": 2,
            "baseline_ms": 200,
            "cost_weeks": 1,
            "scope": {"method": "timeline"},
            "flags": {"barrier": {"ranks": 64, "wait_fraction": 0.2, "critical_path": True}},
        }
    )
    assert evaluation.reasoning is not None
    assert "None known" not in evaluation.reasoning[3].answer
    assert "the ranks' wait for the slowest at the barrier" in evaluation.reasoning[3].answer + evaluation.statement


def test_a_longer_sequence_is_not_blamed_on_batching() -> None:
    """p measured at 8k tokens for a 128k-token service: the input's size, not batching, changes what dominates."""
    evaluation = review(
        {"target": "attention", "p": 0.3, "k": 2.5, "scope": {"input": "seq 8k", "target_input": "seq 128k"}}
    )
    assert evaluation.verdict == "remeasure"
    assert "the input's size changes what dominates" in evaluation.statement
    assert "batching" not in evaluation.statement


def test_customer_gpus_unpriced_are_funded_on_the_per_device_break_even_not_declined_on_the_per_run_rate() -> None:
    """13.3% on 30,000 customer GPUs, 8 weeks + 2 ports of 6: $100k; unpriced, so fund if the whole step is worth
    $100k / (30,000 × 13.3%) = $25 per GPU a year, never a decline on the company's own per-run rate."""
    evaluation = review(
        {
            "target": "attention",
            "p": 0.4,
            "k": 1.5,
            "cost_weeks": 8,
            "flags": {"unowned": {"devices": 30_000, "kind": "customer GPUs", "generations": 3, "port_weeks": 6}},
        }
    )
    saving = 0.4 * (1 - 1 / 1.5)
    assert evaluation.verdict == "fund_if"
    figures = finding(evaluation, "unowned_devices").figures
    assert figures["break_even_usd_per_device_year"] == pytest.approx((8 + 2 * 6) * WEEK_USD / (30_000 * saving))
    assert finding(evaluation, "rate_of_return").effect == "info"


_TRADES_BLOCK = """\
target: serving_step
p: 100%
k: 0.96x
cost_people: 2
cost_calendar_weeks: 3w
cost_gpu_hours: 2k
flags:
  fleet_gpus: 1k
  recurring: true
  latency_slo: {p99_ms: 1.5s, p99_before_ms: 2.4s, p99_after_ms: 1300ms, gpus_otherwise: 96}
  roofline_fraction: 50%
"""


def test_the_gate_block_reads_the_new_fields_in_the_shared_shorthand() -> None:
    """Units the one field table reads (service/units.py): seconds, GPU-hours, people × weeks, GPUs, a share."""
    from worthit.service import units
    from worthit.service.gate import read_proposal

    proposal = read_proposal(_TRADES_BLOCK)
    assert (proposal.cost_people, proposal.cost_calendar_weeks, proposal.cost_weeks) == (2, 3.0, 6.0)
    assert proposal.cost_gpu_hours == 2000.0
    slo = proposal.flags.latency_slo
    assert slo is not None
    assert (slo.p99_ms, slo.p99_before_ms, slo.p99_after_ms, slo.gpus_otherwise) == (1500.0, 2400.0, 1300.0, 96)
    assert slo.p99_measured_worse is False  # read off the two measurements
    assert proposal.flags.roofline_fraction == 0.5
    assert (units.watts("0.7kW"), units.megawatts("40000kW"), units.gpu_hours("150,000 GPU-hours")) == (
        700.0,
        40.0,
        150_000.0,
    )


def test_a_whole_forward_backward_pass_is_not_offered_a_resize_kernels_k() -> None:
    """A 3% resize kernel beside a 60% forward_backward and a 31.7% dataloader wait: the wait is where the effort
    belongs, never "the same 3× on forward_backward"."""
    evaluation = review(
        {
            "target": "resize_kernel",
            "p": 0.03,
            "k": 3,
            "baseline_ms": 300,
            "cost_weeks": 3,
            "breakdown": [
                {"name": "resize_kernel", "ms": 9},
                {"name": "forward_backward", "ms": 180},
                {"name": "dataloader wait", "ms": 95, "kind": "input"},
                {"name": "optimizer", "ms": 16},
            ],
            "flags": {"fleet_gpus": 256, "run_days": 20},
        }
    )
    assert evaluation.verdict == "redirect"
    assert f"dataloader wait at {95 / 300:.1%} (95 ms) is where the effort belongs" in evaluation.statement
    assert "forward_backward" not in " ".join(f.message for f in evaluation.findings)
    # stage 4 speaks of the same time the statement names, not of the 5.3% optimizer beside it
    assert evaluation.reasoning is not None
    assert evaluation.reasoning[3].answer.startswith(f"{95 / 300:.1%} of the step (95 ms) is not kernel time")
