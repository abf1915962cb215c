"""One renderer of a decision's figures and wording, for every surface (STYLE 9b): the terminal (`worthit review`,
the gate's log), the gate's job summary, Slack's blocks and the decision page all take their rows from here, so a
figure is named and worded the same everywhere.

The saving is a share of the scope the proposal measured, named as the engine's statements name it
(rules.context.SCOPE_NOUN): "of the step", "of device activity", "of the run", "of the rank's step". Each surface
only decides how a row looks (a table row, a Block Kit field, a `<tr>`) and escapes it for its medium.

An evaluation carries `reasoning` (decisions stored before the staged model do not), the stages of the argument in
order, each with its question and its answer: `reasoning()` is the one rendering of it, numbered, that the terminal,
the gate, Slack and the page show.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from worthit.rules.context import SCOPE_NOUN
from worthit.rules.model import Evaluation, Finding, StageAnswer
from worthit.rules.names import printable
from worthit.rules.text import gpu_count, ms, ms_saved, pct, times, weeks

__all__ = [
    "SCOPES",
    "FindingLine",
    "Row",
    "figures",
    "finding",
    "findings",
    "provenance",
    "reasoning",
    "scope_name",
    "stage_rows",
    "terminal",
]

SCOPES = SCOPE_NOUN
"""What a share is of, in words: the engine's own table (rules.context), so the figures and the statement agree."""


class Row(NamedTuple):
    """One figure as a reviewer reads it: `("saving", "18.9% of the step = 18.9 ms")`."""

    label: str
    value: str


class FindingLine(NamedTuple):
    rule: str
    effect: str
    overridden_by: str | None
    message: str


def scope_name(measured: str | None) -> str:
    """What the saving is a share of, in words, as the statement says it (the step when the proposal does not say)."""
    return SCOPES.get(measured or "step", SCOPES["step"])


def _measured(evaluation: Evaluation) -> str | None:
    proposal = getattr(evaluation, "proposal", None)
    scope = getattr(proposal, "scope", None)
    return getattr(scope, "measured", None)


def figures(evaluation: Evaluation, *, measured: str | None = None) -> list[Row]:
    """The figures of a decision, in the order a reviewer asks for them.

    `measured` is the proposal's `scope.measured`; a stored decision carries its proposal, so it may be left out.
    """
    a = evaluation.amdahl
    scope = scope_name(measured or _measured(evaluation))
    ceiling = "unbounded" if a.ceiling_speedup is None else times(a.ceiling_speedup)
    rows = [Row("speedup", f"{times(a.speedup)} (ceiling {ceiling})")]
    saving = f"{pct(a.saving_fraction)} of {scope}"
    if a.baseline_ms is not None and a.new_ms is not None:
        # as the statement prints them: at the digits at which they add up
        before, after, saved = ms_saved(a.baseline_ms, a.new_ms, a.saving_ms)
        saved = saved if a.new_ms <= a.baseline_ms else "-" + saved
        rows.append(Row("saving", f"{saving} = {saved}"))
        rows.append(Row("time", f"{before} → {after}"))
    else:
        rows.append(Row("saving", saving + (f" = {ms(a.saving_ms)}" if a.saving_ms is not None else "")))
    remaining = f", {ms(a.remaining_ms)} left" if a.remaining_ms is not None else ""
    rows.append(Row("headroom captured", f"{pct(a.headroom_captured)} of {_acted_on(evaluation)}{remaining}"))
    if a.cost_weeks is not None:
        rows.append(Row("cost", weeks(a.cost_weeks)))
    if a.rate is not None:
        rows.append(Row("return", f"{ms(a.rate) if a.rate_unit == 'ms/week' else pct(a.rate)} per engineer-week"))
    judged = _judged(evaluation)
    if judged is not None:
        rows.append(judged)
    fleet = finding(evaluation, "fleet_multiplication")
    freed = fleet.figures.get("gpu_equivalents") if fleet is not None else None
    if isinstance(freed, int | float) and not isinstance(freed, bool):
        rows.append(Row("GPU-equivalents freed", gpu_count(float(freed))))  # as the statement prints it
    if evaluation.holds_across_range is not None:
        rows.append(Row("holds across the range", "yes" if evaluation.holds_across_range else "no"))
    return rows


