"""Plans: the fewest phases of a breakdown to speed up to reach a target, and the ceilings (PRODUCT §8, POST /v1/plans).

Savings on disjoint phases add in ms; speedups never multiply. Taking the largest saving first gives the fewest
phases for any target (the n largest savings are the largest sum n phases can reach), which for one k for all
phases is largest ms first, the seed's "rank targets by p first".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated

import msgspec
from msgspec import Meta

from worthit.rules import amdahl
from worthit.rules.errors import InvalidInput
from worthit.rules.model import Base, Infinite, Milliseconds, Phase, PhaseKind, PositiveFloat
from worthit.rules.policy import Policy, default_policy
from worthit.rules.precision import settled
from worthit.rules.text import join, label, ms, sentence, times

__all__ = ["KSpec", "Leftover", "Plan", "PlanCeiling", "PlanOption", "PlanRequest", "PlanStep", "plan", "plan_for"]

KSpec = float | Infinite | Mapping[str, float | Infinite]


class PlanStep(msgspec.Struct, kw_only=True):
    """One phase sped up, and where the scope's time stands after it (a running total, never a product)."""

    step: int
    phase: str
    kind: PhaseKind
    ms: float
    k: float | Infinite
    saving_ms: float
    new_ms: float
    speedup: float | None
    """Baseline over `new_ms`; `None` when nothing is left (unbounded)."""
    reached: bool
    bottleneck: str | None
    """The largest phase after this step: the bottleneck moves as phases get faster."""
    bottleneck_share: float | None


class PlanOption(msgspec.Struct, kw_only=True):
    """A phase that would complete the last step instead, and the result it gives."""

    phase: str
    kind: PhaseKind
    ms: float
    k: float | Infinite
    saving_ms: float
    new_ms: float
    speedup: float | None


class PlanCeiling(msgspec.Struct, kw_only=True):
    """The scope's time with every phase of the plannable kinds at its k (or at zero)."""

    new_ms: float
    speedup: float | None
    saving_ms: float


class Leftover(msgspec.Struct, kw_only=True):
    """Time no kernel speedup touches: copies, host gaps, allocation, or time the breakdown does not account for."""

    name: str
    kind: PhaseKind | None
    """`None` for time the breakdown leaves unaccounted (baseline minus the phases)."""
    ms: float
    share: float


class Plan(msgspec.Struct, kw_only=True):
    """The answer of `plan()`: steps, the alternatives for the last step, the ceilings and what is left."""

    baseline_ms: float
    target_ms: float
    target_speedup: float | None
    k: float | Infinite
    """The default k (phases may carry their own)."""
    kinds: list[PhaseKind]
    reachable: bool
    steps: list[PlanStep]
    last_step_options: list[PlanOption]
    """Every phase that would complete the last step on its own, largest saving first (the greedy pick included)."""
    best_ms: float
    best_speedup: float | None
    k_needed: float | Infinite | None = None
    """When the target is out of reach at the k given: the one k, on every phase of the plannable kinds at once, that
    reaches it (`"inf"`: only removing them all does). None when the plan reaches the target as given, and when no k
    does (the target is below `all_at_zero`)."""
    all_at_k: PlanCeiling
    all_at_zero: PlanCeiling
    left: list[Leftover]
    left_ms: float
    message: str


def _ratio(baseline: float, new: float) -> float | None:
    return None if new <= 0 else baseline / new


def _k_figure(k: float) -> float | Infinite:
    return "inf" if math.isinf(k) else k


def _resolve_k(value: float | str | None, where: str) -> float | None:
    if value is None:
        return None
    if value == "inf":
        return math.inf
    if isinstance(value, str) or not value > 0:
        raise InvalidInput(f'Expected `k` > 0 or "inf", got {value!r}', where)
    return float(value)


