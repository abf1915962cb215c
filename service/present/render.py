"""One renderer of a decision's figures and wording, for every surface: terminal, gate summary, Slack, the page."""

from __future__ import annotations

from worthit.rules.model import Evaluation
from worthit.rules.text import ms, pct, times


def terminal(evaluation: Evaluation) -> str:
    """The evaluation as a reviewer reads it in a terminal."""
    a = evaluation.amdahl
    lines = [f"verdict: {evaluation.verdict}", "", evaluation.statement, ""]
    ceiling = "unbounded" if a.ceiling_speedup is None else times(a.ceiling_speedup)
    lines.append(f"  speedup      {times(a.speedup)}   (ceiling {ceiling})")
    lines.append(
        f"  saving       {pct(a.saving_fraction)} of the step"
        + (f" = {ms(a.saving_ms)}" if a.saving_ms is not None else "")
    )
    if a.new_ms is not None and a.baseline_ms is not None:
        lines.append(f"  step         {ms(a.baseline_ms)} -> {ms(a.new_ms)}")
    lines.append(
        f"  headroom     {pct(a.headroom_captured)} of the target's own time captured"
        + (f", {ms(a.remaining_ms)} left" if a.remaining_ms is not None else "")
    )
    if a.rate is not None:
        lines.append(f"  return       {ms(a.rate) if a.rate_unit == 'ms/week' else pct(a.rate)} per engineer-week")
    lines += ["", "findings:"]
    for finding in evaluation.findings:
        mark = " (set aside by " + finding.overridden_by + ")" if finding.overridden_by else ""
        lines.append(f"  [{finding.effect}] {finding.rule}{mark}: {finding.message}")
    lines += ["", f"policy: {evaluation.policy.name} v{evaluation.policy.version}"]
    return "\n".join(lines)