def _judged(evaluation: Evaluation) -> Row | None:
    """The saving the decision weighs, where it is not the measured scope's (a fleet or traffic mix priced part by
    part, a share of device activity judged on the run's): the row beside `saving` and `return`, so the table never
    shows only a figure the decision did not judge on (6.5% of the step on H100 beside 130 GPU-equivalents freed, which
    are 3.2% of a fleet half of which was never measured)."""
    worth = next((stage for stage in evaluation.reasoning or () if stage.stage == "worth"), None)
    if worth is None:
        return None
    saving = worth.figures.get("end_to_end_saving")
    if not isinstance(saving, int | float) or isinstance(saving, bool):
        return None
    measured = evaluation.amdahl.saving_fraction
    if abs(saving - measured) <= 1e-9 * max(abs(saving), abs(measured), 1e-12):
        return None
    mix = finding(evaluation, "mix")
    if mix is None:
        of = "of the run"
    else:
        of = "of the fleet's time" if mix.figures.get("fleet_mix") is True else "of the production time"
    rate = worth.figures.get("rate_fraction")
    per_week = ""
    if isinstance(rate, int | float) and not isinstance(rate, bool):
        per_week = f", {pct(rate)} per engineer-week"
    return Row("judged on", f"{pct(saving)} {of}{per_week}")


def _acted_on(evaluation: Evaluation) -> str:
    """The time the headroom is of, as the amdahl finding says the change (`Context.acted`): the target's own, a
    collective's transfer without the wait for the slowest rank, several targets' together, or behind a barrier what
    the step can lose through the target (the next-slowest rank caps it)."""
    said = finding(evaluation, "amdahl")
    figures = said.figures if said is not None else {}
    if figures.get("more_p_1") is not None:
        return "the targets' own time"
    if figures.get("target_wait") is not None:
        return "the transfer's own time"
    if figures.get("behind_barrier"):
        return "what the step can lose through the target"
    return "the target's own time"


def provenance(evaluation: Evaluation) -> list[Row]:
    """Which rule decided, under which policy."""
    return [
        Row("decided by", evaluation.deciding_rule),
        Row("policy", f"{evaluation.policy.name} v{evaluation.policy.version}"),
    ]


def finding(evaluation: Evaluation, rule: str) -> Finding | None:
    return next((f for f in evaluation.findings if f.rule == rule), None)


def findings(evaluation: Evaluation) -> list[FindingLine]:
    """Every finding, in the engine's order, with the rule that set it aside (if one did)."""
    return [FindingLine(f.rule, f.effect, f.overridden_by, f.message) for f in evaluation.findings]


def reasoning(evaluation: Evaluation) -> list[Row]:
    """The stages of the argument (trust, worth, cost, alternative, condition), numbered, each with its answer
    (none for a decision stored before the staged model)."""
    return stage_rows(evaluation.reasoning or ())


def stage_rows(stages: Iterable[StageAnswer]) -> list[Row]:
    """`reasoning()` for stages read on their own (the bot reads them from the API's JSON)."""
    return [Row(f"{number}. {stage.question}", stage.answer) for number, stage in enumerate(stages, start=1)]


def terminal(evaluation: Evaluation, *, measured: str | None = None, explain: bool = False) -> str:
    """The evaluation as a reviewer reads it in a terminal (`worthit review`, the gate's log); with `explain`, the
    reasoning stage by stage (`worthit review --explain`)."""
    lines = [f"verdict: {evaluation.verdict}", "", evaluation.statement, ""]
    shown = figures(evaluation, measured=measured)
    width = max(len(row.label) for row in shown)
    lines += [f"  {row.label:<{width}}  {row.value}" for row in shown]
    stages = reasoning(evaluation) if explain else []
    if stages:
        lines += ["", "reasoning:"]
        for row in stages:
            lines += [f"  {row.label}", f"     {row.value}"]
    lines += ["", "findings:"]
    for found, line in zip(evaluation.findings, findings(evaluation), strict=True):
        aside = f" (overridden by {line.overridden_by})" if line.overridden_by else ""
        # with --explain, the stage each finding answers: where a new field (a quality gate, memory) decides
        stage = f"{found.stage}: " if explain and found.stage else ""
        lines.append(f"  [{stage}{line.effect}] {line.rule}{aside}: {line.message}")
    policy = provenance(evaluation)[1]
    lines += ["", f"policy: {policy.value}"]
    # Names in the sentences and figures may come from a profiler's file (a kernel's name): each line is escaped
    # whole, so none reaches the terminal, or the gate's log, as a control sequence or a line of its own.
    return "\n".join(map(printable, lines))
