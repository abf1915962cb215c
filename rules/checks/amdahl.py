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
from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import AmdahlFigures, Figure, Range, Verdict
from worthit.rules.wording import Draft, listed, names, prints_as_after

ID = "amdahl"
STAGE = "worth"
ARGUES: frozenset[Verdict] = frozenset({"fund"})
"""It only ever supports funding: the verdict function at another point need not run it (rules.verdict.verdict_at)."""

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


REMOVING = "Removing {target} ({p:pct} of {scope})"
MAKING = "Making {target} ({p:pct} of {scope}) {k:k}"
REMOVING_BEHIND = "Removing {target} ({target_p:pct} of {scope})"
MAKING_BEHIND = "Making {target} ({target_p:pct} of {scope}) {target_k:k}"
MAKING_SEVERAL = "Making "
TRANSFER = (
    "{target}'s transfer ({transfer_share:pct} of {scope}; {target_wait:pct} more is waiting for the slowest rank)"
)
TARGET = "{target} ({transfer_share:pct} of {scope})"
TARGET_K = " {target_k:k}"
MORE_TARGET = "{more_name_%d:label} ({more_p_%d:pct}) {more_k_%d:k}"
MORE_UNSAID = "{more_targets_unsaid:count(more_phase)}"
BEFORE = "{baseline_ms:before(new_ms,saving_ms)}"
AFTER = "{new_ms:after(baseline_ms,saving_ms)}"
SAVED = "{saving_ms:saved(baseline_ms,new_ms)}"
LEAVES = (" leaves {scope} at ", BEFORE, " ({speedup:times})")
TAKES = (" takes {scope} from ", BEFORE, " to ", AFTER, " ({speedup:times})")
SAVING_NOTHING = ", saving nothing"
SAVING = ", saving "
COSTING = ", costing "
SPEEDS = " speeds {scope} up {speedup:times}, saving {saving_fraction:pct} of it"
SLOWS = " slows {scope} to {speedup:times}, costing {saving_fraction:-pct} of it"
RATE_MS = ", {rate:ms} per engineer-week"
RATE_SHARE = ", {rate:pct} per engineer-week"
UPKEEP_ONLY = ", counting only {upkeep_weeks:num} weeks of upkeep (no build cost given)"
UPKEEP = ", counting {upkeep_weeks:num} weeks of upkeep"
NOT_PLAIN = ", not {uncapped_new_ms:ms}"
STILL_WAITS = ": its rank waits for the slowest, which still sets it"
SETS = ": rank {step_setter:int}'s {step_setter_ms:ms} of compute {still} sets it"
MORE_UNSEEN = " and leaves {whose} {more_saving_ms:ms}"
MORE_SEES = " and sees {more_seen_ms:ms} of {whose} {more_saving_ms:ms}"
ON_RANK = " on rank {more_rank:int}"
ON_ITS_RANK = " on its rank"
UNSEEN = " unseen"


