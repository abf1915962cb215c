"""tail_latency — measure the distribution, not the mean.

What it checks: a latency SLO (`flags.latency_slo`). Fund only on condition when the change carries tail risk or
no p99 has been measured (fund_if: "measure p99, not the mean"); decline when the p99 was measured worse. A p99
measured and not worse: info.

Why it matters: a service with a latency SLO is judged on its tail. A mean throughput win that raises the variance
of the tail costs the p99, and for such a service that is a net loss however large the mean win looks.

Example: 5% on 20,000 GPUs of a latency-SLO service, p99 not yet measured: fund_if. The p99 measured worse:
decline.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import condition, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import a, ms, pct, saves

ID = "tail_latency"
STAGE = "condition"

EXAMPLES = (
    Example(
        {"p": 0.1, "k": 2, "flags": {"latency_slo": {"p99_ms": 50, "tail_risk": True}}},
        fires=True,
        verdict="fund_if",
        figures={"p99_slo_ms": 50},
    ),
    Example({"p": 0.1, "k": 2, "flags": {"latency_slo": {"p99_ms": 50}}}, fires=True, verdict="fund_if"),
    Example(
        {"p": 0.1, "k": 2, "flags": {"latency_slo": {"p99_ms": 50, "p99_measured_worse": True}}},
        fires=True,
        verdict="decline",
    ),
    Example(
        {"p": 0.1, "k": 2, "flags": {"latency_slo": {"p99_ms": 50, "p99_measured_worse": False}}},
        fires=True,
        decision="fund",
    ),
    Example({"p": 0.1, "k": 2}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Conditions a latency-SLO service's win on its p99; declines when the p99 was measured worse."""
    slo = ctx.proposal.flags.latency_slo
    if slo is None:
        return None
    figures: dict[str, Figure] = {
        "p99_slo_ms": slo.p99_ms,
        "tail_risk": slo.tail_risk,
        "p99_measured_worse": slo.p99_measured_worse,
        "mean_saving": ctx.run_saving,
    }
    against = f" against {a(ms(slo.p99_ms))} p99 SLO" if slo.p99_ms is not None else ""
    held = f" held to {a(ms(slo.p99_ms))} p99 SLO" if slo.p99_ms is not None else " with a latency SLO"
    win = f"{a(pct(ctx.run_saving))} mean win" if ctx.run_saving > 0 else f"a change that {saves(ctx.run_saving)}"
    if slo.p99_measured_worse is True:
        head = f"The p99 was measured worse, so for a service{held} {win} that costs the tail is a net loss"
        return opposition(ctx, ID, head, figures, then="is the safer place to look")
    if slo.p99_measured_worse is False:
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"The p99 was measured and is not worse, so {win} holds{against}.",
        )
    why = "may raise the tail" if slo.tail_risk else "has no p99 measured yet"
    return condition(
        ID,
        figures,
        f"Fund on the condition that the p99 holds: {win}{against} {why}, so measure the distribution, not the mean.",
    )
