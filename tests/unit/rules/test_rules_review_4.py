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
