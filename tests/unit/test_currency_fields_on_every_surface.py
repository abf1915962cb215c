"""The fields of the currencies besides time (memory, quality, added work, GPU time per start) read the same on
every surface: Slack's shorthand, the PR gate's block and
the one field table (service/units.py) they share."""

from __future__ import annotations

import pytest

from worthit.rules.engine import evaluate
from worthit.rules.policy import default_policy
from worthit.service import units
from worthit.service.gate import judge, read_proposal
from worthit.service.slack.text import Command, parse


@pytest.mark.parametrize(
    ("read", "text", "expected"),
    [
        (units.points, "0.3pt", 0.3),
        (units.points, "0.3 points", 0.3),
        (units.points, "75.1", 75.1),
        (units.minutes, "45min", 45.0),
        (units.minutes, "0.75h", 45.0),
        (units.minutes, "2700s", 45.0),
        (units.per_day, "2000/day", 2000.0),
        (units.per_day, "2k/day", 2000.0),
        (units.per_day, "2,000 per day", 2000.0),
        (units.whole, "4", 4),
        (units.whole, "4 tokens", 4),
        (units.days, "30d", 30.0),
        (units.days, "2w", 14.0),
    ],
)
def test_each_new_form_reads(read: object, text: str, expected: object) -> None:
    """Quality points, GPU-minutes, starts a day, drafted tokens and days read as the API's numbers."""
    assert read(text) == expected  # type: ignore[operator]


def test_slack_reads_every_new_field() -> None:
    """`/worthit` with the memory goal, the quality gate, speculative decoding and the GPU time per start."""
    parsed = parse(
        "p=40% k=1.5 cost=3w fleet=2k mem=180GB mem_after=120GB device_mem=141GB headroom=8GB metric=MMLU "
        "metric_base=71.2 metric_new=70.3 metric_gate=0.3pt gamma=4 alpha=70% draft_cost=0.1x verify_cost=1.2x "
        "start_cost=45min starts=2k/day recurring"
    )
    assert isinstance(parsed, Command)
    proposal = parsed.proposal
    assert proposal.goal is not None
    assert (proposal.goal.memory_after_gb, proposal.goal.memory_headroom_gb) == (120.0, 8.0)
    assert proposal.quality is not None
    assert (proposal.quality.candidate, proposal.quality.max_regression) == (70.3, 0.3)
    assert proposal.added_work is not None
    assert proposal.added_work.speculative is not None
    assert proposal.added_work.speculative.acceptance == 0.7
    assert (proposal.flags.gpu_minutes_per_start, proposal.flags.starts_per_day) == (45.0, 2000.0)
    assert proposal.flags.recurring is True


GATE_BLOCK = """\
target: gemm_qkv
p: 30%
k: 2x
baseline_ms: 80ms
scope: {method: timeline, measured: step}
added_work:
  phases:
    - {name: dequantize, ms: 500us}
quality: {metric: accuracy, baseline: 80.1, candidate: 79.95, max_regression: 0.2pt}
flags: {gpu_minutes_per_start: 3min, starts_per_day: 20/day, fleet_gpus: 64, recurring: true}
"""


def test_the_gate_reads_the_new_fields_and_a_missing_cost_passes_only_with_a_warning() -> None:
    """The block's shorthand reads as the API's numbers; no cost estimate makes the gate warn, never a clean pass."""
    proposal = read_proposal(GATE_BLOCK)
    assert proposal.added_work is not None
    assert proposal.added_work.phases is not None
    assert proposal.added_work.phases[0].ms == 0.5
    assert proposal.quality is not None
    assert proposal.quality.max_regression == 0.2
    assert proposal.flags.gpu_minutes_per_start == 3.0
    evaluation = evaluate(proposal, default_policy())
    assert evaluation.verdict == "fund_if"
    assert evaluation.deciding_rule == "unstated_cost"
    assert judge(evaluation.verdict, default_policy().gate).level == "warning"


def test_review_explain_shows_the_stage_a_new_field_decides_in() -> None:
    """`worthit review --explain`: the quality gate at the worth stage, GPU time per start at the cost stage."""
    import msgspec

    from worthit.rules.model import Proposal
    from worthit.service.present.render import terminal

    raw = {
        "target": "gemm_fp8",
        "p": 0.4,
        "k": 1.5,
        "cost_weeks": 3,
        "flags": {"fleet_gpus": 1000, "gpu_minutes_per_start": 20, "starts_per_day": 100},
        "quality": {"metric": "accuracy", "baseline": 80.0, "candidate": 79.0, "max_regression": 0.5},
    }
    text = terminal(evaluate(msgspec.convert(raw, Proposal), default_policy()), explain=True)
    assert "[worth: condition] quality_gate: Fund only if accuracy recovers to at least 79.5" in text
    assert "[cost: info] recurring_gpu_cost: 20 GPU-minutes on each of 100 starts a day" in text
    assert "2. What is it worth?\n     Fund only if accuracy recovers" in text
