"""Proposals at real size whose answers a reviewer could not sign, each pinned with figures re-derived
here from PRODUCT §2 and the default policy ($2 a GPU-hour, $5,000 an engineer-week, 12 months, 1% noise floor,
1% of the step per engineer-week), never read back from the engine."""

from __future__ import annotations

import msgspec
import pytest

from tests.unit.rules.helpers import SEED_BREAKDOWN, assert_one_sentence, finding, review
from worthit.rules.model import Proposal
from worthit.rules.policy import default_policy
from worthit.rules.portfolio import Portfolio, portfolio

# --- stage 5 states the objection that decides a decline ---------------------------------------------------------


def test_a_p99_measured_worse_is_stage_5s_answer_not_none() -> None:
    """rmsnorm fused away, 5% of a 40 ms serving step on 20,000 GPUs (1,000 GPU-equivalents, $17.5M a year), its
    p99 measured worse against a 200 ms SLO: declined by tail_latency, a stage-5 check, while stage 5 answered
    "None." and no stage of the reasoning said why the verdict is decline."""
    evaluation = review(
        {
            "target": "rmsnorm_fused",
            "p": 0.05,
            "k": "inf",
            "baseline_ms": 40,
            "cost_weeks": 6,
            "flags": {
                "fleet_gpus": 20000,
                "latency_slo": {"p99_ms": 200, "tail_risk": True, "p99_measured_worse": True},
            },
        }
    )
    assert evaluation.verdict == "decline"
    assert evaluation.deciding_rule == "tail_latency"
    stage_5 = (evaluation.reasoning or [])[4]
    assert stage_5.answer == "No: " + evaluation.statement
    assert "tail_latency" in stage_5.rules


# --- the kernel-is-the-product statement says whose upkeep figure it counts ---------------------------------------

_PRODUCT = {
    "target": "gemm_fp8_asm",
    "p": 0.0375,
    "k": 5,
    "baseline_ms": 100,
    "cost_weeks": 3,
    "flags": {"portability": "hand_asm", "kernel_is_product": True, "portable_fallback": True},
}


def test_the_products_statement_says_its_upkeep_is_the_policys_figure() -> None:
    """3.75% at 5× saves 3% (3 ms of 100): "3% is worth owning at 2 weeks of upkeep over the horizon" — the 2 weeks
    are the policy's 2 a year over 12 months, which the statement presented as if the proposal had given them."""
    evaluation = review(_PRODUCT)
    assert evaluation.verdict == "fund"
    assert evaluation.deciding_rule == "vendor_product"
    assert "3% is worth owning at 2 weeks of upkeep over the horizon (the policy's figure)" in evaluation.statement
    assert_one_sentence(evaluation.statement)


def test_the_products_own_upkeep_figure_is_not_called_the_policys() -> None:
    """1.5 weeks a year stated for 2 architectures: 3 weeks over 12 months, the proposal's own."""
    flags = {**_PRODUCT["flags"], "maintenance_weeks_per_year": 1.5, "architectures": 2}
    evaluation = review(_PRODUCT | {"flags": flags})
    assert "3% is worth owning at 3 weeks of upkeep over the horizon, which" in evaluation.statement
    assert "policy" not in evaluation.statement


# --- each rank's arrival stated is a measurement across all ranks ---------------------------------------------------

# An 8-rank step of 400 ms: rank 7 also runs the LM head and loss (40 ms), arriving at 380 ms; ranks 3 and 0 arrive
# at 352 and 350 ms. No wait_fraction stated: the arrivals are the measurement.
_LM_HEAD = {
    "target": "lm_head_loss",
    "p": 0.1,
    "baseline_ms": 400,
    "cost_weeks": 3,
    "scope": {"workload": "training", "measured": "step", "method": "timeline"},
    "flags": {
        "barrier": {
            "ranks": 8,
            "straggler": 7,
            "rank": 7,
            "step_ms": 400,
            "target_ms": 40,
            "arrivals": [
                {"rank": 7, "compute_ms": 380, "target_ms": 40},
                {"rank": 3, "compute_ms": 352},
                {"rank": 0, "compute_ms": 350},
            ],
        }
    },
}


