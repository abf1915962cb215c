"""One renderer (service/present/render.py): the terminal, the gate's summary, Slack's fields and the decision page
show the same figures in the same words."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from worthit.rules.engine import evaluate
from worthit.rules.model import Evaluation, Proposal
from worthit.rules.policy import default_policy
from worthit.service.api.pages import figure_rows
from worthit.service.decisions.schemas import Decision
from worthit.service.gate.fences import Block
from worthit.service.gate.report import judge, summary_markdown
from worthit.service.present import render
from worthit.service.slack.blocks import figure_fields

SEED = {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}
EXPECTED = [
    ("speedup", "1.233× (ceiling 1.266×)"),
    ("saving", "18.9% of the step = 18.9 ms"),
    ("time", "100 ms → 81.1 ms"),
    ("headroom captured", "90% of the target's own time, 2.1 ms left"),
    ("cost", "3 engineer-weeks"),
    ("return", "6.3 ms per engineer-week"),
]


def _decision(proposal: Proposal) -> Decision:
    evaluation = evaluate(proposal, default_policy())
    return Decision(
        **{name: getattr(evaluation, name) for name in Evaluation.__struct_fields__},
        id="d1",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        proposal=proposal,
    )


def test_every_surface_shows_the_same_rows() -> None:
    proposal = msgspec.convert(SEED | {"scope": {"measured": "step"}}, Proposal)
    decision = _decision(proposal)
    rows = [tuple(row) for row in render.figures(decision)]
    assert rows == EXPECTED
    assert figure_rows(decision) == rows
    slack = [field.text for field in figure_fields(decision)]
    assert slack[: len(rows)] == [f"*{label[0].upper() + label[1:]}*\n{value}" for label, value in rows]
    terminal = render.terminal(decision)
    summary = summary_markdown(
        decision,
        judge(decision.verdict, default_policy().gate),
        default_policy().gate,
        block=Block(text="", line=1),
        blocks=1,
        title=None,
        source="offline",
        measured="step",
    )
    for label, value in rows:
        assert f"  {label:<17}  {value}\n" in terminal
        assert f"| {label} | {value} |" in summary


def test_the_statement_and_the_rows_print_a_figure_alike_at_a_half_way_point() -> None:
    """1.8% at 4× on 100 ms for 1 week saves 100 · 0.018 · 0.75 = 1.35 ms, which the engine computes as the double
    1.3499999999999999 and settles to 1.35: the statement, written from the double, said "saving 1.3 ms, 1.3 ms per
    engineer-week" while every surface's rows, written from the settled figure, said 1.4 ms. Both say the same now,
    as a reviewer rounds 1.35 by hand (1.4 ms a week). The step and its saving are printed at the two decimals at
    which they add up: 98.7 ms and 1.4 ms, each rounded half away from zero, would have said 100 − 98.7 = 1.4."""
    decision = _decision(
        msgspec.convert({"target": "ln", "p": 0.018, "k": 4, "baseline_ms": 100, "cost_weeks": 1}, Proposal)
    )
    assert decision.amdahl.saving_ms == 1.35
    assert decision.statement == (
        "Making ln (1.8% of the step) 4× faster takes the step from 100 ms to 98.65 ms (1.014×), saving 1.35 ms, "
        "1.4 ms per engineer-week."
    )
    rows = dict(render.figures(decision))
    assert rows["saving"] == "1.4% of the step = 1.35 ms"
    assert rows["time"] == "100 ms → 98.65 ms"
    assert rows["return"] == "1.4 ms per engineer-week"


@pytest.mark.parametrize(
    ("measured", "words"),
    [
        ("step", "18.9% of the step"),
        ("device_activity", "18.9% of device activity"),
        ("end_to_end", "18.9% of the run"),
        ("rank", "18.9% of the rank's step"),
        (None, "18.9% of the step"),
    ],
)
def test_the_saving_is_worded_by_the_proposals_scope(measured: str | None, words: str) -> None:
    scope = {"measured": measured} if measured else {}
    decision = _decision(msgspec.convert(SEED | {"scope": scope}, Proposal))
    saving = dict(render.figures(decision))["saving"]
    assert saving == f"{words} = 18.9 ms"
    assert dict(figure_rows(decision))["saving"] == saving
    assert f"*Saving*\n{saving}" in [field.text for field in figure_fields(decision)]


def test_reasoning_stages_render_in_order_with_their_questions() -> None:
    """The stages of the decision, numbered, each its question and answer; the terminal shows them on --explain."""
    evaluation = evaluate(msgspec.convert(SEED, Proposal), default_policy())
    rows = render.reasoning(evaluation)
    assert [row.label for row in rows] == [
        "1. Can these numbers be trusted?",
        "2. What is it worth?",
        "3. What does it cost?",
        "4. Is there a better use of the effort?",
        "5. On what conditions?",
    ]
    assert rows[0].value.startswith("Yes")
    assert "81.1 ms" in rows[1].value
    explained = render.terminal(evaluation, explain=True)
    assert "reasoning:" in explained
    assert explained.index("1. Can these") < explained.index("5. On what conditions?")
    assert "reasoning:" not in render.terminal(evaluation)
    assert render.reasoning(msgspec.structs.replace(evaluation, reasoning=None)) == []


def test_a_collectives_rows_name_its_transfer_and_print_the_statements_gpu_figure() -> None:
    """An all-to-all whose 18% holds 7% of waiting for the slowest rank: the headroom is the transfer's (11% at 1.5×:
    1 - 1/1.5 = 33.3%, 850 ms × 0.11 / 1.5 = 62.3 ms left), and the GPU-equivalents row prints the statement's
    256 × 0.11 × (1 - 1/1.5) = 9.39, not a second rounding of it."""
    raw = {
        "target": "all_to_all",
        "p": 0.18,
        "k": 1.5,
        "baseline_ms": 850,
        "cost_weeks": 6,
        "scope": {"measured": "rank"},
        "flags": {
            "fleet_gpus": 256,
            "run_days": 40,
            "barrier": {"ranks": 256, "critical_path": True, "wait_fraction": 0.3, "target_wait": 0.07},
        },
    }
    decision = _decision(msgspec.convert(raw, Proposal))
    rows = dict(render.figures(decision))
    saving = 0.11 * (1 - 1 / 1.5)
    assert rows["headroom captured"] == f"{1 - 1 / 1.5:.1%} of the transfer's own time, {850 * 0.11 / 1.5:.1f} ms left"
    assert rows["GPU-equivalents freed"] == f"{256 * saving:.2f}" == "9.39"
    assert f"frees {256 * saving:.2f} GPU-equivalents" in decision.statement


def test_several_targets_share_one_headroom_row() -> None:
    """Two targets at once: the headroom is of the time the two take together."""
    raw = SEED | {"more_targets": [{"name": "layernorm", "p": 0.06, "k": 10}]}
    rows = dict(render.figures(_decision(msgspec.convert(raw, Proposal))))
    assert rows["headroom captured"].startswith("90% of the targets' own time")


def test_a_fleet_mix_shows_the_saving_its_decision_weighs_beside_the_measured_one() -> None:
    """A split-K GEMM 1.35× on 25% of the step, measured on H100 (half of a 4,000-GPU fleet), no k on A100 or MI300X.
    The table said "saving 6.5% of the step", "return 1.3% per engineer-week" and "GPU-equivalents freed 130", which
    is 3.2% of the fleet, not 6.5%: the decision's own 3.2% and 0.65% a week were in no row."""
    raw = {
        "target": "gemm_splitk",
        "p": 0.25,
        "k": 1.35,
        "cost_weeks": 5,
        "scope": {"measured": "step", "method": "timeline", "device": "H100"},
        "flags": {
            "recurring": True,
            "fleet_mix": [
                {"name": "H100", "gpus": 2000},
                {"name": "A100", "gpus": 1500},
                {"name": "MI300X", "gpus": 500},
            ],
        },
    }
    decision = _decision(msgspec.convert(raw, Proposal))
    measured = 0.25 * (1 - 1 / 1.35)
    fleet = 0.5 * measured
    rows = dict(render.figures(decision))
    assert rows["saving"] == f"{measured:.1%} of the step"
    assert rows["judged on"] == f"{fleet:.1%} of the fleet's time, {fleet / 5:.2%} per engineer-week"
    assert rows["GPU-equivalents freed"] == f"{4000 * fleet:.0f}"
    assert dict(figure_rows(decision))["judged on"] == rows["judged on"]


