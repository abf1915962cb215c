"""The cases of the seed "whole-model-performance" as tests with their figures and verdicts."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, fired, review
from worthit.rules.model import Phase
from worthit.rules.plans import plan

STEP = [{"name": "attention", "ms": 60}, {"name": "mlp", "ms": 30}, {"name": "rest", "ms": 10}]
ATTENTION: dict[str, Any] = {"target": "attention", "p": 0.6, "k": 3, "baseline_ms": 100, "breakdown": STEP}
TIGHT = 1e-9


def test_attention_60_to_20_ms_is_1_67x_with_a_40_ms_floor() -> None:
    """Attention 3× faster (60 → 20 ms): 60 ms, 1.67×; at zero it still leaves 40 ms, a 2.5× ceiling."""
    evaluation = review(ATTENTION)
    assert evaluation.verdict == "fund"
    assert evaluation.amdahl.new_ms == pytest.approx(60, abs=TIGHT)
    assert round(evaluation.amdahl.speedup, 2) == 1.67
    ceiling = finding(evaluation, "ceiling").figures
    assert ceiling["floor_ms"] == pytest.approx(40, abs=TIGHT)
    assert ceiling["ceiling_speedup"] == pytest.approx(2.5, rel=TIGHT)


def test_the_bottleneck_moves_to_the_mlp() -> None:
    """After attention drops to 20 ms the MLP's unchanged 30 ms goes from 30% to 50% of the step."""
    ceiling = finding(review(ATTENTION), "ceiling")
    assert ceiling.figures["next_bottleneck"] == "mlp"
    assert ceiling.figures["next_bottleneck_share_before"] == pytest.approx(0.3, abs=TIGHT)
    assert ceiling.figures["next_bottleneck_share"] == pytest.approx(0.5, abs=TIGHT)
    assert "30% → 50%" in ceiling.message


def test_and_back_to_attention_after_the_mlp_30_to_15() -> None:
    """MLP 30 → 15 ms on the new 60 ms step: 45 ms, and attention (20 ms) is the largest part again."""
    after = [{"name": "attention", "ms": 20}, {"name": "mlp", "ms": 30}, {"name": "rest", "ms": 10}]
    evaluation = review({"target": "mlp", "p": 0.5, "k": 2, "breakdown": after})
    assert evaluation.amdahl.new_ms == pytest.approx(45, abs=TIGHT)
    assert evaluation.verdict == "fund"
    ceiling = finding(evaluation, "ceiling").figures
    assert ceiling["next_bottleneck"] == "attention"
    assert ceiling["next_bottleneck_share"] == pytest.approx(20 / 45, abs=TIGHT)
    assert "bigger_target" not in fired(evaluation)


def test_plan_over_the_three_parts_shows_the_bottleneck_moving() -> None:
    """A plan at 3× records the bottleneck after each step: the MLP after attention."""
    result = plan([msgspec.convert(phase, Phase) for phase in STEP], target_ms=45, k=3)
    assert result.steps[0].phase == "attention"
    assert result.steps[0].bottleneck == "mlp"
    assert result.steps[0].bottleneck_share == pytest.approx(0.5, abs=TIGHT)


def test_a_30_ms_latency_goal_needs_more_gpus() -> None:
    """100 → 60 ms does not reach 30 ms, and even every part at 3× stops at 33.3 ms on one GPU: redirect."""
    evaluation = review({**ATTENTION, "goal": {"latency_ms": 30}})
    assert evaluation.verdict == "redirect"
    assert evaluation.deciding_rule == "resource_goal"
    figures = finding(evaluation, "resource_goal").figures
    assert figures["single_gpu_floor_ms"] == pytest.approx(100 / 3, rel=TIGHT)
    assert figures["target_at_zero_ms"] == pytest.approx(40, abs=TIGHT)
    assert "more GPUs" in evaluation.statement
    assert "30 ms" in evaluation.statement
    assert_one_sentence(evaluation.statement)


def test_a_30_ms_goal_without_a_breakdown_uses_the_target_at_zero() -> None:
    """Without a breakdown, attention at zero leaves 40 ms, above 30 ms: more GPUs."""
    raw = {key: value for key, value in ATTENTION.items() if key != "breakdown"}
    evaluation = review({**raw, "goal": {"latency_ms": 30}})
    assert evaluation.verdict == "redirect"
    assert finding(evaluation, "resource_goal").figures["single_gpu_floor_ms"] == pytest.approx(40, abs=TIGHT)


