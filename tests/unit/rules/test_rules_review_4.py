"""Review round 4: proposals at real size whose answers could not be signed, each pinned with figures re-derived
here from PRODUCT §2 and the default policy ($2 a GPU-hour, $5,000 an engineer-week, 12 months, 1% noise floor,
1% of the step per engineer-week), never read back from the engine."""

from __future__ import annotations

import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, review

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
    assert 20000 * 0.05 * 2 * 8760 == pytest.approx(17_520_000)
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
    assert 0.0375 * (1 - 1 / 5) == pytest.approx(0.03)
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