def check(ctx: Context) -> Draft:
    """The Amdahl figures, as a finding that supports funding unless another rule says otherwise."""
    f = ctx.amdahl
    figures: dict[str, Figure] = {name: getattr(f, name) for name in f.__struct_fields__}
    words = {"target": ctx.target, "scope": ctx.scope_noun, "more_phase": "more phase"}
    wait, more, step = ctx.wait_share, ctx.more_targets, ctx.barrier_step
    change: tuple[str, ...]
    if wait or more:
        change = _several(ctx, figures, words)
    else:
        # behind a barrier f.p is what the step can lose through the target: the target's own share is ctx.p
        if step is not None:
            change = (REMOVING_BEHIND if math.isinf(ctx.k) else MAKING_BEHIND,)
        else:
            change = (REMOVING if math.isinf(ctx.k) else MAKING,)
    if step is not None:
        figures |= {"target_p": ctx.p, "target_k": ctx.k, "behind_barrier": True}
    template: tuple[str, ...]
    if f.new_ms is not None and f.baseline_ms is not None and f.saving_ms is not None:
        capped = _capped(ctx, f, figures, words) if step is not None else ()
        if step is not None and f.saving_ms == 0:
            template = (*change, *LEAVES, *capped, SAVING_NOTHING)
        else:
            template = (*change, *TAKES, *capped, SAVING if f.saving_ms >= 0 else COSTING, SAVED)
    else:
        template = (*change, SPEEDS if f.saving_fraction >= 0 else SLOWS)
    ends = ctx.range_ends
    if ends is not None:
        template = _ranged(ctx, ends, figures, words)
    elif f.rate is not None:
        template += (RATE_MS if f.rate_unit == "ms/week" else RATE_SHARE,)
    upkeep = ctx.worth.cost.upkeep_weeks
    if f.rate is not None and upkeep > 0:
        figures["upkeep_weeks"] = upkeep
        # with no build cost the rate is over the upkeep alone: an upper bound, said as one
        template += (UPKEEP_ONLY if ctx.worth.cost.build_weeks is None else UPKEEP,)
    return Draft(ID, "supports", (*template, "."), figures, words, verdict="fund")


def _capped(ctx: Context, f: AmdahlFigures, figures: dict[str, Figure], words: dict[str, str]) -> tuple[str, ...]:
    """Behind a barrier, where the step's new time is not the target's Amdahl figure: the clause that says which
    rank then sets the step (`, not 1.8 ms: rank 0's 2.5 ms of compute then sets it`)."""
    step = ctx.barrier_step
    base = f.baseline_ms
    if step is None or base is None or f.new_ms is None or f.saving_ms is None:
        return ()
    plain = base * (1 - saving_fraction(ctx.p, ctx.k) - sum(saving_fraction(p, k) for _, p, k in ctx.more_targets))
    figures["uncapped_new_ms"] = plain
    instead = (NOT_PLAIN,) if not prints_as_after(plain, base, f.new_ms, f.saving_ms) else ()
    unseen = _unseen_more(ctx, figures, words)
    if step.setter is None or step.after_ms is None:
        return (*instead, STILL_WAITS, *unseen)
    figures |= {"step_setter": step.setter, "step_setter_ms": step.after_ms}
    barrier = ctx.proposal.flags.barrier
    words["still"] = "still" if barrier is not None and step.setter == barrier.straggler else "then"
    return (*instead, SETS, *unseen)


def _unseen_more(ctx: Context, figures: dict[str, Figure], words: dict[str, str]) -> tuple[str, ...]:
    """Behind a barrier, what the further targets save on the rank they are measured on and the step does not see
    (their time on the other ranks not measured): ` and leaves softmax's 68.1 µs on rank 6 unseen`."""
    step, base, barrier = ctx.barrier_step, ctx.baseline_ms, ctx.proposal.flags.barrier
    if step is None or base is None or barrier is None or step.more_unseen * base < 1e-9:
        return ()
    more = ctx.more_targets
    words["whose"] = f"{names([more[0][0]])}'s" if len(more) == 1 else "the further targets'"
    rank = barrier.rank if barrier.rank is not None else barrier.straggler
    on = ON_ITS_RANK
    if rank is not None:
        figures["more_rank"] = rank
        on = ON_RANK
    figures |= {"more_saving_ms": step.more_plain * base, "more_unseen_ms": step.more_unseen * base}
    if step.more_seen * base < 1e-9:
        return (MORE_UNSEEN, on, UNSEEN)
    figures["more_seen_ms"] = step.more_seen * base
    return (MORE_SEES, on)


SAID_TARGETS = 2
"""Further targets named one by one in the sentence; the rest are counted."""


