"""unit_slip — a breakdown about a thousand times its step is a unit slip, not overlap.

What it checks: a breakdown of the measured scope whose parts add up to at least the policy's `unit_slip_ratio`
times the step's time (`baseline_ms`), or to that many times less while whole (the target's share of the parts is
`p`: a breakdown listing only some phases is partial, not a slip). Remeasure: say every time in milliseconds.

Why it matters: overlap doubles a part at most a few times over, and an unlisted phase leaves a gap, not three
orders of magnitude. A breakdown 1,000× its step is seconds (or microseconds) written as milliseconds; calling it
double counting sends the team to re-profile a run that was measured correctly, and every share computed from it
(40,000% of the step) is noise. The shares, the alternatives and the overlap diagnosis wait for the units.

Example: a 0.32 ms step whose breakdown sums to 320 ms: 1,000× the step, a unit slip — remeasure in ms.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure
from worthit.rules.wording import Draft

ID = "unit_slip"
STAGE = "trust"

_SLIP = [{"name": "gemm", "ms": 200}, {"name": "softmax", "ms": 80}, {"name": "copy", "ms": 40, "kind": "copy"}]

EXAMPLES = (
    Example(
        {"target": "softmax", "p": 0.25, "k": 2, "baseline_ms": 0.32, "breakdown": _SLIP},
        fires=True,
        verdict="remeasure",
        figures={"breakdown_ms": 320, "baseline_ms": 0.32, "unit_ratio": 1000},
    ),
    Example(
        {"target": "softmax", "p": 0.25, "k": 2, "baseline_ms": 320_000, "breakdown": _SLIP},
        fires=True,
        verdict="remeasure",
        figures={"unit_ratio": 1000},
    ),
    Example(
        {"target": "softmax", "p": 0.001, "k": 2, "baseline_ms": 80_000, "breakdown": [{"name": "softmax", "ms": 80}]},
        fires=False,
    ),
    Example({"target": "softmax", "p": 0.25, "k": 2, "baseline_ms": 320, "breakdown": _SLIP}, fires=False),
    Example({"target": "softmax", "p": 0.25, "k": 2, "baseline_ms": 3.2, "breakdown": _SLIP}, fires=False),
)


SLIP = (
    "The breakdown sums to {breakdown_ms:ms} against {baseline_ms:a_ms} step, {unit_ratio:whole}× {more}: a unit slip "
    "(seconds or microseconds written as ms), not overlap or missing phases; give every time in ms and re-run the "
    "shares."
)
SLIP_IMMEASURABLY = SLIP.replace("{unit_ratio:whole}× {more}", "immeasurably {more}")


def check(ctx: Context) -> Draft | None:
    """Remeasure when the breakdown and the step's time differ by about a unit (a thousand times)."""
    ratio = ctx.unit_slip
    base = ctx.proposal.baseline_ms
    if ratio is None or base is None:
        return None
    parts = ctx.breakdown_ms
    figures: dict[str, Figure] = {
        "breakdown_ms": parts,
        "baseline_ms": base,
        "unit_ratio": ratio,
        "unit_slip_ratio": ctx.policy.unit_slip_ratio,
    }
    # 1e300 ms of phases against a 1e-10 ms step: the ratio overflows, and no count of times can be written.
    template = SLIP if math.isfinite(ratio) else SLIP_IMMEASURABLY
    return Draft(ID, "remeasure", template, figures, {"more": "more" if parts > base else "less"})
