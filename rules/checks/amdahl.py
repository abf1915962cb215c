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

from worthit.rules.amdahl import saving_fraction
from worthit.rules.context import Context, Example
from worthit.rules.model import AmdahlFigures, Figure, Finding, Range, Verdict
from worthit.rules.text import count, join, k_text, label, ms, ms_saved, num, pct, span, times

ID = "amdahl"
STAGE = "worth"
ARGUES: frozenset[Verdict] = frozenset({"fund"})
"""It only ever supports funding: the verdict function at another point need not run it (rules.engine.verdict_at)."""

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
    wait, more, step = ctx.wait_share, ctx.more_targets, ctx.barrier_step
    if wait or more:
        change = _several(ctx, figures, scope)
    else:
        # behind a barrier f.p is what the step can lose through the target: the target's own share is ctx.p
        shown = ctx.p if step is not None else f.p
        change = (
            f"Removing {ctx.target} ({pct(shown)} of {scope})"
            if math.isinf(ctx.k)
            else f"Making {ctx.target} ({pct(shown)} of {scope}) {k_text(ctx.k)}"
        )
    if step is not None:
        figures |= {"target_p": ctx.p, "target_k": ctx.k, "behind_barrier": True}
    if f.new_ms is not None and f.baseline_ms is not None and f.saving_ms is not None:
        before, after, saved = ms_saved(f.baseline_ms, f.new_ms, f.saving_ms)  # printed so that they add up
        capped = _capped(ctx, f, figures, after) if step is not None else ""
        if step is not None and f.saving_ms == 0:
            message = f"{change} leaves {scope} at {before} ({times(f.speedup)}){capped}, saving nothing"
        else:
            message = (
                f"{change} takes {scope} from {before} to {after} ({times(f.speedup)}){capped}, "
                f"{'saving' if f.saving_ms >= 0 else 'costing'} {saved}"
            )
    else:
        if f.saving_fraction >= 0:
            message = f"{change} speeds {scope} up {times(f.speedup)}, saving {pct(f.saving_fraction)} of it"
        else:
            message = f"{change} slows {scope} to {times(f.speedup)}, costing {pct(-f.saving_fraction)} of it"
    ends = ctx.range_ends
    if ends is not None:
        message = _ranged(ctx, ends, figures)
    elif f.rate is not None:
        per_week = ms(f.rate) if f.rate_unit == "ms/week" else pct(f.rate)
        message += f", {per_week} per engineer-week"
    upkeep = ctx.worth.cost.upkeep_weeks
    if f.rate is not None and upkeep > 0:
        figures["upkeep_weeks"] = upkeep
        if ctx.worth.cost.build_weeks is None:  # the rate is over the upkeep alone: an upper bound, said as one
            message += f", counting only {num(upkeep)} weeks of upkeep (no build cost given)"
        else:
            message += f", counting {num(upkeep)} weeks of upkeep"
    return Finding(rule=ID, effect="supports", verdict="fund", message=message + ".", figures=figures)


def _capped(ctx: Context, f: AmdahlFigures, figures: dict[str, Figure], after: str) -> str:
    """Behind a barrier, where the step's new time is not the target's Amdahl figure: the clause that says which
    rank then sets the step (`, not 1.8 ms: rank 0's 2.5 ms of compute then sets it`)."""
    step = ctx.barrier_step
    base = f.baseline_ms
    if step is None or base is None:
        return ""
    plain = base * (1 - saving_fraction(ctx.p, ctx.k) - sum(saving_fraction(p, k) for _, p, k in ctx.more_targets))
    figures["uncapped_new_ms"] = plain
    instead = f", not {ms(plain)}" if ms(plain) != after else ""
    unseen = _unseen_more(ctx, figures)
    if step.setter is None or step.after_ms is None:
        return f"{instead}: its rank waits for the slowest, which still sets it{unseen}"
    figures |= {"step_setter": step.setter, "step_setter_ms": step.after_ms}
    barrier = ctx.proposal.flags.barrier
    still = "still" if barrier is not None and step.setter == barrier.straggler else "then"
    return f"{instead}: rank {step.setter}'s {ms(step.after_ms)} of compute {still} sets it{unseen}"


