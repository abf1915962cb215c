"""The feedback loop (second seed: measure → improve → measure again): outcomes, calibration, workload history.

- An outcome is what was measured after the work: the target's new time and/or the step's, on a stated scope.
  It is compared with the decision's prediction only when both were measured alike (same model, input, dtype and
  device: the measurement_scope rule's point), and kept as predicted vs realized.
- Calibration is how realized k compares with proposed k, per team and workload (the median ratio). Under a
  policy with `calibrate = true`, the service hands the engine the team's robust calibration (rules.calibration:
  bounded ratios, a median over enough outcomes) and the engine evaluates at the calibrated k; its `calibration`
  check says so and, where the verdict turns on it, decides.
- A workload's history is the breakdowns of its decisions in order, with the bottleneck (largest phase) of each.
"""

from __future__ import annotations

import asyncio
import logging
import math
import statistics
from datetime import UTC, datetime

import msgspec

from worthit.rules.calibration import Calibration as CalibrationFigures
from worthit.rules.calibration import calibration_of, k_ratio
from worthit.rules.errors import InvalidInput, WorthitError
from worthit.rules.model import (
    Infinite,
    Proposal,
    Range,
)
from worthit.rules.policy import Policy
from worthit.rules.profiles.proposal import fold_proposal_phases
from worthit.rules.text import join, label, ms, sentence, times
from worthit.service.db.outcomes import NewOutcome, OutcomeStore, Replay
from worthit.service.decisions.schemas import Decision
from worthit.service.decisions.service import DecisionService
from worthit.service.errors import Conflict, Forbidden, NotFound
from worthit.service.ids import new_id, scoped_key
from worthit.service.outcomes.schemas import (
    Calibration,
    CalibrationPoint,
    HistoryPhase,
    Outcome,
    OutcomeReport,
    OutcomeScope,
    Predicted,
    Realized,
    WorkloadHistory,
    WorkloadStep,
)
from worthit.service.tokens.model import Principal

__all__ = [
    "CALIBRATION_POINTS",
    "COMPARED_FIELDS",
    "HISTORY_BATCH",
    "HISTORY_LIMIT",
    "Calibrator",
    "OutcomeService",
    "ScopeMismatch",
    "compare",
    "outcome_statement",
    "scope_differences",
]

COMPARED_FIELDS = ("model", "input", "dtype", "device")
HISTORY_LIMIT = 200
HISTORY_BATCH = 8
"""Stored decisions read per query for a workload's history."""
"""Most recent decisions of a workload its history shows."""
CALIBRATION_POINTS = 50
"""Most recent outcomes a calibration lists (its figures use all of them)."""

log = logging.getLogger(__name__)
_encoder = msgspec.json.Encoder()


class ScopeMismatch(WorthitError):
    """An outcome measured on another configuration than the proposal (compare like with like)."""

    def __init__(self, differences: list[tuple[str, str, str]]) -> None:
        self.differences = differences
        fields = join(
            [f"{name} (proposal {label(mine)}, outcome {label(theirs)})" for name, mine, theirs in differences]
        )
        self.detail = (
            f"Expected the outcome to be measured on the proposal's configuration, got a different {fields}; "
            "measure before and after on the same model, input, dtype and device (measurement_scope)"
        )
        super().__init__(self.detail)


def scope_differences(proposal: Proposal, measured: OutcomeScope) -> list[tuple[str, str, str]]:
    """(field, proposal's value, outcome's value) for each compared field both sides state and differ on."""
    differences = []
    for name in COMPARED_FIELDS:
        mine, theirs = getattr(proposal.scope, name), getattr(measured, name)
        if mine is not None and theirs is not None and mine != theirs:
            differences.append((name, mine, theirs))
    return differences


def _finite(value: float | str | None) -> float | None:
    if value is None or isinstance(value, str) or math.isinf(value):
        return None
    return value


