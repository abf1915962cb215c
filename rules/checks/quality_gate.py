"""quality_gate — a change that fails its quality gate does not ship, whatever it saves.

What it checks: `quality`: the metric's baseline and the candidate's value, and the largest regression the launch
gate allows (`max_regression`, in the metric's units; `higher_is_better` false for perplexity or error rates). The
regression is baseline − candidate (candidate − baseline when lower is better). Within the gate, the gate itself
included (a regression equal to `max_regression` is allowed): info. Beyond it, the gate decides at the worth stage,
whatever the money: when the work pays for itself (rules.worth) it funds only on the condition that the metric
recovers to the gate's edge (calibration, mixed precision on the sensitive layers, quantization-aware training),
says how far it must come back and what the work is worth on the basis it was priced on (a fleet's capacity, the
devices a memory fix frees, a strategic workload); when it does not pay either, decline. Metric values are written
with the digits they were given in (an AUC of 0.812, not 0.81).

Why it matters: an INT8 or FP8 change that is 1.5× faster but loses more accuracy than the launch gate allows cannot
ship, and a fleet's money does not buy it a waiver. The review must say what has to recover, by how much.

Example: FP8 GEMMs 1.5× faster on 2,000 GPUs, accuracy 76.0 → 75.1 against a 0.3-point gate: 0.9 points lost,
three times the gate; fund only if accuracy recovers to at least 75.7.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure
from worthit.rules.wording import Draft, opposed, same_printed

ID = "quality_gate"
STAGE = "worth"

_GATE = {"metric": "accuracy", "baseline": 76.0, "candidate": 75.1, "max_regression": 0.3}

EXAMPLES = (
    Example(
        {"target": "gemm", "p": 0.5, "k": 1.5, "cost_weeks": 3, "flags": {"fleet_gpus": 2000}, "quality": _GATE},
        fires=True,
        verdict="fund_if",
        figures={"regression": 0.9, "recover_to": 75.7},
    ),
    Example(
        {"target": "gemm", "p": 0.02, "k": 1.5, "cost_weeks": 3, "quality": _GATE},
        fires=True,
        verdict="decline",
        figures={"regression": 0.9},
    ),
    Example(
        {"target": "gemm", "p": 0.5, "k": 1.5, "cost_weeks": 3, "quality": _GATE | {"candidate": 75.8}},
        fires=True,
        decision="fund",
        figures={"regression": 0.2},
    ),
    Example({"target": "gemm", "p": 0.5, "k": 1.5, "cost_weeks": 3}, fires=False),
)


INSIDE = " ({metric_baseline:metric} → {metric_candidate:metric}), inside the {max_regression:metric}-point gate."
LOSES = "{metric:label} loses {regression:points}"
GAINS = "{metric:label} gains {regression:-points}"
LOST = (
    "{metric:label} {worse} {regression:points} ({metric_baseline:metric} → {metric_candidate:metric}) against a "
    "{max_regression:metric}-point gate"
)
RECOVER = "Fund only if {metric:label} recovers to {bound} {recover_to:metric}: "
CANNOT_SHIP = ", so the change cannot ship as built, whatever "
FAILS = "The change fails its quality gate ("
AND = "), and "
JOB_VALUE = "the {value_usd:usd} of capacity it frees over the {job_days:num}-day job"
HORIZON_VALUE = "the {value_usd:usd} of capacity it frees over {horizon_months:num} months"
MEMORY_VALUE = "the {capacity_saving:pct} of capacity it frees by fitting on fewer GPUs"
STRATEGIC_VALUE = "the {strategic_saving:pct} it saves on {model:label}"
RANGE_VALUE = "the {saving_fraction_low:span_pct(saving_fraction_high)} it saves"
RUN_VALUE = "the {end_to_end_saving:pct} it saves"
DOES_NOT_PAY = "the {value_usd:usd} of capacity it frees does not pay for its {engineering_cost_usd:usd} either"
NO_TIME = "it saves no time either"
SAVING_DOES_NOT_PAY = "its {end_to_end_saving:pct} saving does not pay either"


def check(ctx: Context) -> Draft | None:
    """Holds the change to its quality gate: beyond it, fund only on recovery, or decline when it does not pay."""
    gate = ctx.proposal.quality
    if gate is None:
        return None
    sign = 1.0 if gate.higher_is_better else -1.0
    regression = sign * (gate.baseline - gate.candidate)
    edge = gate.baseline - sign * gate.max_regression
    figures: dict[str, Figure] = {
        "metric_baseline": gate.baseline,
        "metric_candidate": gate.candidate,
        "regression": regression,
        "max_regression": gate.max_regression,
        "recover_to": edge,
    }
    words = {"metric": gate.metric}
    # A regression equal to the gate is allowed ("the largest regression allowed"): 0.812 − 0.809 is
    # 0.0030000000000000027 in floats, which must not fail a 0.003 gate. The slack is the subtraction's rounding.
    slack = _ROUNDING * math.ulp(max(abs(gate.baseline), abs(gate.candidate), gate.max_regression))
    if regression <= gate.max_regression + slack:
        return Draft(ID, "info", (LOSES if regression > 0 else GAINS, INSIDE), figures, words)
    words["worse"] = "falls" if gate.higher_is_better else "rises"
    words["bound"] = "at least" if gate.higher_is_better else "at most"
    if ctx.worth.clears:
        template = (RECOVER, LOST, CANNOT_SHIP, _value(ctx, figures, words), ".")
        return Draft(ID, "condition", template, figures, words)
    return opposed(ctx, ID, (FAILS, LOST, AND, _short(ctx, figures)), figures, words)


_ROUNDING = 8
"""Units in the last place a regression computed from two metric values may be off by (float noise, not a bar)."""


def _value(ctx: Context, figures: dict[str, Figure], words: dict[str, str]) -> str:
    """What the work is worth, as the worth stage prices it (rules.worth): the capacity a fleet or a job gets back,
    the capacity a memory fix frees, the strategic workload's saving, else the run's saving."""
    worth = ctx.worth
    money = worth.money
    if money is not None and worth.basis in ("fleet", "job"):
        figures["value_usd"] = money.value_usd
        if money.job_days is not None:
            figures["job_days"] = money.job_days
            return JOB_VALUE
        figures["horizon_months"] = ctx.policy.horizon_months
        return HORIZON_VALUE
    if worth.basis == "memory" and worth.capacity_saving is not None:
        figures["capacity_saving"] = worth.capacity_saving
        return MEMORY_VALUE
    strategic = ctx.proposal.flags.strategic
    if worth.basis == "strategic" and strategic is not None and worth.strategic_saving is not None:
        figures["strategic_saving"] = worth.strategic_saving
        words["model"] = strategic.model
        return STRATEGIC_VALUE
    ends = ctx.range_ends
    if ends is not None and ctx.mix is None and ctx.p_run == ctx.p:
        # a range is quoted from end to end, never at its midpoint (which is one point of it)
        low, high = ends[0].saving_fraction, ends[1].saving_fraction
        figures |= {"saving_fraction_low": low, "saving_fraction_high": high}
        if not same_printed("pct", low, high):
            return RANGE_VALUE
    figures["end_to_end_saving"] = ctx.run_saving
    return RUN_VALUE


def _short(ctx: Context, figures: dict[str, Figure]) -> str:
    """Why the work does not pay either, in the figure the worth stage weighed."""
    money = ctx.worth.money
    if money is not None:
        figures |= {"value_usd": money.value_usd, "engineering_cost_usd": money.cost_usd}
        return DOES_NOT_PAY
    saving = ctx.run_saving
    figures["end_to_end_saving"] = saving
    if saving <= 0:
        return NO_TIME
    return SAVING_DOES_NOT_PAY
