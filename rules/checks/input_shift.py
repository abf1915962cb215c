"""input_shift — measure on the input that matters.

What it checks: `scope.target_input` names an input other than the one measured (`scope.input`), or
`scope.target_load` a load other than the one measured (`scope.load`: a burst of seconds against sustained load,
where thermal and power limits lower the clocks). Remeasure, saying which.

Why it matters: the bottleneck changes with the input. Processing many tokens together reuses the fetched weights
across them, which changes the shares of computation and data movement; an optimization that won on one input
has to be run again on the other before anyone counts on it.

Example: p = 0.21 measured at batch 1 for a service that runs at batch 64: remeasure at batch 64.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure, Finding
from worthit.rules.text import label, the_share

ID = "input_shift"
STAGE = "trust"

_LOAD = {"burst": "in a burst of seconds", "sustained": "under sustained load, for minutes with the clocks settled"}

EXAMPLES = (
    Example(
        {"target": "attention", "p": 0.21, "k": 10, "scope": {"input": "batch 1", "target_input": "batch 64"}},
        fires=True,
        verdict="remeasure",
        figures={"p": 0.21},
    ),
    Example({"p": 0.21, "k": 10, "scope": {"input": "batch 64", "target_input": "batch 64"}}, fires=False),
    Example({"p": 0.21, "k": 10, "scope": {"input": "batch 1"}}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Remeasure when the input that matters is not the input measured."""
    scope = ctx.proposal.scope
    if scope.target_load is not None and scope.load is not None and scope.target_load != scope.load:
        figures_load: dict[str, Figure] = {"p": ctx.p, "load": scope.load, "target_load": scope.target_load}
        hot = "under sustained load" if scope.target_load == "sustained" else "in short bursts"
        return Finding(
            rule=ID,
            effect="remeasure",
            verdict="remeasure",
            figures=figures_load,
            message=(
                f"{the_share(ctx.p, ctx.target)} was measured {_LOAD[scope.load]}, but the GPUs run {hot}, where "
                f"clocks settle lower once hot and power-limited; re-measure {_LOAD[scope.target_load]}."
            ),
        )
    wanted = scope.target_input
    if wanted is None or wanted == scope.input:
        return None
    measured = label(scope.input) if scope.input else "another input"
    figures: dict[str, Figure] = {"p": ctx.p, "input": scope.input, "target_input": wanted}
    return Finding(
        rule=ID,
        effect="remeasure",
        verdict="remeasure",
        figures=figures,
        message=(
            f"{the_share(ctx.p, ctx.target)} was measured on {measured}, but {label(wanted)} is the "
            f"input that matters and the input's size changes what dominates; re-run the profile on {label(wanted)}."
        ),
    )
