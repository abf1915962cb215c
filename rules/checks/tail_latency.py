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
from worthit.rules.model import Figure
from worthit.rules.wording import Draft, opposed

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


AGAINST = " against {p99_slo_ms:a_ms} p99 SLO"
HELD_TO = " held to {p99_slo_ms:a_ms} p99 SLO"
WITH_SLO = " with a latency SLO"
WIN = "{mean_saving:a_pct} mean win"
NO_WIN = "a change that {mean_saving:saves}"
MEASURED_WORSE = "The p99 was measured worse, so for a service"
NET_LOSS = " that costs the tail is a net loss"
NOT_WORSE = "The p99 was measured and is not worse, so "
HOLDS = " holds"
FUND_IF_P99 = "Fund on the condition that the p99 holds: "
MEASURE_IT = " {why}, so measure the distribution, not the mean."


def check(ctx: Context) -> Draft | None:
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
    against = AGAINST if slo.p99_ms is not None else ""
    held = HELD_TO if slo.p99_ms is not None else WITH_SLO
    win = WIN if ctx.run_saving > 0 else NO_WIN
    if slo.p99_measured_worse is True:
        head = (MEASURED_WORSE, held, " ", win, NET_LOSS)
        return opposed(ctx, ID, head, figures, {}, then="is the safer place to look")
    if slo.p99_measured_worse is False:
        return Draft(ID, "info", (NOT_WORSE, win, HOLDS, against), figures)
    why = "may raise the tail" if slo.tail_risk else "has no p99 measured yet"
    return Draft(ID, "condition", (FUND_IF_P99, win, against, MEASURE_IT), figures, {"why": why})
