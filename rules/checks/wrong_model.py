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
from worthit.rules.context import Context, Example, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import k_text, label, pct, saves, times
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


def check(ctx: Context) -> Finding | None:
    """Re-runs the arithmetic on the strategic workload; remeasure when its share is unknown."""
    strategic = ctx.proposal.flags.strategic
    if strategic is None:
        return None
    scope = ctx.proposal.scope
    here = label(scope.model or scope.workload or "the measured model")
    there = label(strategic.model)
    figures: dict[str, Figure] = {
        "strategic_model": strategic.model,
        "measured_p": ctx.p_run,
        "measured_speedup": amdahl.speedup(ctx.p_run, ctx.k),
    }
    if strategic.p is None:
        return Finding(
            rule=ID,
            effect="remeasure",
            verdict="remeasure",
            stage="trust",
            figures=figures,
            message=(
                f"On {here} {ctx.target} is {pct(ctx.p_run)} of the step, but {there} is the workload that "
                f"matters; measure the share there and re-run the arithmetic before deciding."
            ),
        )
    worth = ctx.worth
    speedup = amdahl.speedup(strategic.p, ctx.k)
    saving = worth.strategic_saving if worth.strategic_saving is not None else 0.0
    rate = worth.strategic_rate
    figures |= {
        "strategic_p": strategic.p,
        "strategic_speedup": speedup,
        "strategic_saving": saving,
        "strategic_rate": rate,
    }
    if not worth.strategic_credible:
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            overridden_by=CREDIBILITY_RULE,  # the value of the work leaves out a workload that may never ship
            message=f"{there} would give {times(speedup)}, but with no committed launch it cannot carry the work.",
        )
    measured_speedup = times(amdahl.speedup(ctx.p_run, ctx.k))
    if not worth.strategic_clears and worth.clears:
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"On {there} {ctx.target} is {pct(strategic.p)} of the step ({times(speedup)}), less than on "
            f"{here}, where the case stands on its own at {measured_speedup}.",
        )
    if worth.strategic_clears and worth.basis != "strategic":
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"{there} justifies it too: there {ctx.target} is {pct(strategic.p)} of the step, so "
            f"{k_text(ctx.k)} gives {times(speedup)}, as well as {measured_speedup} on {here}.",
        )
    if not worth.strategic_clears:
        if saving <= 0:
            why = f"it {saves(saving, ' of that step')}"
        elif rate is not None and rate < ctx.policy.min_rate:  # else the saving, under the noise floor, is why
            why = f"{k_text(ctx.k)} returns {pct(rate)} of its step per engineer-week"
        else:
            why = f"{k_text(ctx.k)} returns only {pct(saving)} of its step"
        head = f"Not even {there} justifies it: at {pct(strategic.p)} of that step, {why}"
        return opposition(ctx, ID, head, figures)
    return Finding(
        rule=ID,
        effect="supports",
        verdict="fund",
        figures=figures,
        message=(
            f"This is justified by {there}, not {here}: there {ctx.target} is {pct(strategic.p)} of the step, "
            f"so {k_text(ctx.k)} gives {times(speedup)} instead of the {times(amdahl.speedup(ctx.p_run, ctx.k))} "
            f"measured here."
        ),
    )