def _several(ctx: Context, figures: dict[str, Figure], words: dict[str, str]) -> tuple[str, ...]:
    """The change as the proposal states it when it acts on more than one (p, k): a collective's transfer beside
    its wait, or several targets each at its own k, whose savings add (figures `target_p`, `more_p_1`, …)."""
    wait = ctx.wait_share
    p = ctx.p - wait
    figures |= {"target_p": ctx.p, "target_k": ctx.k, "target_wait": wait or None, "transfer_share": p}
    parts = [(TRANSFER if wait else TARGET) + TARGET_K]
    for i, (name, share, k) in enumerate(ctx.more_targets, start=1):
        figures |= {f"more_p_{i}": share, f"more_k_{i}": k}
        if i <= SAID_TARGETS:
            words[f"more_name_{i}"] = name
            parts.append(MORE_TARGET % (i, i, i))
    left = len(ctx.more_targets) - SAID_TARGETS
    if left > 0:
        figures["more_targets_unsaid"] = left
        parts.append(MORE_UNSAID)
    return (MAKING_SEVERAL, listed(parts))


RANGED_REMOVING = "Removing {target} ({p_low:span_pct(p_high)} of {scope})"
RANGED_MAKING = "Making {target} ({p_low:span_pct(p_high)} of {scope}) {k_low:span_times(k_high)} {said}"
RANGED_TAKES = (
    " takes {scope} from {baseline_ms:ms} to {new_ms_high:span_ms(new_ms_low)} "
    "({speedup_low:span_times(speedup_high)}), saving {saving_fraction_low:span_pct(saving_fraction_high)} of it"
)
RANGED_SPEEDS = (
    " speeds {scope} up {speedup_low:span_times(speedup_high)}, saving "
    "{saving_fraction_low:span_pct(saving_fraction_high)}"
)
RANGED_RATE_MS = ", {rate_low:span_ms(rate_high)} per engineer-week"
RANGED_RATE_SHARE = ", {rate_low:span_pct(rate_high)} per engineer-week"


def _ranged(
    ctx: Context, ends: tuple[AmdahlFigures, AmdahlFigures], figures: dict[str, Figure], words: dict[str, str]
) -> tuple[str, ...]:
    """The sentence for a p or k given as a range: each figure quoted from its low end to its high end."""
    low, high = ends
    # k at each end as the figures use it: derived end to end when the change adds work (30-50% at 3-8x with 2 ms of
    # dequantize on 100 ms is 2.5-6.061x), which neither the proposal's range nor the midpoint's `k` holds
    for name in ("k", "speedup", "saving_fraction", "new_ms", "saving_ms", "rate"):
        figures[f"{name}_low"], figures[f"{name}_high"] = getattr(low, name), getattr(high, name)
    p_low, p_high = low.p, high.p
    k_low, k_high = (math.inf if v == "inf" else float(v) for v in (low.k, high.k))
    if ctx.behind_barrier:
        # the ends' (p, k) are the step's (what it can lose through the target); the sentence says the target's own
        ends_p, ends_k = ctx.proposal.p, ctx.proposal.k
        p_low, p_high = (ends_p.low, ends_p.high) if isinstance(ends_p, Range) else (ctx.p, ctx.p)
        k_low, k_high = (ends_k.low, ends_k.high) if isinstance(ends_k, Range) else (ctx.given_k, ctx.given_k)
        figures["target_k_low"], figures["target_k_high"] = k_low, k_high
    figures["p_low"], figures["p_high"] = p_low, p_high
    if math.isinf(k_low) and math.isinf(k_high):
        change = RANGED_REMOVING
    else:
        words["said"] = "faster" if k_low > 1 else "its speed"
        change = RANGED_MAKING
        if ctx.behind_barrier:
            change = change.replace("{k_low:span_times(k_high)}", "{target_k_low:span_times(target_k_high)}")
    if low.new_ms is not None and high.new_ms is not None and low.baseline_ms is not None:
        template: tuple[str, ...] = (change, RANGED_TAKES)
    else:
        template = (change, RANGED_SPEEDS)
    if low.rate is not None and high.rate is not None:
        template += (RANGED_RATE_MS if low.rate_unit == "ms/week" else RANGED_RATE_SHARE,)
    return template
