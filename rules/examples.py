"""A rule's own examples (Fixit's VALID/INVALID): test data each rule module carries and one parametrised test runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from worthit.rules.model import Verdict

__all__ = ["Example"]


@dataclass(frozen=True, slots=True)
class Example:
    """A rule's own example (Fixit's VALID/INVALID): a proposal, whether the rule fires, and what it argues.

    The examples run the rule alone (`rules.engine.check_alone`): `verdict` is the verdict the rule itself argues
    (None when it only informs), so reversing the rule fails its own example whatever the other rules say.
    `decision` is the whole engine's verdict on the same proposal, tested apart, where the example shows it.
    """

    proposal: dict[str, Any]
    fires: bool
    verdict: Verdict | None = None
    decision: Verdict | None = None
    figures: dict[str, float] = field(default_factory=dict)
    """Figures the finding must carry, compared with a relative tolerance of 1e-3."""
    policy: dict[str, Any] = field(default_factory=dict)
    """Overrides of the default policy for this example."""
    calibration: dict[str, Any] = field(default_factory=dict)
    """The team's calibration the service hands the engine (rules.calibration.Calibration), if any."""
