"""added_work — k end to end: the work a change adds is paid out of what it saves.

What it checks: `added_work`. Each added phase (a dequantize, an extra copy, a second kernel) adds its ms to the
target's new time: the target's time T = p × the scope's time becomes T/k + added, so the k every figure uses is
T / (T/k + added). Speculative decoding is stated as teams state it: γ = `draft_tokens` drafted per verify pass,
α = `acceptance` per drafted token, one draft step costing `draft_cost` and one verify pass `verify_cost` plain
decode steps. A verify pass then yields on average (1 − α^(γ+1)) / (1 − α) tokens (γ + 1 at α = 1) for
γ·draft_cost + verify_cost steps' time, so decode's k is

    k = [(1 − α^(γ+1)) / (1 − α)] / (γ·draft_cost + verify_cost)

in place of the "tokens per verify pass" often quoted as the speedup. Supports funding at that k (the other stages
judge it there); opposes when the added work leaves the target no faster. With p or k a range, k is derived at each
corner of it and the sentence gives k and the run's saving from the lowest corner to the highest, never the
midpoint's, which nobody proposed.

Why it matters: a change that adds work is never as fast as its best kernel. "2.2× decode" counted in tokens per
verify pass forgets the draft model and the longer verify pass; a 2× INT8 GEMM forgets the dequantize beside it.

Example: γ = 4, α = 0.7, draft steps at 0.1 and the verify pass at 1.2 plain steps: 2.77 tokens per pass for
1.6 steps, 1.73×, not 2.77×. A 40 ms GEMM made 2× faster with a 5 ms dequantize added is 1.6× end to end.
"""

from __future__ import annotations

import math

from worthit.rules import amdahl
from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure
from worthit.rules.wording import Draft, Template, names, opposed, same_printed

ID = "added_work"
STAGE = "worth"

_SPEC = {"draft_tokens": 4, "acceptance": 0.7, "draft_cost": 0.1, "verify_cost": 1.2}

EXAMPLES = (
    Example(
        {"target": "decode", "p": 0.8, "k": 2.77, "baseline_ms": 1000, "cost_weeks": 4}
        | {"added_work": {"speculative": _SPEC}},
        fires=True,
        verdict="fund",
        figures={"expected_tokens": 2.7731, "round_cost_steps": 1.6, "effective_k": 1.7332},
    ),
    Example(
        {"target": "gemm", "p": 0.4, "k": 2, "baseline_ms": 100, "cost_weeks": 2}
        | {"added_work": {"phases": [{"name": "dequantize", "ms": 5}]}},
        fires=True,
        verdict="fund",
        figures={"added_ms": 5, "effective_k": 1.6},
    ),
    Example(
        {"target": "gemm", "p": 0.1, "k": 2, "baseline_ms": 100, "cost_weeks": 2}
        | {"added_work": {"phases": [{"name": "dequantize", "ms": 6}]}},
        fires=True,
        verdict="decline",
        figures={"effective_k": 0.909091},
    ),
    Example({"target": "gemm", "p": 0.4, "k": 2, "baseline_ms": 100}, fires=False),
)


COUNTING = "Counting the work the change adds, "
SPECULATIVE = (
    "at γ = {draft_tokens:int} and α = {acceptance:pct} a verify pass yields {expected_tokens:num2} tokens for "
    "{round_cost_steps:num2} plain decode steps' time"
)
ADDED = "the {added_ms:ms} of {names} it adds comes out of {target}'s "
NO_TIME = "it adds no time"
ENDS_UP = ", so {target} ends up "
NOT = ", not "
IS = ", so {target} is "
END_TO_END = " end to end, not "
AND = ", and "
SAVES_OR_LOSES = "the run saves up to {end_to_end_saving_high:pct} or loses up to {end_to_end_saving_low:-pct}"
SAVES = "the run saves "
LOSES = "the run loses "
K_UNBOUNDED = "{effective_k_low:k} to {effective_k_high:k}"
K_FASTER = "{effective_k_low:span_k_times(effective_k_high)} faster"
K_SLOWER = "{effective_k_low:span_k_times(effective_k_high)} as fast (slower)"
K_AS_FAST = "{effective_k_low:span_k_times(effective_k_high)} as fast"


