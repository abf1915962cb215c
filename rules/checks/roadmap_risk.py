"""roadmap_risk — a workload that may never ship justifies nothing.

What it checks: the strategic workload (`flags.strategic`) has no committed launch and has slipped at least the
policy's `max_slips` times: the value of the work leaves that workload out. When the measured workload cannot carry the
work on its own (a saving under the noise floor, or under `min_rate` per engineer-week), it declines; otherwise it
is info and the measured case stands.

Why it matters: funding a speedup for a roadmap item that slipped twice and has no launch date is funding a
workload that may never run; the case has to stand on what ships.

Example: 2% on model A for 3 weeks, 40% on model B, which slipped twice with no launch date: decline.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure
from worthit.rules.wording import Draft, opposed

ID = "roadmap_risk"
STAGE = "worth"

_B = {"model": "model B", "p": 0.4, "slips": 2, "launch_committed": False}

EXAMPLES = (
    Example(
        {"target": "attention", "p": 0.02, "k": 10, "cost_weeks": 3, "flags": {"strategic": _B}},
        fires=True,
        verdict="decline",
        figures={"slips": 2, "measured_rate": 0.006},
    ),
    Example(
        {"target": "attention", "p": 0.3, "k": 10, "cost_weeks": 3, "flags": {"strategic": _B}},
        fires=True,
        decision="fund",
    ),
    Example(
        {
            "target": "attention",
            "p": 0.02,
            "k": 10,
            "cost_weeks": 3,
            "flags": {"strategic": {**_B, "launch_committed": True}},
        },
        fires=False,
    ),
    Example(
        {"target": "attention", "p": 0.02, "k": 10, "cost_weeks": 3, "flags": {"strategic": {**_B, "slips": 1}}},
        fires=False,
    ),
)


SLIPPED = "{strategic_model:label} has slipped {slips:count(times)} with no committed launch"
SET_ASIDE = (
    ", so it is set aside; the case stands on {here:label} alone, where {target} {measured_saving:saves(of_the_step)}."
)
TOO_LITTLE = ", so it cannot carry the work, and on {here:label} {target} {measured_saving:saves(of_the_step)}"
FREE = " at no engineering cost"
PER_WEEK = " at {measured_rate:pct} per engineer-week"
ALONE = ", too little on its own"


def check(ctx: Context) -> Draft | None:
    """Drops the strategic justification of a workload with no committed launch that slipped `max_slips` times."""
    strategic = ctx.proposal.flags.strategic
    if strategic is None or strategic.launch_committed is True or strategic.slips < ctx.policy.max_slips:
        return None
    scope = ctx.proposal.scope
    words = {
        "here": scope.model or scope.workload or "the measured model",
        "target": ctx.target,
        "times": "time",
        "of_the_step": " of the step",
    }
    rate = ctx.worth.rate
    figures: dict[str, Figure] = {
        "strategic_model": strategic.model,
        "slips": strategic.slips,
        "max_slips": ctx.policy.max_slips,
        "launch_committed": strategic.launch_committed,
        "measured_saving": ctx.run_saving,
        "measured_rate": rate,
    }
    if ctx.worth.clears:
        return Draft(ID, "info", (SLIPPED, SET_ASIDE), figures, words)
    per_week = ""
    if rate is not None and math.isinf(rate):
        per_week = FREE
    elif rate is not None and rate > 0:
        per_week = PER_WEEK
    return opposed(ctx, ID, (SLIPPED, TOO_LITTLE, per_week, ALONE), figures, words)