def _proposed_point(k: float | Range | Infinite | None) -> float | str | None:
    return (k.low + k.high) / 2 if isinstance(k, Range) else k


def compare(decision: Decision, report: OutcomeReport, recorded_at: datetime) -> Outcome:
    """Predicted vs realized: realized k = target before / target after (target before = p × baseline),
    realized S = baseline / step after. Raises `ScopeMismatch` for an unlike comparison."""
    differences = scope_differences(decision.proposal, report.scope)
    if differences:
        raise ScopeMismatch(differences)
    a = decision.amdahl
    baseline = a.baseline_ms
    target_before = a.p * baseline if baseline is not None else None
    if baseline is None:
        field = "target_ms" if report.target_ms is not None else "step_ms"
        raise InvalidInput(
            f"Expected the decision to know the step's time (`baseline_ms` or a breakdown) to compare `{field}` "
            "with, got a decision made on shares alone",
            f"/{field}",
        )
    realized_k: float | Infinite | None = None
    if report.target_ms is not None and target_before is not None:
        realized_k = "inf" if report.target_ms == 0 else target_before / report.target_ms
    realized_s = baseline / report.step_ms if report.step_ms is not None else None
    # Against the k the team proposed, not the calibrated k a calibrating policy evaluated it at (amdahl.k).
    proposed_k = _finite(_proposed_point(decision.proposal.k))
    ratio = k_ratio(proposed_k, _finite(realized_k))
    speedup_ratio = realized_s / a.speedup if realized_s is not None and a.speedup is not None else None
    outcome = Outcome(
        decision_id=decision.id,
        recorded_at=recorded_at,
        statement="",
        team=decision.proposal.team,
        workload=decision.proposal.scope.workload,
        target=decision.proposal.target,
        p=a.p,
        baseline_ms=baseline,
        target_before_ms=target_before,
        predicted=Predicted(k=a.k, speedup=a.speedup, target_ms=a.remaining_ms, step_ms=a.new_ms),
        realized=Realized(k=realized_k, speedup=realized_s, target_ms=report.target_ms, step_ms=report.step_ms),
        k_ratio=ratio,
        speedup_ratio=speedup_ratio,
        scope=report.scope,
        note=report.note,
    )
    outcome.statement = outcome_statement(outcome)
    return outcome


def _k(value: float | str) -> str:
    return "∞" if isinstance(value, str) else times(value)


def outcome_statement(outcome: Outcome) -> str:
    """One sentence: realized vs proposed k, and the step's time against the prediction."""
    target = label(outcome.target) if outcome.target else "the target"
    parts = []
    realized, predicted = outcome.realized, outcome.predicted
    if realized.k is not None:
        ratio = f" ({times(outcome.k_ratio)} of the estimate)" if outcome.k_ratio is not None else ""
        parts.append(f"Realized k is {_k(realized.k)} against the proposed {_k(predicted.k)} for {target}{ratio}")
    if realized.speedup is not None and realized.step_ms is not None and outcome.baseline_ms is not None:
        against = f" against a predicted {ms(predicted.step_ms)}" if predicted.step_ms is not None else ""
        parts.append(
            f"the step went from {ms(outcome.baseline_ms)} to {ms(realized.step_ms)} "
            f"({times(realized.speedup)}){against} ({times(predicted.speedup)})"
        )
    text = "; ".join(parts)
    return sentence(text[:1].upper() + text[1:] + ".")  # either part starts with a word of ours, never a name