def plan(
    breakdown: Sequence[Phase],
    *,
    target_speedup: float | None = None,
    target_ms: float | None = None,
    k: KSpec | None = None,
    kinds: Sequence[PhaseKind] = ("kernel",),
    baseline_ms: float | None = None,
    policy: Policy | None = None,
) -> Plan:
    """The fewest phases to speed up to reach `target_speedup` (or `target_ms`), with the ceilings.

    `k` is one speedup for every phase, or a mapping of phase name to speedup; a phase's own `k` comes next, then
    the policy's `default_k`. Only phases whose kind is in `kinds` are sped up; the rest is what is left.
    `baseline_ms` defaults to the breakdown's sum; when larger, the difference is left as unaccounted time.
    An unreachable target gives every plannable phase as steps, `reachable=False` and the best achievable.
    """
    policy = policy or default_policy()
    if (target_speedup is None) == (target_ms is None):
        raise InvalidInput("Expected exactly one of `target_speedup` and `target_ms`", "/target_speedup")
    if target_speedup is not None and not (target_speedup > 0 and math.isfinite(target_speedup)):
        raise InvalidInput(f"Expected `target_speedup` > 0, got {target_speedup}", "/target_speedup")
    if target_ms is not None and not (target_ms >= 0 and math.isfinite(target_ms)):
        raise InvalidInput(f"Expected `target_ms` >= 0, got {target_ms}", "/target_ms")
    if not breakdown:
        raise InvalidInput("Expected a `breakdown` with at least one phase", "/breakdown")
    names = [phase.name for phase in breakdown]
    if len(set(names)) != len(names):
        raise InvalidInput("Expected unique phase names in `breakdown`", "/breakdown")

    per_phase: Mapping[str, float | Infinite] = k if isinstance(k, Mapping) else {}
    default_k = _resolve_k(k, "/k") if not isinstance(k, Mapping) else None
    if default_k is None:
        default_k = policy.default_k

    def k_of(phase: Phase, index: int) -> float:
        given = per_phase.get(phase.name, phase.k)
        resolved = _resolve_k(given, f"/breakdown/{index}/k")
        return default_k if resolved is None else resolved

    summed = sum(phase.ms for phase in breakdown)
    total = summed if baseline_ms is None else baseline_ms
    if not total > 0:
        raise InvalidInput(f"Expected the breakdown to take some time, got {total} ms", "/breakdown")
    if summed > total * (1 + policy.breakdown_tolerance):
        # Phases that overlap in time double count when summed: every step and ceiling would be off by the excess.
        raise InvalidInput(
            f"Expected phases that fit in `baseline_ms`: they sum to {ms(summed)}, more than its {ms(total)}, so "
            "some overlap and would be counted twice; give each phase's time on the start-to-completion timeline",
            "/breakdown",
        )
    goal = target_ms if target_ms is not None else total / (target_speedup or 1.0)
    slack = 1e-9 * total  # float noise only: 100 - 50 must count as reaching 50

    ks = {phase.name: k_of(phase, i) for i, phase in enumerate(breakdown)}
    saving = {phase.name: amdahl.saving_fraction(1.0, ks[phase.name]) * phase.ms for phase in breakdown}
    eligible = [phase for phase in breakdown if phase.kind in kinds and saving[phase.name] > 0]
    order = sorted(eligible, key=lambda ph: (-saving[ph.name], -ph.ms, names.index(ph.name)))

    current = {phase.name: phase.ms for phase in breakdown}
    unaccounted = max(total - summed, 0.0)
    now = total
    reached = now <= goal + slack
    steps: list[PlanStep] = []
    for phase in order:
        if reached:
            break
        now -= saving[phase.name]
        current[phase.name] = phase.ms - saving[phase.name]
        reached = now <= goal + slack
        top = max(breakdown, key=lambda ph: current[ph.name])
        steps.append(
            PlanStep(
                step=len(steps) + 1,
                phase=phase.name,
                kind=phase.kind,
                ms=phase.ms,
                k=_k_figure(ks[phase.name]),
                saving_ms=saving[phase.name],
                new_ms=now,
                speedup=_ratio(total, now),
                reached=reached,
                bottleneck=top.name,
                bottleneck_share=current[top.name] / now if now > 0 else None,
            )
        )

    options: list[PlanOption] = []
    if steps and reached:
        before_last = steps[-1].new_ms + steps[-1].saving_ms
        taken = {step.phase for step in steps[:-1]}
        for phase in order:
            after = before_last - saving[phase.name]
            if phase.name not in taken and after <= goal + slack:
                options.append(
                    PlanOption(
                        phase=phase.name,
                        kind=phase.kind,
                        ms=phase.ms,
                        k=_k_figure(ks[phase.name]),
                        saving_ms=saving[phase.name],
                        new_ms=after,
                        speedup=_ratio(total, after),
                    )
                )

    at_k = sum(saving[phase.name] for phase in eligible)
    at_zero = sum(phase.ms for phase in breakdown if phase.kind in kinds)
    all_at_k = PlanCeiling(new_ms=total - at_k, speedup=_ratio(total, total - at_k), saving_ms=at_k)
    all_at_zero = PlanCeiling(new_ms=total - at_zero, speedup=_ratio(total, total - at_zero), saving_ms=at_zero)
    k_needed = None if reached else _k_needed(at_zero, goal - (total - at_zero), slack)
    left = [
        Leftover(name=phase.name, kind=phase.kind, ms=phase.ms, share=phase.ms / total)
        for phase in breakdown
        if phase.kind not in kinds and phase.ms > 0
    ]
    if unaccounted > slack:
        left.append(Leftover(name="unaccounted", kind=None, ms=unaccounted, share=unaccounted / total))

    result = Plan(
        baseline_ms=total,
        target_ms=goal,
        target_speedup=target_speedup if target_ms is None else _ratio(total, goal),
        k=_k_figure(default_k),
        kinds=list(kinds),
        reachable=reached,
        steps=steps,
        last_step_options=options,
        best_ms=all_at_k.new_ms,
        best_speedup=all_at_k.speedup,
        k_needed=k_needed,
        all_at_k=all_at_k,
        all_at_zero=all_at_zero,
        left=left,
        left_ms=sum(item.ms for item in left),
        message="",
    )
    result.message = _message(result, uniform_k=not per_phase and all(ph.k is None for ph in breakdown))
    return result


