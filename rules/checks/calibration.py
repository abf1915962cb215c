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
from worthit.rules.model import Effect, Figure, Range
from worthit.rules.wording import Draft

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


TEAM = "team {team:label} realized"
ON_WORKLOAD = " on {workload:label}"
PROPOSALS_ON = "proposals on {workload:label} realized"
OPENING = "At the {median_ratio:times} of estimated k that "
RESTS = " ({outcomes:count(outcome)}"
BOUNDED = ", {bounded_outcomes:int} of them counted at the ×{calibration_max_ratio:g} bound"
BECOMES = "), {proposed_k:times} becomes {calibrated_k:times}"
STILL = ": still {calibrated_verdict}"
END_TO_END = ", at {calibrated_speedup:times} end to end."
TURNS = (
    " and the verdict turns from {verdict} to {calibrated_verdict}: {calibrated_k:times} on {p:pct} of {scope} "
    "{calibrated_saving_fraction:saves(of_scope)}"
)
RUN_SHARE = ", {end_to_end_saving:pct} of the run"
UNDER_FLOOR = ", under the {noise_floor:pct} noise floor"
RATE_MS = ", {rate_ms:ms} per engineer-week against the {min_rate_ms:ms} the policy funds"
RATE_SHARE = ", {rate_fraction:pct} of the step per engineer-week against the {min_rate:pct} the policy funds"


def check(ctx: Context) -> Draft | None:
    """States the calibrated k and, where the verdict turns on it, argues the verdict at the calibrated k."""
    calibration, proposed = ctx.calibration, ctx.proposed
    if calibration is None or proposed is None:
        return None
    proposed_k = _point(proposed.k)
    team, workload = calibration.team, calibration.workload
    if team is not None:
        who: tuple[str, ...] = (TEAM, ON_WORKLOAD) if workload is not None else (TEAM,)
    else:
        who = (PROPOSALS_ON,)
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
    words = {"outcome": "outcome", "scope": ctx.scope_noun, "of_scope": f" of {ctx.scope_noun}"}
    if team is None:
        words["workload"] = workload or ""
    rests: tuple[str, ...] = (RESTS,)
    if calibration.bounded:
        figures["calibration_max_ratio"] = ctx.policy.calibration_max_ratio
        rests = (RESTS, BOUNDED)
    opening = (OPENING, *who, *rests, BECOMES)
    probe = ctx.probe
    before = probe(proposed, ctx.p, proposed_k) if probe is not None else None
    after = probe(ctx.proposal, ctx.p, ctx.k) if probe is not None else None
    figures["verdict"] = before
    figures["calibrated_verdict"] = after
    if before is None or after is None or before == after:
        still = (STILL,) if after is not None else ()
        return Draft(ID, "info", (*opening, *still, END_TO_END), figures, words)
    effect: Effect = "supports" if after == "fund" else "condition" if after == "fund_if" else "opposes"
    figures["p"] = ctx.p
    return Draft(ID, effect, (*opening, TURNS, *_bar(ctx, figures), "."), figures, words, verdict=after)


def _bar(ctx: Context, figures: dict[str, Figure]) -> tuple[str, ...]:
    """The bar the calibrated saving falls under, when no money carries it: the policy's noise floor, else the rate
    it misses. "saves 0.75% of the step" or "saves 2% of the step" alone reads as a reason to fund."""
    policy, worth = ctx.policy, ctx.worth
    if worth.clears:
        return ()
    if ctx.run_saving < policy.noise_floor:
        # The floor is judged end to end: a saving stated on a narrower scope says the run's share first.
        figures["noise_floor"] = policy.noise_floor
        if ctx.p_run == ctx.p:
            return (UNDER_FLOOR,)
        figures["end_to_end_saving"] = ctx.run_saving
        return (RUN_SHARE, UNDER_FLOOR)
    rate = worth.rate
    if rate is None or rate >= policy.min_rate or math.isinf(rate):
        return ()
    base = ctx.baseline_ms
    if base is not None and ctx.p_run == ctx.p:
        figures |= {"rate_ms": rate * base, "min_rate_ms": policy.min_rate * base}
        return (RATE_MS,)
    figures |= {"rate_fraction": rate, "min_rate": policy.min_rate}
    return (RATE_SHARE,)
