"""memory_fit — a change that brings the memory a replica needs under the device's is worth the devices it frees.

What it checks: `goal.memory_after_gb` beside `goal.memory_required_gb` (the need before) and `goal.device_memory_gb`
(less `goal.memory_headroom_gb`, the headroom wanted). A replica needs ⌈need ÷ usable memory⌉ devices; when the
change lowers that count (a quantized KV cache, activation recompute, a memory-lean attention kernel), the share of
the devices it frees, 1 − after ÷ before, is the change's value together with any step saving: 1 − (1 − memory) ·
(1 − saving) of the capacity (rules.worth), on a fleet priced as freed GPU-equivalents. It supports funding when
that pays for the work, and opposes when it does not. When the need already fits before the change, memory decides
nothing: info, and the change is judged on its time. Memory is read both ways: when the change raises the need past
the devices a replica holds (activation recompute turned off, a doubled batch, a longer KV cache), it does not run
as measured: decline, whatever its speed, naming the variant that fits.

Why it matters: "16 GB needed on a 12 GB device" is a capacity problem no speedup fixes, unless the proposal is the
change that lowers the need; then redirecting it to "add GPUs" is exactly wrong, and what fitting frees is the
figure to fund it on.

Example: a serving step needs 180 GB on 141 GB GPUs (2 per replica); an FP8 KV cache brings it to 120 GB (1 per
replica): half the GPUs that serve it are freed, on 400 GPUs 200 GPU-equivalents: fund.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import carried, engineering, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import a, count, gpu_equivalents, num, pct, usd, weeks

ID = "memory_fit"
STAGE = "worth"

_KV = {"memory_required_gb": 180, "memory_after_gb": 120, "device_memory_gb": 141}

EXAMPLES = (
    Example(
        {"target": "kv_cache", "p": 0.3, "k": 1.05, "cost_weeks": 4, "flags": {"fleet_gpus": 400}, "goal": _KV},
        fires=True,
        verdict="fund",
        figures={"gpus_before": 2, "gpus_after": 1, "memory_saving": 0.5, "gpu_equivalents": 202.857},
    ),
    Example(
        {"target": "kv_cache", "p": 0.3, "k": 1.05, "cost_weeks": 4, "goal": _KV | {"memory_headroom_gb": 25}},
        fires=True,
        decision="redirect",
        figures={"gpus_before": 2, "gpus_after": 2},
    ),
    Example(
        {"target": "kv_cache", "p": 0.3, "k": 1.5, "cost_weeks": 4}
        | {"goal": {"memory_required_gb": 100, "memory_after_gb": 70, "device_memory_gb": 141}},
        fires=True,
        decision="fund",
        figures={"memory_saving": 0},
    ),
    Example(
        # on 8 GPUs the half it frees, with the 1.4% faster step, is 8 × (1 - 0.5 × (1 - 0.3 × (1 - 1/1.05))) = 4.06
        # GPU-equivalents, $71k over a year at $2 an hour: less than 40 engineer-weeks at $5k
        {"target": "kv_cache", "p": 0.3, "k": 1.05, "cost_weeks": 40, "flags": {"fleet_gpus": 8}, "goal": _KV},
        fires=True,
        verdict="decline",
        figures={"gpu_equivalents": 4.05714, "value_usd": 71081.1, "engineering_cost_usd": 200_000},
    ),
    Example(
        # recompute off: 48 GB → 86 GB on an 80 GB device with 10 GB kept free, 16 GB over the 70 GB usable
        {"target": "recompute", "p": 0.25, "k": "inf", "cost_weeks": 1, "flags": {"fleet_gpus": 512}}
        | {"goal": {"memory_required_gb": 48, "memory_after_gb": 86, "device_memory_gb": 80, "memory_headroom_gb": 10}},
        fires=True,
        verdict="decline",
        figures={"gpus_before": 1, "gpus_after": 2, "memory_over_gb": 16, "memory_room_gb": 70},
    ),
    Example({"target": "kv_cache", "p": 0.3, "k": 1.05, "cost_weeks": 4}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Values a change that lowers the devices a replica needs by the share of devices it frees."""
    goal, worth = ctx.proposal.goal, ctx.worth
    fit = worth.fit
    if goal is None or fit is None:
        return None
    money = worth.money
    if ctx.verdict_only and not fit.overflows and (fit.gpus_before == 1 or not fit.fixes or worth.clears):
        return None  # it informs or supports funding
    before, after = goal.memory_required_gb or 0.0, goal.memory_after_gb or 0.0
    figures: dict[str, Figure] = {
        "memory_required_gb": before,
        "memory_after_gb": after,
        "usable_memory_gb": fit.usable_gb,
        "gpus_before": fit.gpus_before,
        "gpus_after": fit.gpus_after,
        "memory_saving": fit.saving,
    }
    device = f"{a(num(goal.device_memory_gb or 0.0))} GB device" + (
        f" ({num(fit.usable_gb)} GB usable)" if goal.memory_headroom_gb else ""
    )
    if fit.overflows:
        return _overflow(ctx, before, after, figures)
    if fit.gpus_before == 1:
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"The {num(before)} GB needed already fits on {device}, so the {num(before - after)} GB freed "
            f"is not what this change is worth: it is judged on its time.",
        )
    if not fit.fixes:
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"From {num(before)} GB to {num(after)} GB a replica still needs {count(fit.gpus_after, 'GPU')} "
            f"of {device}, so the memory saved frees no device.",
        )
    capacity = worth.capacity_saving or 0.0
    figures["capacity_saving"] = capacity
    head = (
        f"Bringing the need from {num(before)} GB to {num(after)} GB fits a replica on "
        f"{count(fit.gpus_after, 'GPU')} of {device} instead of {fit.gpus_before}, freeing {pct(fit.saving)} of the "
        f"GPUs that serve it{_with_step(ctx.run_saving, capacity)}"
    )
    if money is not None:
        figures |= {"gpu_equivalents": money.gpus, "value_usd": money.value_usd, "engineering_cost_usd": money.cost_usd}
        value = f"{gpu_equivalents(money.gpus)} on {count(ctx.proposal.flags.fleet_gpus or 0, 'GPU')}"
        span = (
            f"the {num(money.job_days)}-day job"
            if money.job_days is not None
            else f"{num(ctx.policy.horizon_months)} months"
        )
        if money.clears:
            return Finding(
                rule=ID,
                effect="supports",
                verdict="fund",
                figures=figures,
                message=f"{head}: {value}, {usd(money.value_usd)} over {span} {engineering(ctx, money, figures)}.",
            )
        short = f"{head}, but {value} is worth less than its {usd(money.cost_usd)}"
        if worth.clears:  # a credible strategic workload pays for it per run (rules.worth)
            return carried(ctx, ID, figures, f"{short}, which the strategic workload carries.")
        return opposition(ctx, ID, short, figures)
    if worth.clears:
        cost = worth.cost.weeks
        spent = f" for {weeks(cost)}" if cost else ""
        return Finding(
            rule=ID,
            effect="supports",
            verdict="fund",
            figures=figures,
            message=f"{head}{spent}.",
        )
    rate = worth.cost.weeks
    figures["cost_weeks"] = rate
    return opposition(ctx, ID, f"{head}, too little for {weeks(rate or 0.0)} of work", figures)


