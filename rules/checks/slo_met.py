"""slo_met — a change that brings a violated latency SLO under it is worth meeting it, even on a slower step.

What it checks: `flags.latency_slo` with the p99 measured before (`p99_before_ms`) above the SLO (`p99_ms`) and
after (`p99_after_ms`) at or under it (chunked prefill, a smaller batch, a priority queue). Meeting it is worth the
policy's `slo_met_usd_per_year`, or, when the policy prices no SLO, the GPUs the service would otherwise add to meet
it (`latency_slo.gpus_otherwise`, at `gpu_hour_usd`); a slower step costs its share of `fleet_gpus` (rules.worth
counts it). Supports funding when that pays for the cost; opposes when it does not; when meeting the SLO is unpriced,
or the step is slower and no fleet says what that costs, fund only on the condition it computes: the least the SLO
must be worth a year, or the largest fleet on which the slowdown still pays.

Why it matters: a serving step 4% slower reads as "nothing to win" on time alone, but a p99 over its SLO is a
service out of contract; what the slowdown buys is the SLO, and what it costs is 4% more GPUs for the same traffic.

Example: chunked prefill makes each step 4% slower and brings the p99 time to first token from 2.4 s to 1.3 s
under a 1.5 s SLO; meeting it otherwise takes 96 more GPUs; the slowdown costs 40 GPU-equivalents of 1,000: fund.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import condition, opposition
from worthit.rules.model import Figure, Finding, LatencySLO
from worthit.rules.text import at_least, count, gpu_equivalents, ms, num, pct, usd
from worthit.rules.worth import HOURS_PER_YEAR, Bought

ID = "slo_met"
STAGE = "worth"

_SLO = {"p99_ms": 1500, "p99_before_ms": 2400, "p99_after_ms": 1300}
# the whole serving step 4% slower: p = 1, k = 1 / 1.04
_CHUNKED = {"target": "serving_step", "p": 1.0, "k": 1 / 1.04, "cost_weeks": 3}

EXAMPLES = (
    Example(
        # 96 GPUs otherwise: $1.68M a year; 4% of 1,000 GPUs: 40 GPU-equivalents, $701k; $15k of engineering
        _CHUNKED | {"flags": {"fleet_gpus": 1000, "recurring": True, "latency_slo": _SLO | {"gpus_otherwise": 96}}},
        fires=True,
        verdict="fund",
        decision="fund",
        figures={"slo_usd_per_year": 1_681_920, "slowdown_gpus": 40, "net_usd_per_year": 981_120},
    ),
    Example(
        _CHUNKED | {"flags": {"fleet_gpus": 4000, "recurring": True, "latency_slo": _SLO | {"gpus_otherwise": 96}}},
        fires=True,
        verdict="decline",
        figures={"slowdown_gpus": 160},
    ),
    Example(
        # unpriced: the SLO must be worth the slowdown's $701k a year plus the $15k of engineering
        _CHUNKED | {"flags": {"fleet_gpus": 1000, "recurring": True, "latency_slo": _SLO}},
        fires=True,
        verdict="fund_if",
        decision="fund_if",
        figures={"break_even_usd_per_year": 715_800},
    ),
    Example(
        # priced, no fleet: the slowdown pays on at most ($1.68M − $15k) / ($2 × 8,760 × 4%) = 2,378.6 GPUs
        _CHUNKED | {"flags": {"latency_slo": _SLO | {"gpus_otherwise": 96}}},
        fires=True,
        verdict="fund_if",
        figures={"break_even_fleet_gpus": 2378.57},
    ),
    Example(_CHUNKED | {"flags": {"latency_slo": _SLO | {"p99_before_ms": 1400}}}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Values a change by the violated SLO it meets, net of what its slower step costs the fleet."""
    bought = ctx.worth.bought
    slo = ctx.proposal.flags.latency_slo
    if bought is None or bought.kind != "slo" or slo is None:
        return None
    if ctx.verdict_only and bought.clears:
        return None  # it supports funding
    saving = ctx.run_saving
    figures: dict[str, Figure] = {
        "p99_slo_ms": slo.p99_ms,
        "p99_before_ms": slo.p99_before_ms,
        "p99_after_ms": slo.p99_after_ms,
        "end_to_end_saving": saving,
        "slo_usd_per_year": bought.slo_usd_per_year,
    }
    met = _met(slo, saving)
    price = _price(ctx, bought)
    fleet = ctx.proposal.flags.fleet_gpus
    cost_usd = ctx.worth.cost.usd or 0.0
    years = ctx.policy.horizon_months / 12
    per_gpu_year = ctx.policy.gpu_hour_usd * HOURS_PER_YEAR
    if bought.clears is None and bought.slo_usd_per_year is not None and fleet is None and saving < 0:
        # priced, but the slowdown's cost needs the fleet: the largest fleet on which it still pays
        room = bought.slo_usd_per_year - cost_usd / years
        most = room / (-saving * per_gpu_year) if per_gpu_year > 0 else float("inf")
        figures["break_even_fleet_gpus"] = most
        if room <= 0:
            return opposition(ctx, ID, f"{met}, but {price} does not pay for {usd(cost_usd)}", figures)
        return condition(
            ID,
            figures,
            f"Fund if the fleet serving it has at most {num(max(int(most), 0), 0)} GPUs: {met}, {price}, which "
            f"pays for {pct(-saving)} more GPUs on up to that fleet (give `fleet_gpus`).",
        )
    if bought.clears is None:
        slowdown = max(-(ctx.worth.money.annual_usd or 0.0), 0.0) if ctx.worth.money is not None else 0.0
        least = slowdown + cost_usd / years
        figures["break_even_usd_per_year"] = least
        on = (
            f", and the {pct(-saving)} slower step costs {gpu_equivalents(-saving * fleet)} ({usd(slowdown)} a year)"
            if fleet is not None and saving < 0
            else ""
        )
        return condition(
            ID,
            figures,
            f"Fund if meeting the SLO is worth at least {usd(at_least(least))} a year: {met}{on}, and the policy "
            "prices no SLO (give `latency_slo.gpus_otherwise`, the GPUs meeting it would otherwise take).",
        )
    net = bought.annual_usd or 0.0
    figures |= {"slowdown_gpus": bought.slowdown_gpus, "net_usd_per_year": net, "cost_usd": cost_usd}
    on = (
        f", less the {gpu_equivalents(bought.slowdown_gpus)} its slower step takes on {count(fleet, 'GPU')}"
        if fleet is not None and bought.slowdown_gpus > 0
        else ""
    )
    head = f"{met}: {price}{on}, {usd(net)} a year net"
    if bought.clears:
        return Finding(
            rule=ID,
            effect="supports",
            verdict="fund",
            figures=figures,
            message=f"{head}, against {usd(cost_usd)} of cost.",
        )
    return opposition(ctx, ID, f"{head}, which does not pay for {usd(cost_usd)} over the horizon", figures)


