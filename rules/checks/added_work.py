"""added_work — k end to end: the work a change adds is paid out of what it saves.

What it checks: `added_work`. Each added phase (a dequantize, an extra copy, a second kernel) adds its ms to the
target's new time: the target's time T = p × the scope's time becomes T/k + added, so the k every figure uses is
T / (T/k + added). Speculative decoding is stated as teams state it: γ = `draft_tokens` drafted per verify pass,
α = `acceptance` per drafted token, one draft step costing `draft_cost` and one verify pass `verify_cost` plain
decode steps. A verify pass then yields on average (1 − α^(γ+1)) / (1 − α) tokens (γ + 1 at α = 1) for
γ·draft_cost + verify_cost steps' time, so decode's k is

    k = [(1 − α^(γ+1)) / (1 − α)] / (γ·draft_cost + verify_cost)

in place of the "tokens per verify pass" often quoted as the speedup. Supports funding at that k (the other stages
judge it there); opposes when the added work leaves the target no faster.

Why it matters: a change that adds work is never as fast as its best kernel. "2.2× decode" counted in tokens per
verify pass forgets the draft model and the longer verify pass; a 2× INT8 GEMM forgets the dequantize beside it.

Example: γ = 4, α = 0.7, draft steps at 0.1 and the verify pass at 1.2 plain steps: 2.77 tokens per pass for
1.6 steps, 1.73×, not 2.77×. A 40 ms GEMM made 2× faster with a 5 ms dequantize added is 1.6× end to end.
"""

from __future__ import annotations

import math

from worthit.rules import amdahl
from worthit.rules.context import Context, Example, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import join, k_text, label, ms, num, pct, times

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
        parts.append(f"the {ms(extra)} of {names} it adds comes out of {ctx.target}'s {ms(base * ctx.p)}")
    how = "; ".join(parts) if parts else "it adds no time"
    if k <= 1:
        head = f"Counting the work the change adds, {how}, so {ctx.target} ends up {k_text(k)}, not {times(stated)}"
        return opposition(ctx, ID, head, figures, then="is where the effort belongs")
    saving = ctx.run_saving
    figures["end_to_end_saving"] = saving
    return Finding(
        rule=ID,
        effect="supports",
        verdict="fund",
        figures=figures,
        message=f"Counting the work the change adds, {how}, so {ctx.target} is {k_text(k)} end to end, not "
        f"{times(stated)}, and the run {'saves' if saving >= 0 else 'loses'} {pct(abs(saving))}.",
    )
