"""estimate — a p that was estimated, not measured, funds only on the condition that a measurement confirms it.

What it checks: `scope.method = estimate`. When the proposal passes at its estimated p, the condition is the
break-even p: the smallest share at which the same proposal, measured, would still pass (found by bisection on the
pure verdict function). When it passes even at the estimate divided by the policy's `estimate_margin` (10: an
order of magnitude), no plausible error in the estimate changes the answer: info, with the break-even p, and the
decision rests on the other stages. When it fails even at the estimate, the estimate changes nothing and this stays
silent.

Why it matters: an estimate is the number most likely to be wrong and the one the whole decision rests on; the
break-even p says how wrong it may be before the answer changes, which tells the proposer what to measure first.

Example: sampler at an estimated 15% of a 40 ms step, 3× for 3 weeks, passes; it would still pass down to 4.5%
(a 3% saving over 3 weeks is the 1%-per-week bar): fund if a timeline shows p ≥ 4.5%. A tokenizer at an
estimated 6% on 3,000 inference GPUs, 3× for 2 weeks, pays down to 0.029%, 200 times less: fund on the estimate.
"""

from __future__ import annotations

import msgspec

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import condition
from worthit.rules.model import Figure, Finding
from worthit.rules.search import PASSING, SMALLEST_P, break_even_below, said_share
from worthit.rules.text import num, pct, the_share

ID = "estimate"
STAGE = "condition"

EXAMPLES = (
    Example(
        {"target": "sampler", "p": 0.15, "k": 3, "baseline_ms": 40, "cost_weeks": 3, "scope": {"method": "estimate"}},
        fires=True,
        verdict="fund_if",
        figures={"p": 0.15, "break_even_p": 0.045},
    ),
    Example(
        {"target": "tokenizer", "p": 0.06, "k": 3, "cost_weeks": 2, "scope": {"method": "estimate"}}
        | {"flags": {"fleet_gpus": 3000}},
        fires=True,
        decision="fund",
        figures={"p": 0.06, "estimate_margin": 10},
    ),
    Example({"target": "sampler", "p": 0.15, "k": 3, "baseline_ms": 40, "cost_weeks": 3}, fires=False),
    Example(
        {"target": "tiny", "p": 0.001, "k": 3, "cost_weeks": 3, "scope": {"method": "estimate"}},
        fires=False,
    ),
)


def check(ctx: Context) -> Finding | None:
    """Conditions a passing proposal whose p is an estimate on a measurement of at least the break-even p."""
    proposal, probe = ctx.proposal, ctx.probe
    if proposal.scope.method != "estimate" or probe is None:
        return None
    measured = msgspec.structs.replace(proposal, scope=msgspec.structs.replace(proposal.scope, method="timeline"))

    def passes(p: float) -> bool:
        return probe(measured, p, ctx.given_k) in PASSING

    margin = ctx.policy.estimate_margin
    found = break_even_below(passes, ctx.p, margin)
    if found is None:
        return None
    edge, safe = found
    figures: dict[str, Figure] = {"p": ctx.p, "estimate_margin": margin, "break_even_p": edge}
    figures["break_even_p_said"] = said = said_share(passes, edge)
    if safe:
        # Passing at a tenth of the estimate, the estimate's error cannot change the answer.
        figures["estimate_headroom"] = ctx.p / edge
        if edge <= SMALLEST_P:
            why = "the work pays at any p, so no error in the estimate changes the answer"
        else:
            why = (
                f"the work pays down to p = {pct(said)}, so the estimate would have to be "
                f"{num(ctx.p / edge, 0)}× too high to change the answer"
            )
        return Finding(
            rule=ID, effect="info", figures=figures, message=f"{the_share(ctx.p)} is an estimate, but {why}."
        )
    return condition(
        ID,
        figures,
        f"Fund if a timeline shows p ≥ {pct(said)}: the {pct(ctx.p)} is an estimate, and below "
        f"{pct(said)} the same work no longer pays for itself.",
    )
