"""amdahl — the figures of Amdahl's law for the proposal as stated.

What it checks: always fires. Speedup S = 1 / ((1 − p) + p / k), the ceiling 1 / (1 − p), the saving, the new
time, the share of the target's own headroom captured, what is left for any follow-up, and the saving per
engineer-week.

Why it matters: a kernel's own speedup says nothing about the step until it is weighed by the share of the step
the kernel takes. "10× faster" on 21% of the step is 1.233× end to end.

Example: p = 0.21, k = 10, baseline 100 ms, 3 weeks → 81.1 ms, 1.233×, 18.9 ms saved, 90% of the headroom,
2.1 ms left, 6.3 ms per engineer-week: fund.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context, Example
from worthit.rules.model import Finding
from worthit.rules.text import k_text, ms, ms_change, pct, times

ID = "amdahl"
STAGE = "worth"

EXAMPLES = (
    Example(
        {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3},
        fires=True,
        verdict="fund",
        figures={
            "speedup": 1.2330456,
            "new_ms": 81.1,
            "saving_ms": 18.9,
            "headroom_captured": 0.9,
            "remaining_ms": 2.1,
            "rate": 6.3,
        },
    ),
    Example({"p": 0.5, "k": "inf"}, fires=True, verdict="fund", figures={"speedup": 2.0, "saving_fraction": 0.5}),
)


def check(ctx: Context) -> Finding:
    """The Amdahl figures, as a finding that supports funding unless another rule says otherwise."""
    f = ctx.amdahl
    figures = {name: getattr(f, name) for name in f.__struct_fields__}
    scope = ctx.scope_noun
    change = (
        f"Removing {ctx.target} ({pct(f.p)} of {scope})"
        if math.isinf(ctx.k)
        else f"Making {ctx.target} ({pct(f.p)} of {scope}) {k_text(ctx.k)}"
    )
    if f.new_ms is not None and f.baseline_ms is not None and f.saving_ms is not None:
        before, after = ms_change(f.baseline_ms, f.new_ms)
        message = (
            f"{change} takes {scope} from {before} to {after} ({times(f.speedup)}), "
            f"{'saving' if f.saving_ms >= 0 else 'costing'} {ms(abs(f.saving_ms))}"
        )
    else:
        if f.saving_fraction >= 0:
            message = f"{change} speeds {scope} up {times(f.speedup)}, saving {pct(f.saving_fraction)} of it"
        else:
            message = f"{change} slows {scope} to {times(f.speedup)}, costing {pct(-f.saving_fraction)} of it"
    if f.rate is not None:
        per_week = ms(f.rate) if f.rate_unit == "ms/week" else pct(f.rate)
        message += f", {per_week} per engineer-week"
    return Finding(rule=ID, effect="supports", verdict="fund", message=message + ".", figures=figures)