class Calibrator:
    """Calibration figures, and the hook that evaluates proposals again at the calibrated k."""

    def __init__(self, store: OutcomeStore) -> None:
        self._store = store

    async def calibration(self, *, team: str | None, workload: str | None) -> Calibration:
        """The median realized/proposed k ratio of the outcomes of `team` on `workload` (either may be None)."""
        # PostgreSQL text cannot hold NUL, so nothing stored matches it; asking would be a database error.
        unmatchable = any("\x00" in name for name in (team, workload) if name is not None)
        rows = [] if unmatchable else await self._store.ratios(team=team, workload=workload)
        ratios = [row.k_ratio for row in rows]
        return Calibration(
            team=team,
            workload=workload,
            count=len(ratios),
            median_ratio=statistics.median(ratios) if ratios else None,
            min_ratio=min(ratios, default=None),
            max_ratio=max(ratios, default=None),
            points=[
                CalibrationPoint(
                    decision_id=row.decision_id,
                    recorded_at=_utc(row.recorded_at),
                    proposed_k=row.proposed_k,
                    realized_k=row.realized_k,
                    ratio=row.k_ratio,
                )
                for row in rows[:CALIBRATION_POINTS]
            ],
        )

    async def for_proposal(self, proposal: Proposal, policy: Policy) -> CalibrationFigures | None:
        """Under `calibrate = true`, the team's robust calibration on the proposal's workload (rules.calibration):
        the engine evaluates the proposal at k × its ratio, and its `calibration` check says so. None when the
        policy does not calibrate, the proposal names neither team nor workload, or too few outcomes are known."""
        if not policy.calibrate or isinstance(proposal.k, str):
            return None
        team, workload = proposal.team, proposal.scope.workload
        if team is None and workload is None:
            return None
        if any("\x00" in name for name in (team, workload) if name is not None):
            return None
        rows = await self._store.ratios(team=team, workload=workload)
        return calibration_of([row.k_ratio for row in rows], policy, team=team, workload=workload)