def test_arrivals_across_the_ranks_need_no_wait_fraction_to_be_trusted() -> None:
    """4× on the straggler's 40 ms: rank 7 arrives at 380 − 30 = 350 ms, rank 3's 352 ms then sets the step, 372 ms
    (28 ms, 7%, 9.33 ms a week for 3 weeks). With each rank's arrival given but no wait_fraction, the answer was
    remeasure: "one rank's profile has the wrong denominator; trace the collective across all ranks"."""
    evaluation = review(_LM_HEAD | {"k": 4})
    saving = (380 - max(380 - 40 * (1 - 1 / 4), 352, 350)) / 400
    assert saving == pytest.approx(0.07)
    assert evaluation.verdict == "fund"
    assert evaluation.amdahl.new_ms == pytest.approx(400 * (1 - saving))
    barrier = finding(evaluation, "barrier_denominator")
    assert barrier.effect == "info"
    assert barrier.figures["p_distributed"] == pytest.approx(40 / 400)
    assert "arrivals at the collective measured on 3 ranks" in barrier.message


def test_a_slowdown_on_the_straggler_with_measured_arrivals_is_declined_not_remeasured() -> None:
    """0.8× on the straggler: rank 7 arrives at 380 + 40 × (1/0.8 − 1) = 390 ms, the step 410 ms, 2.5% longer."""
    evaluation = review(_LM_HEAD | {"k": 0.8, "cost_weeks": 1})
    assert evaluation.verdict == "decline"
    assert evaluation.amdahl.new_ms == pytest.approx(400 - 380 + (380 + 40 * (1 / 0.8 - 1)))
    assert "2.5% longer" in evaluation.statement
    assert (evaluation.reasoning or [])[0].answer.startswith("Yes")


def test_stage_4_names_the_slowest_ranks_compute_the_redirect_names() -> None:
    """gemm_ffn, 120 ms of a 400 ms step on a rank stated off the critical path of a 16-rank barrier, 1.5×: its rank
    waits 120 × (1 − 1/1.5) = 40 ms more and the step saves nothing. The statement sends the effort to "the slowest
    rank's compute" while stage 4 answered "None known: nothing in the breakdown is larger than the target"."""
    evaluation = review(
        {
            "target": "gemm_ffn",
            "p": 0.3,
            "k": 1.5,
            "baseline_ms": 400,
            "cost_weeks": 3,
            "breakdown": [
                {"name": "gemm_ffn", "ms": 120},
                {"name": "attention", "ms": 100},
                {"name": "allreduce", "ms": 80, "kind": "comm"},
                {"name": "other", "ms": 100, "kind": "other"},
            ],
            "flags": {"barrier": {"ranks": 16, "critical_path": False}},
        }
    )
    assert evaluation.verdict == "redirect"
    assert f"waits {120 * (1 - 1 / 1.5):.0f} ms more" in evaluation.statement
    assert "the slowest rank's compute is where the effort belongs" in evaluation.statement
    stage_4 = (evaluation.reasoning or [])[3]
    assert stage_4.answer.startswith("Yes: the slowest rank's compute")


# --- the printed before, after and saving add up ------------------------------------------------------------------


def test_the_seeds_follow_up_prints_a_saving_its_before_and_after_add_up_to() -> None:
    """The seed's further 2× on attention_softmax after its 10×: 2.1 ms of the 81.1 ms step, half of it saved, the
    step 80.05 ms. Both halves round up at one decimal: "from 81.1 ms to 80.1 ms (1.013×), saving 1.1 ms", where
    81.1 − 80.1 is 1.0; at two decimals they add up."""
    evaluation = review(
        {"target": "attention_softmax", "p": 2.1 / 81.1, "k": 2, "baseline_ms": 81.1, "cost_weeks": 2, "prior_k": 10}
    )
    assert evaluation.amdahl.new_ms == pytest.approx(81.1 - 1.05)
    assert evaluation.verdict == "decline"
    assert "takes the step from 81.1 ms to 80.05 ms (1.013×), saving 1.05 ms" in finding(evaluation, "amdahl").message


