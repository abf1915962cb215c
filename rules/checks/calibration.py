"""calibration — judge a team's estimate of k by what its estimates realized.

What it checks: under a policy with `calibrate = true`, the service hands the engine the team's calibration (the
median realized/proposed k ratio of its recorded outcomes on the workload, each ratio bounded, over at least
`calibration_min_outcomes` outcomes: rules.calibration), and the engine evaluates the proposal at k × that ratio.
This check says so, with the figures, and when the verdict at the calibrated k differs from the verdict at the k
as proposed it argues the calibrated one and names the turn.

Why it matters: an estimate is a forecast with a track record. A team whose 10× estimates have realized 6× is
funded on 6×; one whose estimates realized a fifth of what they said does not get a 1.5% target funded on 10×.
Bounding each outcome and taking the median keeps one absurd report from moving anyone's verdicts.

Example: team kernels realized 0.6× of its estimated k over 3 outcomes: 10× on 21% of a 100 ms step becomes 6×,
still fund at 1.212× end to end. Team optimists realized 0.2×: 10× on 1.5% becomes 2×, and the verdict turns from
fund to decline: 2× on 1.5% of the step saves 0.75% of the step, under the 1% noise floor.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Effect, Figure, Finding, Range
from worthit.rules.text import count, label, ms, pct, saves, times

ID = "calibration"
STAGE = "worth"

EXAMPLES = (
    Example(
        {"target": "attention", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3, "team": "kernels"},
        fires=True,
        verdict=None,
        figures={"median_ratio": 0.6, "outcomes": 3, "proposed_k": 10, "calibrated_k": 6},
        calibration={"ratio": 0.6, "outcomes": 3, "team": "kernels"},
    ),
    Example(
        {"target": "small_kernel", "p": 0.015, "k": 10, "baseline_ms": 100, "cost_weeks": 1, "team": "optimists"},
        fires=True,
        verdict="decline",
        figures={"median_ratio": 0.2, "calibrated_k": 2, "calibrated_saving_fraction": 0.0075},
        calibration={"ratio": 0.2, "outcomes": 5, "team": "optimists"},
        decision="decline",
    ),
    Example(
        {"target": "layernorm", "p": 0.06, "k": 1.2, "baseline_ms": 100, "cost_weeks": 2, "team": "careful"},
        fires=True,
        verdict="fund",
        figures={"median_ratio": 2.5, "calibrated_k": 3},
        calibration={"ratio": 2.5, "outcomes": 4, "team": "careful"},
        decision="fund",
    ),
    Example({"target": "attention", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}, fires=False),
)


def _point(k: float | Range | str) -> float:
    if isinstance(k, Range):
        return (k.low + k.high) / 2
    return float("inf") if isinstance(k, str) else k


def check(ctx: Context) -> Finding | None:
    """States the calibrated k and, where the verdict turns on it, argues the verdict at the calibrated k."""
    calibration, proposed = ctx.calibration, ctx.proposed
    if calibration is None or proposed is None:
        return None
    proposed_k = _point(proposed.k)
    team, workload = calibration.team, calibration.workload
    if team is not None:
        who = f"team {label(team)} realized" + (f" on {label(workload)}" if workload is not None else "")
    else:
        who = f"proposals on {label(workload or '')} realized"
    rests = count(calibration.outcomes, "outcome")
    if calibration.bounded:
        rests += f", {calibration.bounded} of them counted at the ×{ctx.policy.calibration_max_ratio:g} bound"
    opening = f"At the {times(calibration.ratio)} of estimated k that {who} ({rests}), {times(proposed_k)} becomes "
    opening += times(ctx.k)
    figures: dict[str, Figure] = {
        "median_ratio": calibration.ratio,
        "outcomes": calibration.outcomes,
        "bounded_outcomes": calibration.bounded,
        "proposed_k": proposed_k,
        "calibrated_k": ctx.k,
        "calibrated_speedup": ctx.amdahl.speedup,
        "calibrated_saving_fraction": ctx.amdahl.saving_fraction,
        "calibrated_saving_ms": ctx.amdahl.saving_ms,
        "team": team,
        "workload": workload,
    }
    probe = ctx.probe
    before = probe(proposed, ctx.p, proposed_k) if probe is not None else None
    after = probe(ctx.proposal, ctx.p, ctx.k) if probe is not None else None
    figures["verdict"] = before
    figures["calibrated_verdict"] = after
    if before is None or after is None or before == after:
        still = f": still {after}" if after is not None else ""
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"{opening}{still}, at {times(ctx.amdahl.speedup)} end to end.",
        )
    effect: Effect = "supports" if after == "fund" else "condition" if after == "fund_if" else "opposes"
    saving = saves(ctx.amdahl.saving_fraction, f" of {ctx.scope_noun}") + _bar(ctx)
    on = f"{pct(ctx.p)} of {ctx.scope_noun}"
    return Finding(
        rule=ID,
        effect=effect,
        verdict=after,
        figures=figures,
        message=f"{opening} and the verdict turns from {before} to {after}: {times(ctx.k)} on {on} {saving}.",
    )


def _bar(ctx: Context) -> str:
    """The bar the calibrated saving falls under, when no money carries it: the policy's noise floor, else the rate
    it misses. "saves 0.75% of the step" or "saves 2% of the step" alone reads as a reason to fund."""
    policy, worth = ctx.policy, ctx.worth
    if worth.clears:
        return ""
    if ctx.run_saving < policy.noise_floor:
        # The floor is judged end to end: a saving stated on a narrower scope says the run's share first.
        run = "" if ctx.p_run == ctx.p else f", {pct(ctx.run_saving)} of the run"
        return f"{run}, under the {pct(policy.noise_floor)} noise floor"
    rate = worth.rate
    if rate is None or rate >= policy.min_rate or math.isinf(rate):
        return ""
    base = ctx.baseline_ms
    if base is not None and ctx.p_run == ctx.p:
        return f", {ms(rate * base)} per engineer-week against the {ms(policy.min_rate * base)} the policy funds"
    return f", {pct(rate)} of the step per engineer-week against the {pct(policy.min_rate)} the policy funds"