def _overflow(ctx: Context, before: float, after: float, figures: dict[str, Figure]) -> Finding:
    """The need after the change is over what the replica's devices hold: the change does not run as measured, so
    its speed is worth nothing; the change that fits is one that keeps the need under that."""
    fit = ctx.worth.fit
    gpus = fit.gpus_before if fit is not None else 1
    room = (fit.usable_gb if fit is not None else 0.0) * gpus
    figures |= {"memory_over_gb": after - room, "memory_room_gb": room}
    holds = "a device can use" if gpus == 1 else f"the replica's {count(gpus, 'GPU')} can use"
    speed = f", whatever the {pct(ctx.run_saving)} it would save" if ctx.run_saving > 0 else ""
    head = (
        f"The change raises the need from {num(before)} GB to {num(after)} GB, {num(after - room)} GB over the "
        f"{num(room)} GB {holds}, so it does not run{speed}"
    )
    fits = (
        f"what fits is a variant that stays under {num(room)} GB (keep less of it resident, recompute rather than "
        "store, a smaller batch)"
    )
    return opposition(ctx, ID, head, figures, alone=f"{head}; {fits}.")


def _with_step(saving: float, capacity: float) -> str:
    """The step's own change, said beside the devices freed, so the share of capacity a fleet is priced on adds up:
    `, 50.7% of capacity with a 1.4% shorter step` or `, 48.6% of capacity net of a 2.8% longer step` (a slower
    kernel, as a compressed KV cache may be); nothing when the step does not change."""
    if saving > 0:
        return f", {pct(capacity)} of capacity with a {pct(saving)} shorter step"
    if saving < 0:
        return f", {pct(capacity)} of capacity net of a {pct(-saving)} longer step"
    return ""
