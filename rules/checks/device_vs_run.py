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
from worthit.rules.model import Figure
from worthit.rules.search import PASSING, break_even_below, said_share
from worthit.rules.wording import Draft, opposed

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

BOTH = "{subject} is {p_measured:pct} of {scope} and {p_end_to_end:pct} of the profiled run"
JUDGED = (
    ", so judged end to end {k:k} {end_to_end_saving:saves} ({end_to_end_speedup:times}), and that is the figure to "
    "decide on."
)
NOTHING_AT_ALL = ", so even making it infinitely fast is a rounding error"
ROUNDING = ", so {k:k} saves {end_to_end_saving:pct} end to end, a rounding error"
NOTHING_TO_WIN = ", and at {k:times} it {end_to_end_saving:saves(of_what)}, so there is nothing to win"
PAYS_ANYWAY = (
    "{target} is {p_measured:pct} of device activity, with its share of the run unknown, but the work pays down to "
    "{break_even_p_end_to_end_said:pct} of the run, so that share cannot change the answer."
)
FUND_IF_RUN = (
    "Fund if a whole-run timeline shows {target} at {break_even_p_end_to_end_said:pct} of the run or more: its "
    "{p_measured:pct} is of device activity, which the run's idle time, copies and host work only dilute."
)


def check(ctx: Context) -> Draft | None:
    """Judges the end-to-end share; speaks for noise_floor with both shares when it is a rounding error."""
    proposal = ctx.proposal
    derived = proposal.breakdown_scope == "end_to_end" and ctx.target_phase is not None and ctx.breakdown_ms > 0
    if proposal.p_end_to_end is None and not derived:
        return _unconfirmed(ctx) if proposal.scope.measured == "device_activity" else None
    run, saving = ctx.p_run, ctx.run_saving
    if math.isclose(run, ctx.p, rel_tol=1e-9):
        return None  # the measured scope is the run (a distributed step): there are not two shares to tell apart
    figures: dict[str, Figure] = {
        "p_measured": ctx.p,
        "p_end_to_end": run,
        "end_to_end_saving": saving,
        "end_to_end_speedup": amdahl.speedup(run, ctx.k),
        "noise_floor": ctx.policy.noise_floor,
        "k": ctx.k,
    }
    kind = ctx.target_phase.kind if ctx.target_phase is not None else "kernel"
    subject = f"The {_NOUN[kind]} {ctx.target}" if proposal.target else "The target"
    words = {"subject": subject, "scope": ctx.scope_noun}
    floor = ctx.policy.noise_floor
    if saving >= floor or ctx.worth.clears:
        # The run's share is the figure the case stands on: it speaks for funding (both shares in the sentence)
        # unless something else carries the value (a fleet's money speaks for itself).
        own = saving >= floor and ctx.worth.basis == "measured"
        carried_by = None if saving >= floor else ctx.worth.carried_by
        return Draft(ID, "supports" if own else "info", (BOTH, JUDGED), figures, words, overridden_by=carried_by)
    if saving <= 0:
        head, words["of_what"] = NOTHING_TO_WIN, " of the run"
    elif run < floor:
        head = NOTHING_AT_ALL
    else:
        head = ROUNDING
    return opposed(ctx, ID, (BOTH, head), figures, words, then="is where the week should go")


def _unconfirmed(ctx: Context) -> Draft | None:
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
    figures["break_even_p_end_to_end_said"] = said_share(passes, edge)
    words = {"target": ctx.target}
    if safe:
        return Draft(ID, "info", PAYS_ANYWAY, figures, words)
    return Draft(ID, "condition", FUND_IF_RUN, figures, words, stage="condition")