@pytest.mark.parametrize("fleet_mix", [True, False], ids=["fleet", "traffic"])
def test_what_the_judged_saving_is_a_share_of_comes_from_the_mix_figures_not_its_wording(fleet_mix: bool) -> None:
    """The mix finding's `fleet_mix` figure says whether its saving is of the fleet's time or the production time;
    a sentence reworded (here, one that says neither) changes nothing in the table."""
    parts = [{"name": "H100", "share": 0.5}, {"name": "A100", "share": 0.5}]
    mix = {"fleet_mix": [{"name": "H100", "gpus": 2000}, {"name": "A100", "gpus": 2000}]} if fleet_mix else {}
    flags = mix or {"traffic_mix": parts}
    raw = {"target": "gemm", "p": 0.25, "k": 1.35, "cost_weeks": 5, "scope": {"device": "H100", "input": "H100"}}
    decision = _decision(msgspec.convert(raw | {"flags": flags}, Proposal))
    findings = [
        msgspec.structs.replace(f, message="Priced part by part, it saves less.") if f.rule == "mix" else f
        for f in decision.findings
    ]
    reworded = msgspec.structs.replace(decision, findings=findings)
    of = "of the fleet's time" if fleet_mix else "of the production time"
    fleet = 0.5 * 0.25 * (1 - 1 / 1.35)
    assert dict(render.figures(reworded))["judged on"] == f"{fleet:.1%} {of}, {fleet / 5:.2%} per engineer-week"


def test_a_device_activity_share_shows_the_run_share_it_is_judged_on() -> None:
    """1.2% of device activity, 0.3% of the run, 5× for 2 weeks: 0.96% of device activity, judged on 0.24%."""
    raw = {
        "target": "reduce_kernel",
        "p": 0.012,
        "p_end_to_end": 0.003,
        "k": 5,
        "cost_weeks": 2,
        "scope": {"measured": "device_activity"},
    }
    rows = dict(render.figures(_decision(msgspec.convert(raw, Proposal))))
    assert rows["saving"] == "0.96% of device activity"
    assert rows["judged on"] == f"{0.003 * 0.8:.2%} of the run, {0.003 * 0.8 / 2:.2%} per engineer-week"


def test_a_proposal_judged_on_its_measured_scope_has_no_second_saving_row() -> None:
    rows = dict(render.figures(_decision(msgspec.convert(SEED, Proposal))))
    assert "judged on" not in rows
