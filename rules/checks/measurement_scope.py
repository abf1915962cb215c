"""measurement_scope — time the device work, and compare like with like.

What it checks: `scope.timing = host_submit`, or a before/after comparison whose other side
(`scope.compared_to`) was measured on a different model, input, dtype or device than this scope. Remeasure. With
`scope.k_measured = "microbenchmark"` the comparison that differs is where k came from, and the sentence says so.

Why it matters: GPU work runs asynchronously, so the time the CPU takes to submit it is not the time the GPU takes
to finish it; timing must use the start and completion of the work being measured. And a before/after comparison
only means something on the same model, input size, data type and device, with first-run setup treated alike.

Example: a 21% share timed around kernel launches on the host: remeasure with device events. "Before" on fp32,
"after" on bf16: remeasure both on one dtype.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure, Finding
from worthit.rules.text import join, label, pct, the_share

ID = "measurement_scope"
STAGE = "trust"

_FIELDS = ("model", "input", "dtype", "device")

EXAMPLES = (
    Example({"p": 0.21, "k": 10, "scope": {"timing": "host_submit"}}, fires=True, verdict="remeasure"),
    Example(
        {
            "p": 0.21,
            "k": 10,
            "scope": {"dtype": "fp32", "device": "MI300X", "compared_to": {"dtype": "bf16", "device": "H100"}},
        },
        fires=True,
        verdict="remeasure",
        figures={"differences": 2, "p": 0.21},
    ),
    Example({"p": 0.21, "k": 10, "scope": {"dtype": "bf16", "compared_to": {"dtype": "bf16"}}}, fires=False),
    Example({"p": 0.21, "k": 10, "scope": {"timing": "device_events"}}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Remeasure host-submit timing, or a before/after comparison across different configurations."""
    scope = ctx.proposal.scope
    other = scope.compared_to
    differs = [
        name
        for name in _FIELDS
        if other is not None and getattr(other, name) is not None and getattr(other, name) != getattr(scope, name)
    ]
    submit = scope.timing == "host_submit"
    if not differs and not submit:
        return None
    figures: dict[str, Figure] = {
        "p": ctx.p,
        "timing": scope.timing,
        "differs": ",".join(differs) or None,
        "differences": len(differs),
    }
    if submit:
        also = f", and compare on one {join(differs)}" if differs else ""
        message = (
            f"{the_share(ctx.p, ctx.target)} was timed at host submit, which is when the CPU queued "
            f"the work, not when the GPU finished it; time the device work's start and completion{also}."
        )
    elif scope.k_measured == "microbenchmark":
        # the before/after that differs is the one k came from: a kernel alone, not the step the share is of
        first = differs[0]
        mine, theirs = getattr(scope, first), getattr(other, first)
        figures["k_measured"] = "microbenchmark"
        message = (
            f"The k was measured on a microbenchmark ({label(theirs)}), not in the step the {pct(ctx.p)} share is of "
            f"({label(mine) if mine else 'unstated'}): one shape, warm caches and nothing beside it; measure k inside "
            f"the step on the same {join(differs)}."
        )
    else:
        first = differs[0]
        mine, theirs = getattr(scope, first), getattr(other, first)
        pair = f"{label(mine) if mine else 'unstated'} vs {label(theirs)}"
        message = (
            f"Before and after differ in {join(differs)} ({pair}), so the {pct(ctx.p)} share compares unlike "
            f"runs; measure both on the same model, input, dtype and device."
        )
    return Finding(rule=ID, effect="remeasure", verdict="remeasure", figures=figures, message=message)
