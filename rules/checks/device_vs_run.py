"""device_vs_run — judge the end-to-end share, and say both.

What it checks: when both a share of a narrower scope (`p`, e.g. of device activity or of one rank) and the target's
share of the whole run (`p_end_to_end`, or read off a whole-run breakdown) are known, the verdict uses the
end-to-end share: when its saving is under the noise floor and the value of the work (rules.worth) does not carry
it, it declines, or redirects to the largest thing in the run, with both shares in one sentence (it comes before
noise_floor in the worth stage, so it speaks first); otherwise it supports funding, in the sentence with both
shares, when the run's saving clears the bars on its own, and is info when a fleet or another value carries it.
Equal shares (the measured scope is the run) say nothing. A share of device activity alone is an upper bound on the
run's share: fund only if a whole-run timeline shows at least the break-even run share, unless the work pays even at
`estimate_margin` times less (info).

Why it matters: a kernel can be a visible slice of device activity and nothing at all of the run, when the run is
dominated by allocation and host↔device copies the device-activity view leaves out. The honest review sentence
gives both numbers, so nobody re-derives the flattering one.

Example: 44,242 ns of 3,606,501 ns of device activity (1.2%) and 0.014% of the profiled run, with allocation and
copies at 84.6%: redirect, "even making it infinitely fast is a rounding error".
"""

from __future__ import annotations

import math

import msgspec

from worthit.rules import amdahl
from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import condition, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.search import PASSING, break_even_below, said_share
from worthit.rules.text import k_text, pct, saves, times

ID = "device_vs_run"
STAGE = "worth"

_RUN = [
    {"name": "the_kernel", "ms": 0.014},
    {"name": "hipMemcpy", "ms": 62.6, "kind": "copy"},
    {"name": "hipMalloc", "ms": 22.0, "kind": "alloc"},
    {"name": "other", "ms": 15.386, "kind": "other"},
]

EXAMPLES = (
    Example(
        {
            "target": "the_kernel",
            "p": 44242 / 3606501,
            "k": 10,
            "p_end_to_end": 0.00014,
            "breakdown": _RUN,
            "breakdown_scope": "end_to_end",
            "scope": {"measured": "device_activity"},
        },
        fires=True,
        verdict="redirect",
        figures={"p_measured": 0.0122673, "p_end_to_end": 0.00014, "alternative_share": 0.846},
    ),
    Example({"target": "the_kernel", "p": 0.012, "k": 10, "p_end_to_end": 0.00014}, fires=True, verdict="decline"),
    Example(
        {"target": "gemm", "p": 0.5, "k": 2, "p_end_to_end": 0.3, "scope": {"measured": "device_activity"}},
        fires=True,
        verdict="fund",
        figures={"end_to_end_speedup": 1.1764706},
    ),
    Example(
        {"target": "layernorm", "p": 0.09, "k": 4, "cost_weeks": 1, "scope": {"measured": "device_activity"}},
        fires=True,
        verdict="fund_if",
        figures={"break_even_p_end_to_end": 0.0133333},
    ),
    Example({"target": "gemm", "p": 0.5, "k": 2}, fires=False),
    Example({"target": "gemm", "p": 0.03, "k": 2, "p_end_to_end": 0.03, "scope": {"measured": "step"}}, fires=False),
)

_SCOPE = {
    "device_activity": "device activity",
    "rank": "one rank's time",
    "step": "the step",
    "end_to_end": "the measured run",
}
_NOUN = {
    "kernel": "kernel",
    "copy": "copy",
    "alloc": "allocation",
    "host": "host work",
    "comm": "communication kernel",
    "input": "input wait",
    "other": "phase",
    "cpu": "CPU work",
    "io": "I/O",
}


def check(ctx: Context) -> Finding | None:
    """Judges the end-to-end share; speaks for noise_floor with both shares when it is a rounding error."""
    proposal = ctx.proposal
    derived = proposal.breakdown_scope == "end_to_end" and ctx.target_phase is not None and ctx.breakdown_ms > 0
    if proposal.p_end_to_end is None and not derived:
        return _unconfirmed(ctx) if proposal.scope.measured == "device_activity" else None
    run, saving = ctx.p_run, ctx.run_saving
    if math.isclose(run, ctx.p, rel_tol=1e-9):
        return None  # the measured scope is the run (a distributed step): there are not two shares to tell apart
    narrow = _SCOPE.get(proposal.scope.measured or "", "the measured scope")
    figures: dict[str, Figure] = {
        "p_measured": ctx.p,
        "p_end_to_end": run,
        "end_to_end_saving": saving,
        "end_to_end_speedup": amdahl.speedup(run, ctx.k),
        "noise_floor": ctx.policy.noise_floor,
    }
    kind = ctx.target_phase.kind if ctx.target_phase is not None else "kernel"
    subject = f"The {_NOUN[kind]} {ctx.target}" if proposal.target else "The target"
    both = f"{subject} is {pct(ctx.p)} of {narrow} and {pct(run)} of the profiled run"
    floor = ctx.policy.noise_floor
    if saving >= floor or ctx.worth.clears:
        # The run's share is the figure the case stands on: it speaks for funding (both shares in the sentence)
        # unless something else carries the value (a fleet's money speaks for itself).
        own = saving >= floor and ctx.worth.basis == "measured"
        return Finding(
            overridden_by=None if saving >= floor else ctx.worth.carried_by,
            rule=ID,
            effect="supports" if own else "info",
            figures=figures,
            message=f"{both}, so judged end to end {k_text(ctx.k)} {saves(saving)} "
            f"({times(amdahl.speedup(run, ctx.k))}), and that is the figure to decide on.",
        )
    if run < floor:
        head = f"{both}, so even making it infinitely fast is a rounding error"
    else:
        head = f"{both}, so {k_text(ctx.k)} saves {pct(saving)} end to end, a rounding error"
    if saving <= 0:
        head = f"{both}, and at {times(ctx.k)} it {saves(saving, ' of the run')}, so there is nothing to win"
    return opposition(ctx, ID, head, figures, then="is where the week should go")


def _unconfirmed(ctx: Context) -> Finding | None:
    """A share of device activity alone: an upper bound on the run's share, so the condition is the smallest run
    share at which the work still pays (bisection on the pure verdict function), unless it pays even at
    `estimate_margin` times less."""
    proposal, probe = ctx.proposal, ctx.probe
    if probe is None:
        return None

    def passes(run: float) -> bool:
        return probe(msgspec.structs.replace(proposal, p_end_to_end=run), ctx.p, ctx.given_k) in PASSING

    margin = ctx.policy.estimate_margin
    found = break_even_below(passes, ctx.p, margin)
    if found is None:
        return None  # it fails even if all of device activity were the run: the other checks say why
    edge, safe = found
    figures: dict[str, Figure] = {"p_measured": ctx.p, "estimate_margin": margin, "break_even_p_end_to_end": edge}
    figures["break_even_p_end_to_end_said"] = said = said_share(passes, edge)
    if safe:
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"{ctx.target} is {pct(ctx.p)} of device activity, with its share of the run unknown, but the "
            f"work pays down to {pct(said)} of the run, so that share cannot change the answer.",
        )
    return condition(
        ID,
        figures,
        f"Fund if a whole-run timeline shows {ctx.target} at {pct(said)} of the run or more: its "
        f"{pct(ctx.p)} is of device activity, which the run's idle time, copies and host work only dilute.",
        stage="condition",
    )