def _met(slo: LatencySLO, saving: float) -> str:
    """What was bought and what it cost in step time: `At a 4% slower step the p99 goes from 2,400 ms to 1,300 ms,
    under its 1,500 ms SLO`."""
    step = (
        f"At a {pct(-saving)} slower step"
        if saving < 0
        else (f"With a {pct(saving)} faster step" if saving > 0 else "At the same step time")
    )
    return (
        f"{step} the p99 goes from {ms(slo.p99_before_ms or 0.0)} to {ms(slo.p99_after_ms or 0.0)}, under its "
        f"{ms(slo.p99_ms or 0.0)} SLO"
    )


def _price(ctx: Context, bought: Bought) -> str:
    """Where the SLO's worth comes from: the policy's price, or the GPUs meeting it would otherwise take."""
    slo = ctx.proposal.flags.latency_slo
    if ctx.policy.slo_met_usd_per_year > 0:
        return f"meeting it is worth {usd(ctx.policy.slo_met_usd_per_year)} a year as the policy prices it"
    gpus = slo.gpus_otherwise if slo is not None else None
    if gpus is not None:
        return f"meeting it otherwise takes {count(gpus, 'more GPU')}, {usd(bought.slo_usd_per_year or 0.0)} a year"
    return "meeting it is unpriced"
