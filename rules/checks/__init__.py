"""The registry of checks: explicit and ordered, no import-time discovery.

Adding a rule is adding one module under `rules/checks/` and one line here. Order matters for ties between findings
that argue the same verdict (the earlier one decides, so its message becomes the statement) and for overrides (a
finding set aside by an earlier one cannot set others aside):
- scope errors first: when the arithmetic ran on the wrong scope, nothing else it says can be trusted;
- resource goals next: a capacity problem outranks any speed argument;
- roadmap_risk before wrong_model (it drops that justification), wrong_model before device_vs_run and the per-run
  checks it overrides, device_vs_run and ceiling before noise_floor (the first speaks for it with both shares,
  the second says why a follow-up is a rounding error);
- fleet_multiplication before rate_of_return, vendor_product before maintenance_cost (they override them);
- amdahl last: it always supports funding, and speaks only when no more specific finding does.
"""

from __future__ import annotations

from types import ModuleType

from worthit.rules.checks import (
    amdahl,
    barrier_denominator,
    bigger_target,
    ceiling,
    counters_blind_spot,
    device_vs_run,
    fleet_multiplication,
    inclusive_percentages,
    input_shift,
    maintenance_cost,
    measurement_scope,
    noise_floor,
    non_kernel_time,
    overlap_double_count,
    rate_of_return,
    resource_goal,
    roadmap_risk,
    tail_latency,
    vendor_product,
    wrong_model,
)

CHECKS: tuple[ModuleType, ...] = (
    measurement_scope,
    overlap_double_count,
    inclusive_percentages,
    counters_blind_spot,
    barrier_denominator,
    input_shift,
    resource_goal,
    roadmap_risk,
    wrong_model,
    device_vs_run,
    ceiling,
    noise_floor,
    fleet_multiplication,
    vendor_product,
    maintenance_cost,
    tail_latency,
    rate_of_return,
    bigger_target,
    non_kernel_time,
    amdahl,
)

BY_ID: dict[str, ModuleType] = {module.ID: module for module in CHECKS}