class OutcomeService:
    """Recording outcomes, reading them back, calibration, and workload histories."""

    def __init__(self, store: OutcomeStore, decisions: DecisionService, calibrator: Calibrator) -> None:
        self._store = store
        self._decisions = decisions
        self._calibrator = calibrator

    async def record(
        self,
        decision_id: str,
        report: OutcomeReport,
        *,
        idempotency_key: str | None,
        body_hash: str,
        caller: Principal | None = None,
        slack_user: str | None = None,
    ) -> tuple[Outcome, bool]:
        """Compare and store; returns the outcome and whether it is new (False: an idempotent replay).

        An outcome moves its team's calibration, so only a decision's owner records it, or an admin token (Forbidden
        otherwise): for a decision made from Slack, the Slack user who made it, through Slack (`slack_user`, which
        only the Slack bot's token may state); for one made through the API, the token that made it. A decision with
        no owner recorded (made with auth off, or before owners were kept) stays open to any caller with the route's
        scope, as does every decision to a server with auth off (no `caller`) unless a token made it."""
        decision = await self._decisions.get(decision_id)
        owner = await self._decisions.owner(decision_id)
        admin = caller is not None and "admin" in caller.scopes
        if owner.slack_user is not None:
            if not (admin or caller is None or slack_user == owner.slack_user):
                raise Forbidden(
                    f"Decision `{decision_id}` was made from Slack by {owner.slack_user}: only they, through Slack, "
                    "or an admin token record its outcome"
                )
        elif owner.token_id is not None and not (admin or (caller is not None and caller.id == owner.token_id)):
            raise Forbidden(
                f"Only the token that made decision `{decision_id}` (or an admin) records its outcome"
                + ("" if caller is None else f"; `{caller.name}` did not make it")
            )
        outcome = compare(decision, report, datetime.now(UTC))
        document = _encoder.encode(outcome).decode()
        found = await self._store.add(
            NewOutcome(
                id=new_id(),
                decision_id=decision_id,
                recorded_at=outcome.recorded_at,
                team=outcome.team,
                workload=outcome.workload,
                proposed_k=_finite(outcome.predicted.k),
                realized_k=_finite(outcome.realized.k),
                k_ratio=outcome.k_ratio,
                document=document,
            ),
            idempotency_key=scoped_key(idempotency_key, None if caller is None else caller.id),
            route=f"POST /v1/decisions/{decision_id}/outcome",
            request_hash=body_hash,
            status_code=201,
        )
        if found is None:
            return outcome, True
        if isinstance(found, Replay):
            if found.request_hash != body_hash:
                raise Conflict(
                    f"Idempotency-Key {idempotency_key!r} was already used with a different request body; "
                    "use a new key for a new outcome"
                )
            return msgspec.json.decode(found.document, type=Outcome), False
        recorded = msgspec.json.decode(found.document, type=Outcome)
        raise Conflict(
            f"Decision `{decision_id}` already has an outcome, recorded at {recorded.recorded_at.isoformat()}; "
            "outcomes are kept as measured, not overwritten"
        )

    async def get(self, decision_id: str) -> Outcome:
        """The outcome recorded for a decision; NotFound when the decision or its outcome does not exist."""
        document = await self._store.get(decision_id)
        if document is None:
            await self._decisions.get(decision_id)  # a missing decision says so, not "no outcome"
            raise NotFound(f"No outcome recorded for decision `{decision_id}` yet")
        return msgspec.json.decode(document, type=Outcome)

    async def find(self, decision_id: str) -> Outcome | None:
        document = await self._store.get(decision_id)
        return None if document is None else msgspec.json.decode(document, type=Outcome)

    async def calibration(self, *, team: str | None, workload: str | None) -> Calibration:
        return await self._calibrator.calibration(team=team, workload=workload)

    async def history(self, workload: str) -> WorkloadHistory:
        """The breakdowns of the workload's decisions, oldest first, each with its bottleneck."""
        unmatchable = "\x00" in workload  # PostgreSQL text cannot hold NUL: nothing stored has it
        ids = [] if unmatchable else await self._store.workload_ids(workload, HISTORY_LIMIT)
        if not ids:
            raise NotFound(f"No decisions for workload `{workload}`")
        # Worst case: HISTORY_LIMIT decisions of ~280 KB each (megabytes, for ones stored before breakdowns were
        # bounded), which read at once and decoded reached hundreds of MB per request. A batch at a time instead,
        # each decision folded to its bounded step (at most 64 phases) and dropped: a request holds one batch.
        # Decoding is CPU work: off the event loop, so /healthz and every other request keep answering meanwhile.
        steps: list[WorkloadStep] = []
        for start in range(0, len(ids), HISTORY_BATCH):
            documents = await self._store.documents(ids[start : start + HISTORY_BATCH])
            steps += await asyncio.to_thread(_steps, documents)
        return WorkloadHistory(workload=workload, steps=steps, bottlenecks=[step.bottleneck for step in steps])


def _utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes for timezone-aware columns; they were stored as UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _steps(documents: list[str]) -> list[WorkloadStep]:
    return [step for document in documents if (step := _step(document)) is not None]


def _step(document: str) -> WorkloadStep | None:
    try:
        decision = msgspec.json.decode(document, type=Decision)
    except msgspec.ValidationError as exc:  # stored before writes were checked to read back: left out, as a listing
        log.error("left out of a workload's history: a stored decision does not read back: %s", exc)
        return None
    # Bounded whatever was stored: the largest phases by name, the others summed per kind.
    phases = fold_proposal_phases(decision.proposal.breakdown or [])
    total = sum(phase.ms for phase in phases)
    if total <= 0:
        return None
    largest = max(phases, key=lambda phase: phase.ms)  # the first of equals: the order the user gave
    return WorkloadStep(
        decision_id=decision.id,
        created_at=decision.created_at,
        title=decision.proposal.title,
        target=decision.proposal.target,
        verdict=decision.verdict,
        total_ms=total,
        phases=[HistoryPhase(name=p.name, ms=p.ms, kind=p.kind, share=p.ms / total) for p in phases],
        bottleneck=largest.name,
        bottleneck_share=largest.ms / total,
    )
