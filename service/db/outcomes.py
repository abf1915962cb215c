"""Queries of the feedback loop, in SQLAlchemy Core: outcomes, calibration ratios, a workload's decisions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from worthit.service.db.errors import domain_errors
from worthit.service.db.models import Base
from worthit.service.db.writer import GroupCommitWriter

__all__ = ["NewOutcome", "OutcomeStore", "RatioRow", "Replay", "Stored", "decisions", "idempotency_keys", "outcomes"]

outcomes = Base.metadata.tables["outcomes"]
idempotency_keys = Base.metadata.tables["idempotency_keys"]
decisions = Base.metadata.tables["decisions"]


@dataclass(frozen=True, slots=True)
class NewOutcome:
    id: str
    decision_id: str
    recorded_at: datetime
    team: str | None
    workload: str | None
    proposed_k: float | None
    realized_k: float | None
    k_ratio: float | None
    document: str


@dataclass(frozen=True, slots=True)
class Replay:
    """What an idempotency key already answered on this route."""

    request_hash: str
    status_code: int
    document: str


@dataclass(frozen=True, slots=True)
class Stored:
    """The outcome already recorded for the decision (a second one is a conflict, not an overwrite)."""

    document: str


@dataclass(frozen=True, slots=True)
class RatioRow:
    decision_id: str
    recorded_at: datetime
    proposed_k: float
    realized_k: float
    k_ratio: float


@domain_errors
class OutcomeStore:
    """Outcomes: writes through the group-commit writer (with their idempotency key, in one transaction)."""

    def __init__(self, engine: AsyncEngine, writer: GroupCommitWriter) -> None:
        self._engine = engine
        self._writer = writer

    async def add(
        self, row: NewOutcome, *, idempotency_key: str | None, route: str, request_hash: str, status_code: int
    ) -> Replay | Stored | None:
        """Store `row` (and its idempotency key); or return what the key already answered, or the outcome the
        decision already has. Nothing is written in those two cases."""

        def op(connection: Connection) -> Replay | Stored | None:
            if idempotency_key is not None:
                found = (
                    connection.execute(
                        select(
                            idempotency_keys.c.request_hash, idempotency_keys.c.status_code, idempotency_keys.c.document
                        ).where(idempotency_keys.c.key == idempotency_key, idempotency_keys.c.route == route)
                    )
                ).first()
                if found is not None:
                    return Replay(found.request_hash, found.status_code, found.document)
            existing = (
                connection.execute(select(outcomes.c.document).where(outcomes.c.decision_id == row.decision_id))
            ).scalar_one_or_none()
            if existing is not None:
                return Stored(existing)
            connection.execute(insert(outcomes).values({f: getattr(row, f) for f in row.__slots__}))
            if idempotency_key is not None:
                connection.execute(
                    insert(idempotency_keys).values(
                        key=idempotency_key,
                        route=route,
                        request_hash=request_hash,
                        status_code=status_code,
                        document=row.document,
                        created_at=row.recorded_at,
                    )
                )
            return None

        return await self._writer.submit(op)

    async def get(self, decision_id: str) -> str | None:
        async with self._engine.connect() as connection:
            result = await connection.execute(select(outcomes.c.document).where(outcomes.c.decision_id == decision_id))
            return result.scalar_one_or_none()

    async def ratios(self, *, team: str | None, workload: str | None, limit: int = 10_000) -> list[RatioRow]:
        """Outcomes with a realized/proposed k ratio, newest first, filtered by team and workload when given."""
        query = (
            select(
                outcomes.c.decision_id,
                outcomes.c.recorded_at,
                outcomes.c.proposed_k,
                outcomes.c.realized_k,
                outcomes.c.k_ratio,
            )
            .where(outcomes.c.k_ratio.is_not(None))
            .order_by(outcomes.c.recorded_at.desc(), outcomes.c.id.desc())
            .limit(limit)
        )
        if team is not None:
            query = query.where(outcomes.c.team == team)
        if workload is not None:
            query = query.where(outcomes.c.workload == workload)
        async with self._engine.connect() as connection:
            rows = (await connection.execute(query)).all()
        return [RatioRow(r.decision_id, r.recorded_at, r.proposed_k, r.realized_k, r.k_ratio) for r in rows]

    async def workload_ids(self, workload: str, limit: int) -> list[str]:
        """The ids of the newest `limit` decisions of a workload, oldest first (ids are time-ordered UUIDv7)."""
        query = (
            select(decisions.c.id).where(decisions.c.workload == workload).order_by(decisions.c.id.desc()).limit(limit)
        )
        async with self._engine.connect() as connection:
            ids = list((await connection.execute(query)).scalars().all())
        return ids[::-1]

    async def documents(self, ids: list[str]) -> list[str]:
        """The decision documents of `ids`, in that order."""
        query = select(decisions.c.id, decisions.c.document).where(decisions.c.id.in_(ids))
        async with self._engine.connect() as connection:
            found = {row.id: row.document for row in (await connection.execute(query)).all()}
        return [found[decision_id] for decision_id in ids if decision_id in found]