def _unseen_more(ctx: Context, figures: dict[str, Figure]) -> str:
    """Behind a barrier, what the further targets save on the rank they are measured on and the step does not see
    (their time on the other ranks not measured): ` and leaves softmax's 68.1 µs on rank 6 unseen`."""
    step, base, barrier = ctx.barrier_step, ctx.baseline_ms, ctx.proposal.flags.barrier
    if step is None or base is None or barrier is None or step.more_unseen * base < 1e-9:
        return ""
    more = ctx.more_targets
    whose = f"{label(more[0][0])}'s" if len(more) == 1 else "the further targets'"
    rank = barrier.rank if barrier.rank is not None else barrier.straggler
    on = f" on rank {rank}" if rank is not None else " on its rank"
    figures |= {"more_saving_ms": step.more_plain * base, "more_unseen_ms": step.more_unseen * base}
    if step.more_seen * base < 1e-9:
        return f" and leaves {whose} {ms(step.more_plain * base)}{on} unseen"
    figures["more_seen_ms"] = step.more_seen * base
    return f" and sees {ms(step.more_seen * base)} of {whose} {ms(step.more_plain * base)}{on}"


SAID_TARGETS = 2
"""Further targets named one by one in the sentence; the rest are counted."""


def _several(ctx: Context, figures: dict[str, Figure], scope: str) -> str:
    """The change as the proposal states it when it acts on more than one (p, k): a collective's transfer beside
    its wait, or several targets each at its own k, whose savings add (figures `target_p`, `more_p_1`, …)."""
    wait = ctx.wait_share
    p = ctx.p - wait
    figures |= {"target_p": ctx.p, "target_k": ctx.k, "target_wait": wait or None, "transfer_share": p}
    what = f"{ctx.target}'s transfer" if wait else ctx.target
    waiting = f"; {pct(wait)} more is waiting for the slowest rank" if wait else ""
    parts = [f"{what} ({pct(p)} of {scope}{waiting}) {k_text(ctx.k)}"]
    for i, (name, share, k) in enumerate(ctx.more_targets, start=1):
        figures |= {f"more_p_{i}": share, f"more_k_{i}": k}
        if i <= SAID_TARGETS:
            parts.append(f"{label(name)} ({pct(share)}) {k_text(k)}")
    left = len(ctx.more_targets) - SAID_TARGETS
    if left > 0:
        figures["more_targets_unsaid"] = left
        parts.append(count(left, "more phase"))
    return "Making " + join(parts)


def _ranged(ctx: Context, ends: tuple[AmdahlFigures, AmdahlFigures], figures: dict[str, Figure]) -> str:
    """The sentence for a p or k given as a range: each figure quoted from its low end to its high end."""
    low, high = ends
    # k at each end as the figures use it: derived end to end when the change adds work (30-50% at 3-8x with 2 ms of
    # dequantize on 100 ms is 2.5-6.061x), which neither the proposal's range nor the midpoint's `k` holds
    for name in ("k", "speedup", "saving_fraction", "new_ms", "saving_ms", "rate"):
        figures[f"{name}_low"], figures[f"{name}_high"] = getattr(low, name), getattr(high, name)
    scope = ctx.scope_noun
    p = span(pct(low.p), pct(high.p))
    k_low, k_high = (math.inf if v == "inf" else float(v) for v in (low.k, high.k))
    if ctx.behind_barrier:
        # the ends' (p, k) are the step's (what it can lose through the target); the sentence says the target's own
        ends_p, ends_k = ctx.proposal.p, ctx.proposal.k
        p_low, p_high = (ends_p.low, ends_p.high) if isinstance(ends_p, Range) else (ctx.p, ctx.p)
        k_low, k_high = (ends_k.low, ends_k.high) if isinstance(ends_k, Range) else (ctx.given_k, ctx.given_k)
        p = span(pct(p_low), pct(p_high))
    if math.isinf(k_low) and math.isinf(k_high):
        change = f"Removing {ctx.target} ({p} of {scope})"
    else:
        said = "faster" if k_low > 1 else "its speed"
        change = f"Making {ctx.target} ({p} of {scope}) {span(times(k_low), times(k_high))} {said}"
    speed = span(times(low.speedup), times(high.speedup))
    if low.new_ms is not None and high.new_ms is not None and low.baseline_ms is not None:
        message = (
            f"{change} takes {scope} from {ms(low.baseline_ms)} to {span(ms(high.new_ms), ms(low.new_ms))} "
            f"({speed}), saving {span(pct(low.saving_fraction), pct(high.saving_fraction))} of it"
        )
    else:
        message = (
            f"{change} speeds {scope} up {speed}, saving {span(pct(low.saving_fraction), pct(high.saving_fraction))}"
        )
    if low.rate is not None and high.rate is not None:
        unit = ms if low.rate_unit == "ms/week" else pct
        message += f", {span(unit(low.rate), unit(high.rate))} per engineer-week"
    return message