def check(ctx: Context) -> Draft | None:
    """States the k the figures use once the change's added work is counted; opposes when nothing is left."""
    added = ctx.proposal.added_work
    if added is None:
        return None
    if added.speculative is None and sum(phase.ms for phase in added.phases or ()) <= 0:
        return None  # nothing is added: the k the figures use is the proposal's (or its roofline's), not this rule's
    # The k before the added work is counted: the stated one, or its roofline's where the same work cannot go faster
    # (that cap is the roofline rule's to say, never "the work the change adds").
    k, stated = ctx.k, _before(ctx)
    figures: dict[str, Figure] = {"stated_k": stated, "effective_k": None if math.isinf(k) else k}
    words = {"target": ctx.target}
    # A range is quoted across its box, each figure at its lowest and highest corner (k derived again at each), never
    # at the midpoint, which nobody proposed. Only the verdict is asked at a corner or a probe: the sentence, and the
    # corners' contexts it reads, are not needed there.
    corners = None if ctx.verdict_only else ctx.corners
    ends = list(corners.values()) if corners is not None else [ctx]
    parts: list[str] = []
    spec = added.speculative
    if spec is not None:
        tokens = amdahl.expected_tokens(spec.draft_tokens, spec.acceptance)
        steps = spec.draft_tokens * spec.draft_cost + spec.verify_cost
        figures |= {
            "draft_tokens": spec.draft_tokens,
            "acceptance": spec.acceptance,
            "draft_cost": spec.draft_cost,
            "verify_cost": spec.verify_cost,
            "expected_tokens": tokens,
            "round_cost_steps": steps,
            "speculative_k": tokens / steps,
        }
        parts.append(SPECULATIVE)
    phases = added.phases or []
    extra = sum(phase.ms for phase in phases)
    if extra > 0:
        figures["added_ms"] = extra
        words["names"] = names([phase.name for phase in phases if phase.ms > 0][:3])
        base = ctx.baseline_ms or 0.0
        figures["target_ms"] = base * ctx.p
        parts.append(ADDED + _ends(figures, "target_ms", [base * end.p for end in ends], "ms"))
    how: Template = ("; ".join(parts),) if parts else (NO_TIME,)
    derived = [end.k for end in ends]
    not_k = _ends(figures, "stated_k", [_before(end) for end in ends], "times")
    if k <= 1:
        head = (COUNTING, *how, ENDS_UP, _k_span(figures, k, derived), NOT, not_k)
        return opposed(ctx, ID, head, figures, words, then="is where the effort belongs")
    saving = ctx.run_saving
    figures["end_to_end_saving"] = saving
    savings = [end.run_saving for end in ends]
    if min(savings) < 0 <= max(savings):
        low, high = min(savings), max(savings)
        figures |= {"end_to_end_saving_low": low, "end_to_end_saving_high": high}
        run: tuple[str, ...] = (SAVES_OR_LOSES,)
    else:
        said = _ends(figures, "end_to_end_saving", [abs(value) for value in savings], "pct", negate=saving < 0)
        run = (SAVES if saving >= 0 else LOSES, said)
    template = (COUNTING, *how, IS, _k_span(figures, k, derived), END_TO_END, not_k, AND, *run, ".")
    return Draft(ID, "supports", template, figures, words, verdict="fund")


def _before(ctx: Context) -> float:
    """The target's k before the work the change adds is counted (after the roofline's cap)."""
    return ctx.k if ctx.stated_k is None else ctx.stated_k


def _ends(figures: dict[str, Figure], name: str, values: list[float], say: str, *, negate: bool = False) -> str:
    """A figure over a range's corners as a template, `30–50 ms` (its lowest and highest put in `figures` as
    `name_low` and `name_high`), or the figure `name` itself when there is one value (`negate`: printed negated, a
    loss said as a positive share)."""
    low, high = min(values), max(values)
    if low == high:
        return f"{{{name}:{'-' if negate else ''}{say}}}"
    figures |= {f"{name}_low": low, f"{name}_high": high}
    return f"{{{name}_low:span_{say}({name}_high)}}"


def _k_span(figures: dict[str, Figure], k: float, ks: list[float]) -> str:
    """The k the figures use, end to end, over a range's corners: `1.73× faster`, `2.5–6.06× faster`,
    `0.8–0.95× as fast (slower)` (`effective_k_low` and `effective_k_high` in `figures`)."""
    low, high = min(ks), max(ks)
    if low == high or same_printed("k", low, high):
        if low == k:
            return "{effective_k:k}"
        figures["effective_k_low"] = low  # every corner prints alike: the lowest is the one said
        return "{effective_k_low:k}"
    figures |= {"effective_k_low": low, "effective_k_high": None if math.isinf(high) else high}
    if math.isinf(high):
        return K_UNBOUNDED
    if low > 1:
        return K_FASTER
    return K_SLOWER if high < 1 else K_AS_FAST
