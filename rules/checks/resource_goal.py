"""resource_goal — when the goal needs more resources, not more tuning.

What it checks: a `goal`. Memory needed above device memory is a capacity problem that speed cannot fix: redirect
(keep less resident, change the execution, or split model and state across GPUs). A latency goal below the floor
single-GPU work can reach on this breakdown (every kernel phase at the proposal's k; without a breakdown, the target
at zero) needs more GPUs: redirect; unless the breakdown's copies, host and input time is what holds the step above
the goal (the kernels at k alone fit in it), when the redirect is to that time, which more GPUs would not remove —
unless the goal needs this very change too (without it the kernels miss the goal) and it pays on its own: then info
naming the rest the goal needs. A latency goal reachable on one GPU gets the plan that reaches it, and, when
removing the copies, host and input time with this change already reaches it, that first. A throughput goal, when
the model fits one GPU, is a replica count: info with the replicas before and after, each step serving
`goal.requests_per_step` requests (one when absent: a step of batch 48 serves 48, so counting one understates a GPU
48-fold).

Why it matters: reading data quickly and having room to hold it are different problems, as are how long one request
takes and how many requests the service handles. Tuning one GPU further cannot meet a goal that needs another.

Example: attention 60 → 20 ms of a 100 ms step leaves 60 ms; with every kernel at that 3× one GPU stops at
33.3 ms, so a 30 ms goal means splitting the work across GPUs. 16 GB needed on a 12 GB device: a capacity problem.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context
from worthit.rules.errors import InvalidInput
from worthit.rules.examples import Example
from worthit.rules.findings import NON_KERNEL, kinds_fix, kinds_label
from worthit.rules.model import Figure, Finding, Phase
from worthit.rules.plans import plan
from worthit.rules.text import a, count, join, label, ms, num, pct, times

ID = "resource_goal"
STAGE = "alternative"

_SEED = [{"name": "attention", "ms": 60}, {"name": "mlp", "ms": 30}, {"name": "rest", "ms": 10}]
_BASE = {"target": "attention", "p": 0.6, "k": 3, "baseline_ms": 100, "breakdown": _SEED}

EXAMPLES = (
    Example(
        {**_BASE, "goal": {"latency_ms": 30}},
        fires=True,
        verdict="redirect",
        figures={"single_gpu_floor_ms": 33.333333, "new_ms": 60},
    ),
    Example(
        {**_BASE, "goal": {"memory_required_gb": 16, "device_memory_gb": 12}},
        fires=True,
        verdict="redirect",
        figures={"memory_shortfall_gb": 4, "gpus_for_memory": 2},
    ),
    Example(
        {**_BASE, "goal": {"throughput_per_s": 100}},
        fires=True,
        decision="fund",
        figures={"per_gpu_per_s": 16.666667, "replicas_after": 6, "replicas_before": 10},
    ),
    Example(
        {**_BASE, "goal": {"throughput_per_s": 2000, "requests_per_step": 48}},
        fires=True,
        decision="fund",
        figures={"per_gpu_per_s": 800, "replicas_after": 3, "replicas_before": 5},
    ),
    Example({**_BASE, "goal": {"latency_ms": 50}}, fires=True, decision="fund", figures={"plan_phases": 2}),
    Example({**_BASE, "goal": {"latency_ms": 60}}, fires=True, decision="fund", figures={"meets_latency": True}),
    Example(_BASE, fires=False),
)

_EPS = 1e-9  # float noise in ceil(): 100 / (1000 / 60) must be 6 replicas, not 7


def check(ctx: Context) -> Finding | None:
    """Redirects capacity problems and out-of-reach latency goals to more resources; sizes throughput goals."""
    goal = ctx.proposal.goal
    if goal is None:
        return None
    given = [
        value
        for value in (goal.latency_ms, goal.throughput_per_s, goal.memory_required_gb, goal.device_memory_gb)
        if value is not None
    ]
    if not given:
        return None
    figures: dict[str, Figure] = {}
    found: list[Finding] = []
    required, device = goal.memory_required_gb, goal.device_memory_gb
    fits = True
    memory_note: Finding | None = None
    if required is not None and device is not None:
        figures |= {"memory_required_gb": required, "device_memory_gb": device}
        # Headroom wanted comes off the device, and the proposal may itself be the capacity fix
        usable = device - (goal.memory_headroom_gb or 0.0)
        on = f"{a(num(device))} GB device" + (f" ({num(usable)} GB usable)" if goal.memory_headroom_gb else "")
        if goal.memory_headroom_gb:
            figures["usable_memory_gb"] = usable
        fit = ctx.worth.fit
        if required > usable and fit is not None and fit.fixes:
            fits = fit.gpus_after == 1
            after = goal.memory_after_gb or 0.0
            figures |= {"memory_after_gb": after, "gpus_before": fit.gpus_before, "gpus_after": fit.gpus_after}
            memory_note = Finding(
                rule=ID,
                effect="info",
                figures=dict(figures),
                message=f"The change brings the need from {num(required)} GB to {num(after)} GB on {on}, so a "
                f"replica needs {count(fit.gpus_after, 'GPU')} instead of {fit.gpus_before}: fitting is what it is "
                f"worth, not a capacity problem to redirect.",
            )
        elif fit is not None and fit.overflows:
            fits = False  # the change raises the need past the replica's devices: memory_fit declines it
        elif required > usable:
            fits = False
            gpus = math.ceil(required / usable - _EPS)
            alternative = f"{count(gpus, 'GPU')}"
            figures |= {"memory_shortfall_gb": required - usable, "gpus_for_memory": gpus, "alternative": alternative}
            still = (
                f", and after this change still {num(goal.memory_after_gb)} GB"
                if goal.memory_after_gb is not None
                else ""
            )
            found.append(
                Finding(
                    rule=ID,
                    effect="opposes",
                    verdict="redirect",
                    figures=dict(figures),  # its own copy: later findings add to `figures`
                    message=(
                        f"The chosen execution needs {num(required)} GB on {on}{still}, a capacity "
                        f"problem no speedup fixes: keep less state resident, change the execution, or split model "
                        f"and state across {alternative}."
                    ),
                )
            )
        else:
            memory_note = Finding(
                rule=ID,
                effect="info",
                figures=dict(figures),
                message=f"The {num(required)} GB the execution needs already fits on {on}, so memory is not what "
                f"decides this change.",
            )
    base, new = ctx.baseline_ms, ctx.amdahl.new_ms
    if goal.latency_ms is not None and base is not None and new is not None:
        found.append(_latency(ctx, goal.latency_ms, base, new, dict(figures)))
    if goal.throughput_per_s is not None and new is not None and base is not None and fits and new > 0:
        if not math.isfinite(goal.throughput_per_s * max(base, new)):  # the proposal checks this; a profile's p too
            raise InvalidInput(
                f"Expected `goal.throughput_per_s` small enough that the replicas it needs are a finite number, "
                f"got {goal.throughput_per_s}",
                "/goal/throughput_per_s",
            )
        batch = goal.requests_per_step or 1
        per_gpu = 1000 / new * batch
        after = math.ceil(goal.throughput_per_s / per_gpu - _EPS)
        before = math.ceil(goal.throughput_per_s * base / 1000 / batch - _EPS)
        figures |= {
            "throughput_goal_per_s": goal.throughput_per_s,
            "per_gpu_per_s": per_gpu,
            "replicas_after": after,
            "replicas_before": before,
            "requests_per_step": batch,
        }
        serving = f"{num(batch)} requests per {ms(new)} pass"
        if goal.requests_per_step is None:  # one request per pass is an assumption, said as one
            serving = f"one request per {ms(new)} pass (give `requests_per_step` for a batch)"
        elif batch == 1:
            serving = f"{ms(new)} per pass"
        found.append(
            Finding(
                rule=ID,
                effect="info",
                figures=figures,
                message=(
                    f"A throughput goal of {num(goal.throughput_per_s)} per second is a replica count, not a latency "
                    f"fix: at {serving} one GPU serves {num(per_gpu)} per second, so "
                    f"{count(after, 'replica')} {'meets' if after == 1 else 'meet'} it, against {before} before this "
                    "change."
                ),
            )
        )
    if memory_note is not None:
        found.append(memory_note)
    if not found and ctx.worth.fit is not None and ctx.worth.fit.overflows:
        return None  # the need after the change is over capacity: memory_fit's finding says so, in stage 2
    if not found:
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"None of the goal's {count(len(given), 'figure')} can be checked without the step's "
            f"time (baseline_ms or a breakdown) and both memory figures.",
        )
    rank = {"opposes": 0, "info": 1}
    best = min(found, key=lambda finding: rank.get(finding.effect, 1))
    best.figures = figures | best.figures  # every goal's figures, and the deciding one's own on top
    return best


def _latency(ctx: Context, goal: float, base: float, new: float, figures: dict[str, Figure]) -> Finding:
    """The latency goal against what single-GPU work can reach on this breakdown."""
    figures |= {
        "latency_goal_ms": goal,
        "new_ms": new,
        "meets_latency": new <= goal,
        "target_at_zero_ms": base * (1 - ctx.p),
    }
    if new <= goal:
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"This alone takes the step to {ms(new)}, inside the {ms(goal)} latency goal.",
        )
    breakdown = ctx.proposal.breakdown if ctx.proposal.breakdown_scope == "measured" else None
    # Phases summing past the step overlap (overlap_double_count asks to remeasure): no plan is made on them.
    overlapping = ctx.breakdown_ms > base * (1 + ctx.policy.breakdown_tolerance)
    if breakdown and ctx.target_phase is not None and not overlapping:
        phases = [Phase(name=p.name, ms=p.ms, kind=p.kind, k=p.k) for p in breakdown]
        # The proposal's k is what its change does to its own kind of phase; the plan speeds up kernels.
        kind = ctx.target_phase.kind if ctx.target_phase is not None else "kernel"
        own = ctx.k > 1 and kind == "kernel"
        k = ctx.k if own else ctx.policy.default_k
        result = plan(phases, target_ms=goal, k=math.inf if math.isinf(k) else k, baseline_ms=base, policy=ctx.policy)
        floor = result.best_ms
        figures |= {
            "single_gpu_floor_ms": floor,
            "plan_phases": len(result.steps) if result.reachable else None,
            "plan_k": k,
            "plan_k_source": "proposal" if own else "policy",
        }
        # the policy's default k, when the proposal's own is no kernel speedup, is said to be the policy's
        faster = f"{times(k)} faster" + ("" if own else " (the policy's default k)")
        non_kernel = sum(phase.ms for phase in breakdown if phase.kind in NON_KERNEL)
        present = [phase.kind for phase in breakdown if phase.kind in NON_KERNEL and phase.ms > 0]
        kinds = kinds_label(present) if present else ""
        kernel_floor = floor - non_kernel
        if not result.reachable and non_kernel >= goal:
            figures |= {"non_kernel_ms": non_kernel, "alternative": kinds}
            above = "is above" if non_kernel > goal else "fills"
            return _redirect(
                figures,
                f"The {ms(non_kernel)} of {kinds} alone {above} the {ms(goal)} latency goal, so neither faster "
                f"kernels nor more GPUs reach it until that time is overlapped or removed ({kinds_fix(present)}).",
            )
        if not result.reachable and non_kernel > 0 and kernel_floor <= goal:
            # The kernels at k fit in the goal; what keeps the step above it is time more GPUs would not remove.
            figures |= {"non_kernel_ms": non_kernel, "kernel_floor_ms": kernel_floor}
            target_ms = ctx.target_phase.ms
            without = kernel_floor + target_ms - target_ms / k if kind == "kernel" and own else kernel_floor
            if without > goal and ctx.worth.clears:
                # The goal needs this change too (without it the kernels take `without`): not a redirect away from
                # work the goal itself counts on, but the rest it needs, said beside it.
                figures["kernel_floor_without_ms"] = without
                return Finding(
                    rule=ID,
                    effect="info",
                    figures=figures,
                    message=f"This takes the step to {ms(new)}, short of the {ms(goal)} latency goal, which one GPU "
                    f"reaches only with every kernel {faster}, this one included, and the {ms(non_kernel)} of "
                    f"{kinds} off the step's path: {ms(kernel_floor)}.",
                )
            figures["alternative"] = kinds
            return _redirect(
                figures,
                f"Even with every kernel {faster} this step stops at {ms(floor)}, above the {ms(goal)} "
                f"latency goal, and {ms(non_kernel)} of that is {kinds}, which more GPUs would not remove: "
                f"overlap or remove it, and the kernels alone take {ms(kernel_floor)} on one GPU.",
            )
        if not result.reachable:
            figures["alternative"] = "more GPUs"
            return _redirect(
                figures,
                f"Even with every kernel {faster} this step stops at {ms(floor)} on one GPU, above "
                f"the {ms(goal)} latency goal, so reaching it takes more GPUs splitting the work, not more "
                f"tuning here.",
            )
        names = join([label(step.phase) for step in result.steps])
        each = " each" if len(result.steps) > 1 else ""
        if non_kernel > 0 and new - non_kernel <= goal and len(result.steps) > 1:
            # Removing the time no kernel speedup touches reaches the goal with this change alone: say so first.
            figures |= {"non_kernel_ms": non_kernel, "without_non_kernel_ms": new - non_kernel}
            return Finding(
                rule=ID,
                effect="info",
                figures=figures,
                message=f"This takes the step to {ms(new)}, short of the {ms(goal)} latency goal; removing the "
                f"{ms(non_kernel)} of {kinds} as well reaches {ms(new - non_kernel)}, where kernel tuning alone "
                f"needs {names}{each} {faster}.",
            )
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"This takes the step to {ms(new)}, short of the {ms(goal)} latency goal, which one "
            f"GPU reaches with {names}{each} {faster}.",
        )
    floor = base * (1 - ctx.p)
    figures["single_gpu_floor_ms"] = floor
    if floor > goal:
        figures["alternative"] = "more GPUs"
        return _redirect(
            figures,
            f"Even removing {ctx.target} leaves {ms(floor)}, above the {ms(goal)} latency goal, so reaching "
            f"it takes more GPUs splitting the work, not more tuning of {pct(ctx.p)} of the step.",
        )
    return Finding(
        rule=ID,
        effect="info",
        figures=figures,
        message=f"This takes the step to {ms(new)}, short of the {ms(goal)} latency goal; other phases "
        f"must give the remaining {ms(new - goal)}.",
    )


def _redirect(figures: dict[str, Figure], message: str) -> Finding:
    """The goal is out of reach of this work: redirect to what `figures["alternative"]` names."""
    return Finding(rule=ID, effect="opposes", verdict="redirect", figures=figures, message=message)
