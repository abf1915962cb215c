"""noise_floor — a saving below the noise floor is a rounding error.

What it checks: the end-to-end saving, p_end_to_end · (1 − 1/k) when the target's share of the whole run is
known (else p · (1 − 1/k)), against the policy's `noise_floor` (default 1% of the step).

Where the value on a fleet or a job carries it, the condition is a fleet A/B; with p or k a range it quotes the
saving and what the fleet gets back at the range's ends, never at its midpoint.

Why it matters: a saving smaller than run-to-run noise cannot be seen, let alone sold; the effort belongs to the
largest thing in the breakdown, which the statement names where one is known: one phase, or the allocation,
copies and host gaps taken together.

Example: a kernel that is 0.014% of the profiled run, made infinitely fast, saves 0.014%: decline, or redirect to
the allocation and copies that take 85% of the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import carried, condition, engineering, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import a, count, gpu_count, gpu_equivalents, num, pct, times, usd
from worthit.rules.text import span as span_of

ID = "noise_floor"
STAGE = "worth"

EXAMPLES = (
    Example(
        {"target": "k", "p": 0.012, "k": 10, "p_end_to_end": 0.00014},
        fires=True,
        verdict="decline",
        figures={"end_to_end_saving": 0.000126},
    ),
    Example(
        {
            "target": "small",
            "p": 0.005,
            "k": 10,
            "baseline_ms": 100,
            "breakdown": [
                {"name": "small", "ms": 0.5},
                {"name": "copy", "ms": 60, "kind": "copy"},
                {"name": "gemm", "ms": 39.5},
            ],
        },
        fires=True,
        verdict="redirect",
        figures={"end_to_end_saving": 0.0045, "alternative_share": 0.6},
    ),
    Example(
        {"target": "slower", "p": 0.3, "k": 0.5}, fires=True, verdict="decline", figures={"end_to_end_saving": -0.3}
    ),
    Example({"p": 0.21, "k": 10}, fires=False),
    Example({"p": 0.012, "k": 10}, fires=False, policy={"noise_floor": 0.005}),
)


def check(ctx: Context) -> Finding | None:
    """Opposes a proposal whose end-to-end saving is below the policy's noise floor."""
    saving = ctx.run_saving
    floor = ctx.policy.noise_floor
    if saving >= floor:
        return None
    figures: dict[str, Figure] = {"end_to_end_saving": saving, "noise_floor": floor}
    worth = ctx.worth
    capacity = worth.capacity_saving
    if worth.clears and capacity is not None and capacity >= floor:
        # a memory fix (memory_fit): the value rests on the devices it frees, not on a per-run time saving to A/B
        figures["capacity_saving"] = capacity
        return carried(
            ctx,
            ID,
            figures,
            f"{pct(saving)} of time per run is under the {pct(floor)} noise floor, but the {pct(capacity)} of the "
            "capacity it frees by fitting on fewer GPUs is what the work is worth",
        )
    if worth.clears and worth.money is not None and worth.basis in ("fleet", "job"):
        money = worth.money
        figures |= {"gpu_equivalents": money.gpus, "value_usd": money.value_usd, "engineering_cost_usd": money.cost_usd}
        span = f"over the {num(money.job_days)}-day job" if money.job_days is not None else "a year"
        fleet = count(ctx.proposal.flags.fleet_gpus or 0, "GPU")
        against = engineering(ctx, money, figures)
        ends = _fleet_ends(ctx, figures)
        if ends is not None:
            # a range: its ends' figures, never the midpoint's (a p nobody proposed); from where the value pays is the
            # range's break-even, the uncertainty condition's
            low, high, freed, value = ends
            under = f"is under the {pct(floor)} noise floor"
            if high >= floor:
                under += " over part of the range"
            message = (
                f"Fund, and confirm the saving in a fleet A/B: {span_of(pct(low), pct(high))} per run {under}, too "
                f"small for one run to show, but on {fleet} it frees {freed}, {value} {span} {against}"
            )
            return condition(ID, figures, message, stage="condition")
        value = usd(money.value_usd if money.job_days is not None else money.annual_usd or 0.0)
        return condition(
            ID,
            figures,
            (
                f"Fund, and confirm the saving in a fleet A/B: {pct(saving)} per run is under the {pct(floor)} noise "
                f"floor, too small for one run to show, but on {fleet} it frees {gpu_equivalents(money.gpus)}, "
                f"{value} {span} {against}"
            ),
            stage="condition",
        )
    if worth.clears and saving < 0:
        # a slowdown bought something (an SLO met, capacity under a power limit): there is no saving to see
        return carried(
            ctx,
            ID,
            figures,
            f"{a(pct(-saving)).capitalize()} slower step saves nothing per run; what it buys is what it is worth",
        )
    if worth.clears:
        return carried(
            ctx,
            ID,
            figures,
            f"{pct(saving)} end to end is under the {pct(floor)} noise floor per run, which the value of the "
            "work carries",
        )
    if saving < 0 and ctx.stated_k is not None:
        # the work the change adds (a draft model, a dequantize) is why: said, against the k the proposal states; a
        # range from its lowest corner to its highest, never at the midpoint, which nobody proposed
        figures |= {"stated_k": ctx.stated_k, "effective_k": ctx.k}
        corners = None if ctx.verdict_only else ctx.corners
        points = list(corners.values()) if corners is not None else [ctx]
        derived = _ends(figures, "effective_k", [point.k for point in points], times)
        stated = _ends(figures, "stated_k", [point.given_k for point in points], times)
        longer = _ends(figures, "end_to_end_loss", [-point.run_saving for point in points], pct)
        head = (
            f"Counting the work it adds, {ctx.target} ends up {derived} as fast, not the {stated} stated, and the "
            f"run {longer} longer, so there is nothing to win"
        )
    elif saving < 0:
        head = (
            f"At {times(ctx.k)} {ctx.target} gets slower and the run {pct(-saving)} longer, so there is nothing to win"
        )
    elif saving == 0:
        head = f"A {times(ctx.k)} speedup of {ctx.target} leaves the run as it is (0% saved)"
    else:
        verb = "removing" if math.isinf(ctx.k) else "speeding up"
        head = (
            f"Even {verb} {ctx.target} saves {pct(saving)} end to end, "
            f"a rounding error below the {pct(floor)} noise floor"
        )
    return opposition(ctx, ID, head, figures)


