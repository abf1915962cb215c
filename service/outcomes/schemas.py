"""The outcome documents: what was measured after the work, predicted vs realized, calibration, workload history."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from msgspec import Meta

from worthit.rules.model import (
    TEXT_PATTERN,
    Base,
    Infinite,
    Milliseconds,
    Name,
    NonNegativeFloat,
    Verdict,
)

__all__ = [
    "Calibration",
    "CalibrationPoint",
    "HistoryPhase",
    "Outcome",
    "OutcomeReport",
    "OutcomeScope",
    "Predicted",
    "Realized",
    "WorkloadHistory",
    "WorkloadStep",
]


class OutcomeScope(Base):
    """The configuration the outcome was measured on; compared with the proposal's scope."""

    workload: Name | None = None
    model: Name | None = None
    input: Name | None = None
    dtype: Name | None = None
    device: Name | None = None


class OutcomeReport(Base):
    """What was measured after the work: the target's new time, the step's new time, or both."""

    target_ms: Annotated[NonNegativeFloat, Meta(description="The target's time after the work, in ms.")] | None = None
    step_ms: Annotated[Milliseconds, Meta(description="The measured scope's time after the work.")] | None = None
    scope: OutcomeScope = msgspec.field(default_factory=OutcomeScope)
    note: Annotated[str, Meta(max_length=2000, pattern=TEXT_PATTERN)] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.target_ms is None and self.step_ms is None:
            raise ValueError("Expected `target_ms` (the target's new time) or `step_ms` (the step's), got neither")


class Predicted(msgspec.Struct, kw_only=True):
    """What the decision predicted, at the k it was made with."""

    k: float | Infinite
    speedup: float | None
    """`None` when unbounded, as in the decision's figures."""
    target_ms: float | None
    step_ms: float | None


class Realized(msgspec.Struct, kw_only=True):
    """What was measured, and the k and speedup it means. `k` needs `target_ms`; `speedup` needs `step_ms`."""

    k: float | Infinite | None
    speedup: float | None
    target_ms: float | None
    step_ms: float | None


class Outcome(msgspec.Struct, kw_only=True):
    """Predicted vs realized for one decision; `k_ratio` (realized k / proposed k) is what calibration uses."""

    decision_id: str
    recorded_at: datetime
    statement: str
    team: str | None
    workload: str | None
    target: str | None
    p: float
    baseline_ms: float | None
    target_before_ms: float | None
    """The target's time before the work: p × baseline_ms."""
    predicted: Predicted
    realized: Realized
    k_ratio: float | None
    speedup_ratio: float | None
    scope: OutcomeScope
    note: str | None = None


class CalibrationPoint(msgspec.Struct, kw_only=True):
    decision_id: str
    recorded_at: datetime
    proposed_k: float
    realized_k: float
    ratio: float


class Calibration(msgspec.Struct, kw_only=True):
    """How realized k compares with proposed k: the median ratio over `count` outcomes, and their range."""

    team: str | None
    workload: str | None
    count: int
    median_ratio: float | None
    min_ratio: float | None
    max_ratio: float | None
    points: list[CalibrationPoint]
    """The newest outcomes (up to 50), newest first."""


class HistoryPhase(msgspec.Struct, kw_only=True):
    name: str
    ms: float
    kind: str
    share: float


class WorkloadStep(msgspec.Struct, kw_only=True):
    """One decision's breakdown in a workload's history, and its bottleneck (the largest phase)."""

    decision_id: str
    created_at: datetime
    title: str | None
    target: str | None
    verdict: Verdict
    total_ms: float
    phases: list[HistoryPhase]
    bottleneck: str
    bottleneck_share: float


class WorkloadHistory(msgspec.Struct, kw_only=True):
    """A workload's successive breakdowns (oldest first) and how its bottleneck moved."""

    workload: str
    steps: list[WorkloadStep]
    bottlenecks: list[str]
    """The bottleneck at each step, in order: the seed's attention → mlp → attention."""