def test_a_reachable_latency_goal_gets_its_plan() -> None:
    """A 50 ms goal is reachable on one GPU at 3×: attention and the MLP; the verdict stays fund."""
    evaluation = review({**ATTENTION, "goal": {"latency_ms": 50}})
    assert evaluation.verdict == "fund"
    goal = finding(evaluation, "resource_goal")
    assert goal.figures["plan_phases"] == 2
    assert "attention and mlp" in goal.message


def test_16_gb_on_a_12_gb_device_is_a_capacity_problem() -> None:
    """Reading quickly and having room are different problems: 16 GB on 12 GB is redirected, not sped up."""
    evaluation = review({**ATTENTION, "goal": {"memory_required_gb": 16, "device_memory_gb": 12}})
    assert evaluation.verdict == "redirect"
    assert evaluation.deciding_rule == "resource_goal"
    figures = finding(evaluation, "resource_goal").figures
    assert figures["memory_shortfall_gb"] == pytest.approx(4, abs=TIGHT)
    assert figures["gpus_for_memory"] == 2
    assert "capacity problem" in evaluation.statement
    assert "2 GPUs" in evaluation.statement


def test_a_throughput_goal_is_served_by_replicas() -> None:
    """100 requests/s at 60 ms per pass: 16.7/s per GPU, 6 replicas (10 before); the work still funds."""
    evaluation = review(
        {**ATTENTION, "goal": {"throughput_per_s": 100, "memory_required_gb": 8, "device_memory_gb": 12}}
    )
    assert evaluation.verdict == "fund"
    goal = finding(evaluation, "resource_goal")
    assert goal.effect == "info"
    assert goal.figures["per_gpu_per_s"] == pytest.approx(1000 / 60, rel=TIGHT)
    assert (goal.figures["replicas_after"], goal.figures["replicas_before"]) == (6, 10)
    assert "replica" in goal.message


@pytest.mark.parametrize(
    ("scope", "rule"),
    [
        ({"dtype": "fp32", "compared_to": {"dtype": "bf16"}}, "measurement_scope"),
        ({"model": "llama-8b", "compared_to": {"model": "llama-70b"}}, "measurement_scope"),
        ({"input": "seq 512", "compared_to": {"input": "seq 4096"}}, "measurement_scope"),
        ({"device": "MI300X", "compared_to": {"device": "H100"}}, "measurement_scope"),
        ({"timing": "host_submit"}, "measurement_scope"),
        ({"overlap": True}, "overlap_double_count"),
        ({"input": "batch 1", "target_input": "batch 64"}, "input_shift"),
    ],
)
def test_measurement_mistakes_are_remeasured(scope: dict[str, Any], rule: str) -> None:
    """Same scope, device-side timing, no double counting, the input that matters: otherwise remeasure."""
    evaluation = review({**ATTENTION, "scope": scope})
    assert evaluation.verdict == "remeasure"
    assert evaluation.deciding_rule == rule
    assert_one_sentence(evaluation.statement)


def test_like_with_like_and_device_events_are_fine() -> None:
    """The same model, input, dtype and device, timed with device events: the arithmetic stands."""
    scope = {
        "model": "m",
        "input": "i",
        "dtype": "bf16",
        "device": "MI300X",
        "timing": "device_events",
        "compared_to": {"model": "m", "input": "i", "dtype": "bf16", "device": "MI300X"},
    }
    assert review({**ATTENTION, "scope": scope}).verdict == "fund"


def test_summed_parts_beyond_the_wall_time_double_count() -> None:
    """Compute and copy summed to 115 ms in a 100 ms step: 15 ms counted twice; remeasure."""
    parts = [{"name": "attention", "ms": 60}, {"name": "mlp", "ms": 30}, {"name": "prefetch", "ms": 25, "kind": "copy"}]
    evaluation = review({**ATTENTION, "breakdown": parts})
    assert evaluation.verdict == "remeasure"
    assert evaluation.deciding_rule == "overlap_double_count"
    assert finding(evaluation, "overlap_double_count").figures["double_counted_ms"] == pytest.approx(15, abs=TIGHT)