def _fleet_ends(ctx: Context, figures: dict[str, Figure]) -> tuple[float, float, str, str] | None:
    """With p or k a range, the run's saving at the range's lowest and highest corner and what the fleet gets back
    there (`0.5–3 GPU-equivalents`, `$8,760–$53k`), each put in `figures`; None for single values, or where a corner
    has no money (a job of unstated length)."""
    corners = None if ctx.verdict_only else ctx.corners
    if corners is None:
        return None
    ordered = sorted(corners.values(), key=lambda corner: corner.run_saving)
    low, high = ordered[0], ordered[-1]
    money_low, money_high = low.worth.money, high.worth.money
    if money_low is None or money_high is None:
        return None
    job = money_high.job_days is not None
    value_low, value_high = (
        (money_low.value_usd, money_high.value_usd)
        if job
        else (money_low.annual_usd or 0.0, money_high.annual_usd or 0.0)
    )
    name = "value_usd" if job else "annual_value_usd"
    figures |= {
        "end_to_end_saving_low": low.run_saving,
        "end_to_end_saving_high": high.run_saving,
        "gpu_equivalents_low": money_low.gpus,
        "gpu_equivalents_high": money_high.gpus,
        f"{name}_low": value_low,
        f"{name}_high": value_high,
    }
    freed = gpu_equivalents(money_high.gpus)
    if gpu_count(money_low.gpus) != gpu_count(money_high.gpus):
        freed = f"{gpu_count(money_low.gpus)}–{gpu_count(money_high.gpus)} GPU-equivalents"
    return low.run_saving, high.run_saving, freed, span_of(usd(value_low), usd(value_high))


def _ends(figures: dict[str, Figure], name: str, values: list[float], say: Callable[[float], str]) -> str:
    """A figure over a range's corners as said, `0.536–0.909×` (its lowest and highest put in `figures` as
    `name_low` and `name_high`), or the one value."""
    low, high = min(values), max(values)
    if say(low) == say(high):
        return say(low)
    figures |= {f"{name}_low": low, f"{name}_high": high}
    return span_of(say(low), say(high))
