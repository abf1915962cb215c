"""wrong_model — re-run the arithmetic on the workload that matters.

What it checks: `flags.strategic` names the workload the work is for. With its share (`strategic.p`) the
arithmetic is re-run there, in addition to the measured workload, never instead of it: when it clears the noise
floor and `min_rate` and the measured workload does not, it supports funding and carries the value of the work
(rules.worth); when neither clears, it opposes; a strategic workload with a smaller share never vetoes what the
measured one justifies. Without that share: remeasure on the strategic workload.

Why it matters: when Amdahl's law disagrees with a strong instinct, p was usually measured on the wrong scope. The
answer is not to override the arithmetic but to run it on the configuration that matters, and say so ("justified
by model B, not model A") so the next person does not re-derive the 2% and cancel the work. roadmap_risk drops
this justification when the strategic workload may never ship.

Example: 2% of model A, 40% of model B at 10× → S = 1 / (0.6 + 0.04) = 1.5625 on model B: fund.
"""

from __future__ import annotations

from worthit.rules import amdahl
from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure
from worthit.rules.wording import Draft, opposed
from worthit.rules.worth import CREDIBILITY_RULE

ID = "wrong_model"
STAGE = "worth"

EXAMPLES = (
    Example(
        {
            "target": "attention",
            "p": 0.02,
            "k": 10,
            "cost_weeks": 3,
            "scope": {"model": "model A"},
            "flags": {"strategic": {"model": "model B", "p": 0.4}},
        },
        fires=True,
        verdict="fund",
        figures={"strategic_speedup": 1.5625, "measured_speedup": 1.0183299},
    ),
    Example(
        {"target": "attention", "p": 0.02, "k": 10, "flags": {"strategic": {"model": "model B"}}},
        fires=True,
        verdict="remeasure",
    ),
    Example(
        {
            "target": "attention",
            "p": 0.02,
            "k": 10,
            "cost_weeks": 30,
            "flags": {"strategic": {"model": "model B", "p": 0.04}},
        },
        fires=True,
        verdict="decline",
        figures={"strategic_rate": 0.0012},
    ),
    Example({"p": 0.02, "k": 10}, fires=False),
)


UNMEASURED = (
    "On {here:label} {target} is {measured_p:pct} of the step, but {strategic_model:label} is the workload that "
    "matters; measure the share there and re-run the arithmetic before deciding."
)
UNCOMMITTED = (
    "{strategic_model:label} would give {strategic_speedup:times}, but with no committed launch it cannot carry the "
    "work."
)
LESS_THERE = (
    "On {strategic_model:label} {target} is {strategic_p:pct} of the step ({strategic_speedup:times}), less than on "
    "{here:label}, where the case stands on its own at {measured_speedup:times}."
)
THERE_TOO = (
    "{strategic_model:label} justifies it too: there {target} is {strategic_p:pct} of the step, so {k:k} gives "
    "{strategic_speedup:times}, as well as {measured_speedup:times} on {here:label}."
)
NOT_EVEN = "Not even {strategic_model:label} justifies it: at {strategic_p:pct} of that step, "
NO_SAVING = "it {strategic_saving:saves(of_what)}"
LOW_RATE = "{k:k} returns {strategic_rate:pct} of its step per engineer-week"
LOW_SAVING = "{k:k} returns only {strategic_saving:pct} of its step"
JUSTIFIED = (
    "This is justified by {strategic_model:label}, not {here:label}: there {target} is {strategic_p:pct} of the step, "
    "so {k:k} gives {strategic_speedup:times} instead of the {measured_speedup:times} measured here."
)


def check(ctx: Context) -> Draft | None:
    """Re-runs the arithmetic on the strategic workload; remeasure when its share is unknown."""
    strategic = ctx.proposal.flags.strategic
    if strategic is None:
        return None
    scope = ctx.proposal.scope
    words = {"here": scope.model or scope.workload or "the measured model", "target": ctx.target}
    figures: dict[str, Figure] = {
        "strategic_model": strategic.model,
        "measured_p": ctx.p_run,
        "measured_speedup": amdahl.speedup(ctx.p_run, ctx.k),
    }
    if strategic.p is None:
        return Draft(ID, "remeasure", UNMEASURED, figures, words, stage="trust")
    worth = ctx.worth
    speedup = amdahl.speedup(strategic.p, ctx.k)
    saving = worth.strategic_saving if worth.strategic_saving is not None else 0.0
    rate = worth.strategic_rate
    figures |= {
        "strategic_p": strategic.p,
        "strategic_speedup": speedup,
        "strategic_saving": saving,
        "strategic_rate": rate,
        "k": ctx.k,
    }
    if not worth.strategic_credible:
        # the value of the work leaves out a workload that may never ship
        return Draft(ID, "info", UNCOMMITTED, figures, words, overridden_by=CREDIBILITY_RULE)
    if not worth.strategic_clears and worth.clears:
        return Draft(ID, "info", LESS_THERE, figures, words)
    if worth.strategic_clears and worth.basis != "strategic":
        return Draft(ID, "info", THERE_TOO, figures, words)
    if not worth.strategic_clears:
        if saving <= 0:
            why, words["of_what"] = NO_SAVING, " of that step"
        elif rate is not None and rate < ctx.policy.min_rate:  # else the saving, under the noise floor, is why
            why = LOW_RATE
        else:
            why = LOW_SAVING
        return opposed(ctx, ID, (NOT_EVEN, why), figures, words)
    return Draft(ID, "supports", JUSTIFIED, figures, words, verdict="fund")