def _k_needed(plannable_ms: float, room_ms: float, slack: float) -> float | Infinite | None:
    """The one k that brings `plannable_ms` of work down to `room_ms`, the time the target leaves it once the rest
    (which no k touches) is counted: plannable / room; `"inf"` when the room is nothing (float noise aside), None when
    the rest alone is past the target."""
    if plannable_ms <= 0 or room_ms < -slack:
        return None
    if room_ms <= slack:
        return "inf"
    return plannable_ms / room_ms


def _speedup_text(value: float | None) -> str:
    return "∞" if value is None else times(value)


def _message(result: Plan, *, uniform_k: bool) -> str:
    """One sentence for the plan: the steps and the choice for the last one, or why the target is out of reach."""
    at = f"at {times(result.k) if isinstance(result.k, float) else '∞'}" if uniform_k else "at their k"
    goal = f"{ms(result.target_ms)} ({_speedup_text(result.target_speedup)})"
    left = join([label(item.name) for item in result.left[:3]])
    work = f"all {join(list(result.kinds))} work"
    if result.all_at_zero.speedup is None:
        zero = f"{work} at zero would leave nothing of the {ms(result.baseline_ms)}"
    else:
        zero = f"{work} at zero stops at {ms(result.all_at_zero.new_ms)}" + (f", leaving {left}" if left else "")
    if not result.steps and result.reachable:
        return sentence(f"The scope already meets {goal} at {ms(result.baseline_ms)}, so no phase needs speeding up.")
    if not result.reachable:
        short = f"{goal} is out of reach: every plannable phase {at} gives {ms(result.best_ms)} "
        short += f"({_speedup_text(result.best_speedup)})"
        needed = result.k_needed
        if needed is None:
            stops = f"at zero it stops at {ms(result.all_at_zero.new_ms)}" + (f", leaving {left}" if left else "")
            return sentence(f"{short}; no k on {join(list(result.kinds))} work reaches it: {stops}.")
        if needed == "inf":
            stops = f"stopping at {ms(result.all_at_zero.new_ms)}" + (f" and leaving {left}" if left else "")
            return sentence(f"{short}; only {work} removed reaches it, {stops}.")
        return sentence(f"{short}; {work} at {times(needed)} would reach it, and {zero.removeprefix(work + ' ')}.")
    first = [label(step.phase) for step in result.steps[:-1]]
    last = [label(option.phase) for option in result.last_step_options]
    shown = join(last[:4] + (["others"] if len(last) > 4 else []), "or")
    if len(last) > 1:
        worst = max(option.new_ms for option in result.last_step_options)
        best = min(option.new_ms for option in result.last_step_options)
        then = f"any one of {shown} ({ms(worst)} to {ms(best)})"
        how = f"{join(first)} {at}, then {then}" if first else f"{then} {at}"
    else:
        how = f"{join(first + last)} {at}, landing at {ms(result.steps[-1].new_ms)}"
    count = len(result.steps)
    return sentence(f"Reaching {goal} takes {count} phase{'s' if count != 1 else ''}: {how}; {zero}.")


class PlanRequest(Base, kw_only=True):
    """What `POST /v1/plans` and `worthit plan` take: a breakdown and a target speedup or target time."""

    breakdown: Annotated[list[Phase], Meta(min_length=1, max_length=1000)]
    target_speedup: Annotated[float, Meta(gt=0)] | None = None
    target_ms: Annotated[float, Meta(ge=0)] | None = None
    k: PositiveFloat | Infinite | dict[str, PositiveFloat | Infinite] | None = None
    kinds: Annotated[list[PhaseKind], Meta(min_length=1)] = msgspec.field(default_factory=lambda: ["kernel"])
    baseline_ms: Milliseconds | None = None


def plan_for(request: PlanRequest, policy: Policy) -> Plan:
    """`plan` for a decoded request, its figures settled (rules/precision.py)."""
    return settled(
        plan(
            request.breakdown,
            target_speedup=request.target_speedup,
            target_ms=request.target_ms,
            k=request.k,
            kinds=request.kinds,
            baseline_ms=request.baseline_ms,
            policy=policy,
        )
    )
