"""The registry of checks: explicit and ordered, no import-time discovery.

Adding a rule is adding one module under `rules/checks/` and one line here. Order matters only for ties between
findings that argue the same verdict (the earlier one decides) and for overrides.
"""

from __future__ import annotations

from types import ModuleType

from rules.checks import amdahl, noise_floor

CHECKS: tuple[ModuleType, ...] = (
    amdahl,
    noise_floor,
)

BY_ID: dict[str, ModuleType] = {module.ID: module for module in CHECKS}
