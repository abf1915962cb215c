"""Queries on decisions and policies, in SQLAlchemy Core (lean: the document is stored ready to serve)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from worthit.service.db.errors import domain_errors
from worthit.service.db.models import Base
from worthit.service.db.writer import Batched, GroupCommitWriter

__all__ = ["DecisionFilter", "DecisionStore", "Existing", "NewDecision", "Owner", "decisions"]

decisions = Base.metadata.tables["decisions"]


@dataclass(frozen=True, slots=True)
class NewDecision:
    id: str
    created_at: datetime
    verdict: str
    target: str | None
    workload: str | None
    policy_name: str
    policy_version: int
    source: str
    idempotency_key: str | None
    request_hash: str | None
    document: str
    token_id: str | None = None
    slack_user: str | None = None
    team: str | None = None


@dataclass(frozen=True, slots=True)
class Owner:
    """Who made a decision: the token, and the Slack user when it was made from Slack (who then owns it)."""

    token_id: str | None
    slack_user: str | None


@dataclass(frozen=True, slots=True)
class Existing:
    """What an idempotency key already stored."""

    request_hash: str | None
    document: str


@dataclass(frozen=True, slots=True)
class DecisionFilter:
    verdict: str | None = None
    target: str | None = None
    workload: str | None = None
    since: datetime | None = None
    team: str | None = None


@domain_errors
class DecisionStore:
    """Decisions: writes through the group-commit writer, reads on the pool."""

    def __init__(self, engine: AsyncEngine, writer: GroupCommitWriter) -> None:
        self._engine = engine
        self._writer = writer

    async def add(self, row: NewDecision) -> Existing | None:
        """Store `row`, or return what its idempotency key already stored (then nothing is written)."""
        return await self._writer.submit(Batched("decisions", _insert_decisions, row))

    async def owner(self, decision_id: str) -> Owner:
        """Who made the decision (both None: none recorded, or no such decision)."""
        query = select(decisions.c.token_id, decisions.c.slack_user).where(decisions.c.id == decision_id)
        async with self._engine.connect() as connection:
            row = (await connection.execute(query)).first()
        return Owner(None, None) if row is None else Owner(row.token_id, row.slack_user)

    async def get(self, decision_id: str) -> str | None:
        async with self._engine.connect() as connection:
            result = await connection.execute(select(decisions.c.document).where(decisions.c.id == decision_id))
            return result.scalar_one_or_none()

    async def page(self, where: DecisionFilter, cursor: str | None, limit: int) -> tuple[list[str], str | None]:
        """The ids of a page, newest first, `limit` at most; the cursor is the id of the last row of the previous
        page. Ids only: a page of documents can be hundreds of megabytes, read `documents` a few at a time."""
        query = select(decisions.c.id).order_by(decisions.c.id.desc()).limit(limit + 1)
        if where.verdict is not None:
            query = query.where(decisions.c.verdict == where.verdict)
        if where.target is not None:
            query = query.where(decisions.c.target == where.target)
        if where.workload is not None:
            query = query.where(decisions.c.workload == where.workload)
        if where.team is not None:
            query = query.where(decisions.c.team == where.team)
        if where.since is not None:
            query = query.where(decisions.c.created_at >= where.since)
        if cursor is not None:
            query = query.where(decisions.c.id < cursor)
        async with self._engine.connect() as connection:
            ids = list((await connection.execute(query)).scalars().all())
        next_cursor = ids[limit - 1] if len(ids) > limit else None
        return ids[:limit], next_cursor

    async def documents(self, ids: list[str]) -> list[tuple[str, str]]:
        """The ids and documents of `ids`, in that order (an id not stored is left out)."""
        query = select(decisions.c.id, decisions.c.document).where(decisions.c.id.in_(ids))
        async with self._engine.connect() as connection:
            found = {row.id: row.document for row in (await connection.execute(query)).all()}
        return [(decision_id, found[decision_id]) for decision_id in ids if decision_id in found]


def _values(row: NewDecision) -> dict[str, Any]:
    return {field: getattr(row, field) for field in row.__slots__}


def _insert_decisions(connection: Connection, rows: list[NewDecision]) -> list[Existing | None]:
    """One multi-row INSERT for a batch; rows whose idempotency key is already stored (or earlier in the same
    batch) are not written, and get what the key stored instead."""
    keys = [row.idempotency_key for row in rows if row.idempotency_key is not None]
    seen: dict[str, Existing] = {}
    if keys:
        query = select(decisions.c.idempotency_key, decisions.c.request_hash, decisions.c.document).where(
            decisions.c.idempotency_key.in_(keys)
        )
        for found in connection.execute(query).all():
            seen[found.idempotency_key] = Existing(request_hash=found.request_hash, document=found.document)
    results: list[Existing | None] = []
    new: list[dict[str, Any]] = []
    for row in rows:
        key = row.idempotency_key
        if key is not None and key in seen:
            results.append(seen[key])
            continue
        if key is not None:
            seen[key] = Existing(request_hash=row.request_hash, document=row.document)
        new.append(_values(row))
        results.append(None)
    if new:
        connection.execute(insert(decisions), new)
    return results
