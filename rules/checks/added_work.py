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
from collections.abc import Callable

from worthit.rules import amdahl
from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import join, k_text, label, ms, num, pct, span, times

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


def check(ctx: Context) -> Finding | None:
    """States the k the figures use once the change's added work is counted; opposes when nothing is left."""
    added = ctx.proposal.added_work
    if added is None:
        return None
    k, stated = ctx.k, ctx.given_k
    figures: dict[str, Figure] = {"stated_k": stated, "effective_k": None if math.isinf(k) else k}
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
        parts.append(
            f"at γ = {spec.draft_tokens} and α = {pct(spec.acceptance)} a verify pass yields {num(tokens, 2)} tokens "
            f"for {num(steps, 2)} plain decode steps' time"
        )
    phases = added.phases or []
    extra = sum(phase.ms for phase in phases)
    if extra > 0:
        figures["added_ms"] = extra
        names = join([label(phase.name) for phase in phases if phase.ms > 0][:3])
        base = ctx.baseline_ms or 0.0
        figures["target_ms"] = base * ctx.p
        own = _ends(figures, "target_ms", [base * end.p for end in ends], ms)
        parts.append(f"the {ms(extra)} of {names} it adds comes out of {ctx.target}'s {own}")
    how = "; ".join(parts) if parts else "it adds no time"
    derived = [end.k for end in ends]
    not_k = _ends(figures, "stated_k", [end.given_k for end in ends], times)
    if k <= 1:
        ends_up = _k_span(figures, derived)
        head = f"Counting the work the change adds, {how}, so {ctx.target} ends up {ends_up}, not {not_k}"
        return opposition(ctx, ID, head, figures, then="is where the effort belongs")
    saving = ctx.run_saving
    figures["end_to_end_saving"] = saving
    savings = [end.run_saving for end in ends]
    if min(savings) < 0 <= max(savings):
        low, high = min(savings), max(savings)
        figures |= {"end_to_end_saving_low": low, "end_to_end_saving_high": high}
        run = f"the run saves up to {pct(high)} or loses up to {pct(-low)}"
    else:
        said = _ends(figures, "end_to_end_saving", [abs(value) for value in savings], pct)
        run = f"the run {'saves' if saving >= 0 else 'loses'} {said}"
    return Finding(
        rule=ID,
        effect="supports",
        verdict="fund",
        figures=figures,
        message=f"Counting the work the change adds, {how}, so {ctx.target} is {_k_span(figures, derived)} end to "
        f"end, not {not_k}, and {run}.",
    )


def _ends(figures: dict[str, Figure], name: str, values: list[float], say: Callable[[float], str]) -> str:
    """A figure over a range's corners as said, `30–50 ms` (its lowest and highest put in `figures` as `name_low` and
    `name_high`), or the one value when there is one."""
    low, high = min(values), max(values)
    if low == high:
        return say(low)
    figures |= {f"{name}_low": low, f"{name}_high": high}
    return span(say(low), say(high))


def _k_span(figures: dict[str, Figure], ks: list[float]) -> str:
    """The k the figures use, end to end, over a range's corners: `1.73× faster`, `2.5–6.06× faster`,
    `0.8–0.95× as fast (slower)` (`effective_k_low` and `effective_k_high` in `figures`)."""
    low, high = min(ks), max(ks)
    if low == high or k_text(low) == k_text(high):
        return k_text(low)
    figures |= {"effective_k_low": low, "effective_k_high": None if math.isinf(high) else high}
    if math.isinf(high):
        return f"{k_text(low)} to {k_text(high)}"
    said = span(*(times(value) if value >= 100 else f"{num(value, 2)}×" for value in (low, high)))  # as k_text says it
    if low > 1:
        return f"{said} faster"
    return f"{said} as fast (slower)" if high < 1 else f"{said} as fast"
