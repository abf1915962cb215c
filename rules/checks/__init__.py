"""The registry of checks: explicit and ordered, no import-time discovery.

Adding a rule is adding one module under `rules/checks/` and one line here. Each module declares the `STAGE` of the
decision it answers; the engine composes the stages in order (trust, worth, cost, alternative, condition). Within
a stage the order here breaks ties between findings that argue the same verdict: the earlier one decides, so its
message becomes the statement (device_vs_run before noise_floor: it says the same with both shares). No check
sets another aside: what the work is worth and what it costs are one figure every check reads (rules.worth).
"""

from __future__ import annotations

import inspect
from types import ModuleType

from worthit.rules.checks import (
    added_work,
    amdahl,
    barrier_denominator,
    bigger_target,
    calibration,
    ceiling,
    collective_wait,
    consistency,
    counters_blind_spot,
    device_vs_run,
    estimate,
    fleet_multiplication,
    inclusive_percentages,
    input_shift,
    maintenance_cost,
    measurement_scope,
    memory_fit,
    mix,
    noise_floor,
    non_kernel_time,
    one_off_compute,
    overlap_double_count,
    power_capacity,
    quality_gate,
    rate_of_return,
    recurring_gpu_cost,
    replayed_saving,
    resource_goal,
    roadmap_risk,
    roofline,
    slo_met,
    tail_latency,
    unit_slip,
    unowned_devices,
    unstated_cost,
    vendor_product,
    wrong_model,
)

__all__ = ["BY_ID", "CHECKS", "explanations"]

CHECKS: tuple[ModuleType, ...] = (
    # 1. trust: when the arithmetic ran on the wrong scope or on inputs that disagree, nothing else can be trusted
    measurement_scope,
    unit_slip,
    overlap_double_count,
    inclusive_percentages,
    counters_blind_spot,
    barrier_denominator,
    input_shift,
    consistency,
    roofline,
    # 2. worth: the saving on the decision scope and its volume (the engine computes the value once: rules.worth)
    quality_gate,
    calibration,
    mix,
    memory_fit,
    slo_met,
    power_capacity,
    unowned_devices,
    roadmap_risk,
    wrong_model,
    # the replay of the profile's trace speaks before the shares: its saving is the one the others read
    replayed_saving,
    device_vs_run,
    ceiling,
    noise_floor,
    fleet_multiplication,
    vendor_product,
    added_work,
    # 3. cost: build plus upkeep, and the return per engineer-week
    maintenance_cost,
    rate_of_return,
    recurring_gpu_cost,
    one_off_compute,
    unstated_cost,
    # 4. alternative: a capacity problem, the largest phase, the non-kernel time
    resource_goal,
    collective_wait,
    bigger_target,
    non_kernel_time,
    # 5. conditions
    tail_latency,
    estimate,
    # the figures themselves: they support funding, and speak only when nothing more specific does
    amdahl,
)

BY_ID: dict[str, ModuleType] = {module.ID: module for module in CHECKS}


def explanations() -> list[tuple[str, str]]:
    """Each rule's id and its docstring, cleaned, in the registry's order: what `GET /v1/rules` and `worthit rules`
    serve, so the explanation and the behaviour cannot drift."""
    return [(module.ID, inspect.cleandoc(module.__doc__ or "")) for module in CHECKS]