@pytest.mark.parametrize(
    ("step", "p", "k", "said"),
    [
        (350, 0.02, 4, "from 350 ms to 344.75 ms (1.015×), saving 5.25 ms"),  # 5.3 and 344.8 before
        (30, 0.45, 2, "from 30 ms to 23.25 ms (1.29×), saving 6.75 ms"),  # 6.8 and 23.3 before
        (100, 0.21, 10, "from 100 ms to 81.1 ms (1.233×), saving 18.9 ms"),  # the seed, as it was
        (28, 0.55, 1.6, "from 28 ms to 22.2 ms (1.26×), saving 5.8 ms"),  # 22.225 and 5.775 add up at one decimal
    ],
)
def test_before_after_and_saving_print_at_digits_that_add_up(step: float, p: float, k: float, said: str) -> None:
    saving = step * p * (1 - 1 / k)
    evaluation = review({"target": "kernel", "p": p, "k": k, "baseline_ms": step, "cost_weeks": 1})
    assert evaluation.amdahl.saving_ms == pytest.approx(saving)
    assert said in finding(evaluation, "amdahl").message


# --- a portfolio's notes and message say what the figures hold ------------------------------------------------------

_SERVING = {"workload": "serving", "measured": "step", "method": "timeline"}
_FLEET = {"fleet_gpus": 2000, "recurring": True}


def _serving_portfolio() -> Portfolio:
    kv_cache = {
        "title": "FP8 KV cache",
        "target": "attention_decode",
        "p": 0.35,
        "k": 0.9,
        "baseline_ms": 28,
        "cost_weeks": 4,
        "scope": _SERVING,
        "flags": _FLEET,
        "goal": {
            "memory_required_gb": 180,
            "memory_after_gb": 120,
            "device_memory_gb": 80,
            "memory_headroom_gb": 8,
        },
    }
    flash = {"title": "flash decoding", "target": "attention_decode", "p": 0.3, "k": 2, "baseline_ms": 28}
    flash |= {"cost_weeks": 4, "scope": _SERVING, "flags": _FLEET}
    sampler = {"title": "sampler on GPU", "target": "sampler", "p": 0.05, "k": 5, "baseline_ms": 28, "cost_weeks": 2}
    sampler |= {"scope": _SERVING, "flags": _FLEET}
    proposals = [msgspec.convert(raw, Proposal) for raw in (kv_cache, flash, sampler)]
    return portfolio(proposals, default_policy(), budget_weeks=10)


def test_an_alternative_of_equal_weeks_is_not_said_to_cost_more_weeks() -> None:
    """FP8 KV cache (a replica on 2 GPUs of 72 GB usable instead of 3: 1/3 of them freed, net of a step
    0.35 × (1/0.9 − 1) = 3.89% longer, 1 − 2/3 × 1.0389 = 30.7% of the capacity, 4 weeks) beside flash decoding on
    the same target (0.3 × (1 − 1/2) = 15% of the step, 4 weeks): the note on flash decoding said the KV cache
    "saves as much for fewer weeks" — it saves none (the step is longer) and costs the same 4 weeks."""
    result = _serving_portfolio()
    capacity = 1 - (2 / 3) * (1 + 0.35 * (1 / 0.9 - 1))
    kv, flash = (next(e for e in result.entries if e.title == title) for title in ("FP8 KV cache", "flash decoding"))
    assert kv.value_fraction == pytest.approx(capacity)
    assert flash.value_fraction == pytest.approx(0.15)
    assert (kv.cost_weeks, flash.cost_weeks) == (4, 4)
    assert kv.funded
    assert not flash.funded
    assert flash.note == f"same target as rank {kv.rank}, which is worth as much for no more weeks"


def test_a_portfolios_step_is_never_said_to_go_from_28_ms_to_28_ms() -> None:
    """The KV cache's 1.089 ms longer step and the sampler's 28 × 0.05 × 0.8 = 1.12 ms saving leave 27.969 ms: the
    message said "take the step from 28 ms to 28 ms (1.001×)"."""
    result = _serving_portfolio()
    new_ms = 28 - 28 * 0.05 * (1 - 1 / 5) + 28 * 0.35 * (1 / 0.9 - 1)
    assert result.combined_new_ms == pytest.approx(new_ms)
    assert f"take the step from 28 ms to {new_ms:.2f} ms (1.001×)" in result.message


def test_one_replica_meets_a_throughput_goal() -> None:
    """Decode 60% of a 25 ms step at 1.3×: 25 × (0.4 + 0.6/1.3) = 21.54 ms; 48 requests a pass serve 2,228.6 a second
    on one GPU, so one replica meets 2,000 a second (1,920 before: two). The sentence said "1 replica meet it"."""
    evaluation = review(
        {
            "target": "decode",
            "p": 0.6,
            "k": 1.3,
            "baseline_ms": 25,
            "cost_weeks": 4,
            "goal": {"throughput_per_s": 2000, "requests_per_step": 48},
        }
    )
    new_ms = 25 * (0.4 + 0.6 / 1.3)
    goal = finding(evaluation, "resource_goal")
    assert goal.figures["replicas_after"] == 1 == -(-2000 // (48 / new_ms * 1000))
    assert goal.figures["replicas_before"] == 2 == -(-2000 // (48 / 25 * 1000))
    assert f"one GPU serves {48 / new_ms * 1000:,.1f} per second, so 1 replica meets it, against 2 before" in (
        goal.message
    )


# --- a range that holds its verdict is argued at the end that binds it, never at its midpoint ------------------------


def test_a_declined_range_is_argued_at_its_best_end() -> None:
    """rope at 0.2–1.2% of a 20 ms step, 2×, 2 weeks: 0.1–0.6% saved, under the 1% floor everywhere. The statement
    was the midpoint's "saves 0.35% end to end" (p = 0.7%, which nobody proposed), beside stage 2's 0.1–0.6%."""
    evaluation = review(
        {"target": "rope", "p": {"low": 0.002, "high": 0.012}, "k": 2, "baseline_ms": 20, "cost_weeks": 2}
    )
    best = 0.012 * (1 - 1 / 2)
    assert evaluation.verdict == "decline"
    assert evaluation.holds_across_range is True
    assert evaluation.statement == (
        f"At p = 1.2%, the most the range saves: Even speeding up rope saves {best * 100:.1f}% end to end, a rounding "
        "error below the 1% noise floor."
    )
    assert "0.35" not in " ".join(f.message for f in evaluation.findings)
    assert evaluation.amdahl.saving_fraction == pytest.approx(best)
    assert_one_sentence(evaluation.statement)


def test_a_rate_that_fails_across_a_range_of_k_is_quoted_at_its_high_end() -> None:
    """3% of 20 ms at 1.2–2× for 4 weeks: at 2× 0.3 ms saved, 75 µs a week against the 200 µs (1% of 20 ms) funded;
    the statement said the midpoint's "1.1% of the step … 56.3 µs per engineer-week" (k = 1.6)."""
    evaluation = review({"target": "rope", "p": 0.03, "k": {"low": 1.2, "high": 2}, "baseline_ms": 20, "cost_weeks": 4})
    rate_us = 20 * 0.03 * (1 - 1 / 2) / 4 * 1000
    assert rate_us == pytest.approx(75)
    assert evaluation.verdict == "decline"
    assert evaluation.statement == (
        "At k = 2×, the most the range saves: 4 engineer-weeks for 1.5% of the step on rope is 75 µs per "
        "engineer-week against the 200 µs the policy funds."
    )
    cost = (evaluation.reasoning or [])[2]
    assert "75 µs per engineer-week" in cost.answer


def test_a_fleet_range_that_pays_everywhere_is_argued_at_its_low_end() -> None:
    """rmsnorm at 0.2–1% of a 40 ms step, 3×, on 1,000 GPUs for 4 weeks: at 0.2% it saves 0.133%, 1.33
    GPU-equivalents, 1.33 × $2 × 8,760 = $23,360 a year against $20,000 — it pays even there, paid back in 10.3
    months. The statement and stage 2 said the midpoint's "0.4% … 4 GPU-equivalents, $70k a year … 3.4 months",
    three times what the low end holds."""
    evaluation = review(
        {
            "target": "rmsnorm",
            "p": {"low": 0.002, "high": 0.01},
            "k": 3,
            "baseline_ms": 40,
            "cost_weeks": 4,
            "flags": {"fleet_gpus": 1000, "recurring": True},
        }
    )
    saving = 0.002 * (1 - 1 / 3)
    gpus = 1000 * saving
    annual = gpus * 2 * 8760
    assert annual == pytest.approx(23_360)
    assert evaluation.verdict == "fund_if"
    assert evaluation.holds_across_range is True
    # The deciding noise floor quotes the range from end to end (its ends are figures), so no one end is named
    # before it: the low end's $23k is its first figure, against the $20k, and the high end's five times that.
    top = 1000 * 0.01 * (1 - 1 / 3) * 2 * 8760
    assert evaluation.statement.startswith("Fund, and confirm the saving in a fleet A/B: 0.13–0.67% per run")
    assert (
        f"it frees {gpus:.2f}–{gpus * 5:.2f} GPU-equivalents, ${annual / 1000:.0f}k–${top / 1000:.0f}k a year "
        "against $20k"
    ) in evaluation.statement
    worth = (evaluation.reasoning or [])[1]
    assert worth.figures["value_usd"] == pytest.approx(annual)
    assert f"paid back in {20_000 / (annual / 12):.1f} months" in worth.answer
    assert_one_sentence(evaluation.statement)


def test_a_range_funded_outright_only_above_its_low_end_is_funded_on_the_low_ends_condition() -> None:
    """attention_softmax 21% of the seed's 100 ms step at 2–10×, 3 weeks: at 2× it saves 10.5 ms while gemm_qkv's
    34 ms is over twice that (the same 2× there: 100 / 83 = 1.205×), so the low end is fund_if; the midpoint 6×
    (17.5 ms, 34 < 35) was funded outright, and so was the range."""
    evaluation = review(
        {
            "target": "attention_softmax",
            "p": 0.21,
            "k": {"low": 2, "high": 10},
            "baseline_ms": 100,
            "cost_weeks": 3,
            "breakdown": SEED_BREAKDOWN,
        }
    )
    assert 34 >= 2 * 21 * (1 - 1 / 2)
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "bigger_target"
    assert evaluation.statement.startswith("At k = 2×, the least the range saves: Fund, though gemm_qkv at 34%")
    assert f"the same 2× there gives {100 / (100 - 17):.3f}× (83 ms)" in evaluation.statement
    assert_one_sentence(evaluation.statement)


# --- the ceiling of a ranged k is said over the range -----------------------------------------------------------------


def test_the_ceiling_of_a_ranged_k_is_said_over_the_range_not_at_its_midpoint() -> None:
    """attention_softmax 21% of 100 ms at 2–10×: it captures 1 − 1/2 = 50% to 90% of its headroom, leaving
    21/10 = 2.1 to 21/2 = 10.5 ms, and gemm_qkv leads after it at 34/89.5 = 38% to 34/81.1 = 41.9%. The ceiling
    said "At 6× … 83.3% … 3.5 ms", the midpoint's k."""
    evaluation = review(
        {
            "target": "attention_softmax",
            "p": 0.21,
            "k": {"low": 2, "high": 10},
            "baseline_ms": 100,
            "cost_weeks": 3,
            "breakdown": SEED_BREAKDOWN,
        }
    )
    ceiling = finding(evaluation, "ceiling")
    assert ceiling.message == (
        "At 2–10× attention_softmax captures 50–90% of its own headroom, leaving 2.1–10.5 ms for any follow-up, and "
        f"even at zero the step stops at 79 ms ({1 / 0.79:.3f}×); gemm_qkv stays the bottleneck at "
        f"{34 / 89.5 * 100:.0f}–{34 / 81.1 * 100:.1f}%."
    )
    assert ceiling.figures["remaining_ms_low"] == pytest.approx(2.1)
    assert ceiling.figures["remaining_ms_high"] == pytest.approx(10.5)
    assert "At 6×" not in ceiling.message


def test_the_ceiling_behind_a_barrier_of_a_ranged_k_is_said_over_the_range() -> None:
    """A hot MoE expert: rank 5 arrives at 360 ms of a 400 ms step with 90 ms of the expert FFN, rank 2 at 345 ms
    with 60 ms, rank 0 at 330 with 50. At zero the ranks arrive at 270, 285, 280: rank 2 sets the step at 325 ms, so
    the step can lose 75 ms (18.75%). At 1.1× rank 5 arrives at 360 − 90/11 = 351.8 (saving 8.2 ms, 10.9% of the
    75); at 3× at 300, and rank 2's 345 − 40 = 305 sets it (55 ms, 73.3%), leaving 66.8 to 20 ms."""
    evaluation = review(
        {
            "target": "moe_expert_ffn",
            "p": 0.225,
            "k": {"low": 1.1, "high": 3},
            "baseline_ms": 400,
            "cost_weeks": 6,
            "flags": {
                "barrier": {
                    "ranks": 8,
                    "wait_fraction": 0.12,
                    "straggler": 5,
                    "rank": 5,
                    "step_ms": 400,
                    "target_ms": 90,
                    "arrivals": [
                        {"rank": 5, "compute_ms": 360, "target_ms": 90},
                        {"rank": 2, "compute_ms": 345, "target_ms": 60},
                        {"rank": 0, "compute_ms": 330, "target_ms": 50},
                    ],
                }
            },
        }
    )
    low = 360 - max(360 - 90 * (1 - 1 / 1.1), 345 - 60 * (1 - 1 / 1.1), 330 - 50 * (1 - 1 / 1.1))
    high = 360 - max(360 - 90 * (1 - 1 / 3), 345 - 60 * (1 - 1 / 3), 330 - 50 * (1 - 1 / 3))
    ceiling_ms = 360 - max(270, 285, 280)
    assert (high, ceiling_ms) == (pytest.approx(55), 75)
    ceiling = finding(evaluation, "ceiling")
    assert ceiling.message == (
        "Behind the barrier the step can lose 18.8% of itself through moe_expert_ffn's 22.5%: at 1.1–3× it captures "
        f"{low / ceiling_ms * 100:.1f}–{high / ceiling_ms * 100:.1f}% of that, leaving "
        f"{ceiling_ms - high:.0f}–{ceiling_ms - low:.1f} ms for any follow-up, and even at zero the step stops at "
        f"325 ms ({400 / 325:.3f}×), where rank 2 sets it."
    )


# --- a slowdown is no return, never a negative one ------------------------------------------------------------------


def test_a_slowdown_is_said_as_no_return_not_a_negative_rate_for_nothing() -> None:
    """lm_head and loss on the straggler made 0.8× for a week: rank 7 arrives at 380 + 40 × 0.25 = 390 ms, the
    step 410 ms, 2.5% longer. Stage 3 said "1 engineer-week for nothing on lm_head_loss is -10 ms per engineer-week
    against the 4 ms the policy funds"."""
    evaluation = review(_LM_HEAD | {"k": 0.8, "cost_weeks": 1})
    rate = finding(evaluation, "rate_of_return")
    assert rate.figures["rate_ms"] == pytest.approx(-10.0)
    assert rate.message == (
        "1 engineer-week on lm_head_loss for a step 2.5% longer: no return, against the 4 ms per engineer-week the "
        "policy funds."
    )


def test_a_memory_fix_with_a_slower_step_is_not_a_negative_return_under_the_bar() -> None:
    """An FP8 KV cache fitting a replica on 2 GPUs instead of 3, its attention 0.9× (0.35 × (1/0.9 − 1) = 3.9% longer
    step) on 800 GPUs: the rate's note said "4 engineer-weeks for -3.9% of the step is -0.97% per engineer-week"."""
    evaluation = review(
        {
            "target": "attention_decode",
            "p": 0.35,
            "k": 0.9,
            "baseline_ms": 30,
            "cost_weeks": 4,
            "flags": {"fleet_gpus": 800, "recurring": True},
            "goal": {
                "memory_required_gb": 180,
                "memory_after_gb": 120,
                "device_memory_gb": 80,
                "memory_headroom_gb": 8,
            },
        }
    )
    assert evaluation.verdict == "fund"
    rate = finding(evaluation, "rate_of_return")
    longer = 0.35 * (1 / 0.9 - 1)
    assert rate.message == (
        f"Per run, 4 engineer-weeks for a step {longer * 100:.1f}% longer returns nothing, under the 1% bar, which "
        "the value of the work carries."
    )


# --- a measured barrier whose share is not the p the arithmetic ran on ----------------------------------------------

_ONE_RANKS_P = {
    "target": "layernorm_bwd",
    "p": 0.02,
    "k": 4,
    "baseline_ms": 350,
    "cost_weeks": 2,
    "scope": {"workload": "training", "measured": "rank", "method": "timeline"},
    "flags": {
        "barrier": {
            "ranks": 64,
            "wait_fraction": 0.18,
            "straggler": 5,
            "step_ms": 350,
            "target_ms": 14,
            "rank_p": 0.02,
        }
    },
}


def test_a_single_ranks_p_beside_a_measured_barrier_is_re_run_at_the_steps_share() -> None:
    """The seed's 2% on a barrier's critical path, measured across 64 ranks: 14 ms of the 350 ms step every rank
    waits for is 4%. barrier_denominator said "2% of one rank's device activity but 4% of the 350 ms step …, so p is
    taken against the step" while the decision ran on the 2%: 1.5% saved, 2.6 ms a week against 3.5, declined."""
    evaluation = review(_ONE_RANKS_P)
    assert evaluation.verdict == "remeasure"
    assert evaluation.deciding_rule == "barrier_denominator"
    assert evaluation.statement == (
        "Measured across 64 ranks, layernorm_bwd on rank 5 is 14 ms of the 350 ms step every rank waits for, "
        f"{14 / 350 * 100:.0f}%, not the 2% the arithmetic ran on; re-run it with p = 4%."
    )
    assert_one_sentence(evaluation.statement)


def test_re_run_at_the_steps_share_the_seeds_barrier_case_is_funded() -> None:
    """At p = 4%, 4×: 3% of the 350 ms step, 10.5 ms, 5.25 ms a week for 2 weeks against the 3.5 ms funded."""
    evaluation = review(_ONE_RANKS_P | {"p": 0.04})
    assert evaluation.verdict == "fund"
    assert evaluation.amdahl.rate == pytest.approx(350 * 0.04 * (1 - 1 / 4) / 2)
    assert finding(evaluation, "barrier_denominator").effect == "info"


def test_a_corner_that_asks_to_remeasure_does_not_bind_a_range_the_breakdown_agrees_with() -> None:
    """rope at 1–9% of a 100 ms step whose breakdown gives it 5 ms: the ends disagree with the breakdown (9% ≠ 5%),
    the midpoint does not, and it is declined there (5% at 1.5× is 1.67 ms, 167 µs a week for 10 weeks, gemm's 60 ms
    the better use). Argued at the end that saves most, the decision became that end's remeasure."""
    evaluation = review(
        {
            "target": "rope",
            "p": {"low": 0.01, "high": 0.09},
            "k": 1.5,
            "baseline_ms": 100,
            "cost_weeks": 10,
            "breakdown": [
                {"name": "rope", "ms": 5},
                {"name": "gemm", "ms": 60},
                {"name": "other", "ms": 35, "kind": "other"},
            ],
        }
    )
    assert evaluation.verdict == "redirect"
    assert evaluation.deciding_rule == "rate_of_return"
    assert f"{100 * 0.05 * (1 - 1 / 1.5) / 10 * 1000:.1f} µs per engineer-week" in evaluation.statement
