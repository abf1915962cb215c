"""Policy versions added through the API: one row per (name, version); a deletion leaves a row of its own."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from worthit.service.db.errors import domain_errors
from worthit.service.db.models import Base
from worthit.service.db.writer import GroupCommitWriter

__all__ = ["LOCK_SPACE", "PolicyStore", "policies", "policy_deletions"]

policies = Base.metadata.tables["policies"]
policy_deletions = Base.metadata.tables["policy_deletions"]
LOCK_SPACE = 0x7770  # advisory locks of policy versions: the first key of the two-key form, "wp"


def _lock_key(name: str) -> int:
    """A stable signed 32-bit key for `name` (Python's hash() differs between processes)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big", signed=True)


@domain_errors
class PolicyStore:
    """Versions of named policies added through the API."""

    def __init__(self, engine: AsyncEngine, writer: GroupCommitWriter) -> None:
        self._engine = engine
        self._writer = writer

    async def latest(self, name: str, count: int = 1) -> list[tuple[int, str]]:
        """The newest `count` versions of `name`, newest first."""
        query = (
            select(policies.c.version, policies.c.document)
            .where(policies.c.name == name)
            .order_by(policies.c.version.desc())
            .limit(count)
        )
        async with self._engine.connect() as connection:
            return [(row.version, row.document) for row in (await connection.execute(query)).all()]

    async def version(self, name: str, version: int) -> str | None:
        query = select(policies.c.document).where(policies.c.name == name, policies.c.version == version)
        async with self._engine.connect() as connection:
            return (await connection.execute(query)).scalar_one_or_none()

    async def names(self) -> list[tuple[str, int]]:
        query = select(policies.c.name, func.max(policies.c.version)).group_by(policies.c.name)
        async with self._engine.connect() as connection:
            return [(row[0], row[1]) for row in (await connection.execute(query)).all()]

    async def add(self, name: str, document_for: Any, created_at: datetime, floor: int = 0) -> tuple[int, str]:
        """Store the next version of `name`; `document_for(version)` renders its document. Returns both."""

        def op(connection: Connection) -> tuple[int, str]:
            _lock(connection, name)
            version = max(_last_version(connection, name), floor) + 1
            document = document_for(version)
            connection.execute(
                insert(policies).values(name=name, version=version, created_at=created_at, document=document)
            )
            return version, document

        return await self._writer.submit(op)

    async def delete(self, name: str, deleted_at: datetime, deleted_by: str | None) -> int:
        """Delete every version of `name`, recording up to which version, when and by whom (a token's name); how many
        rows there were. Later versions of the name are numbered after the deleted ones."""

        def op(connection: Connection) -> int:
            _lock(connection, name)
            last = _last_version(connection, name)
            count = int(connection.execute(delete(policies).where(policies.c.name == name)).rowcount)
            if count:
                connection.execute(
                    insert(policy_deletions).values(
                        name=name, last_version=last, versions=count, deleted_at=deleted_at, deleted_by=deleted_by
                    )
                )
            return count

        return await self._writer.submit(op)


def _lock(connection: Connection, name: str) -> None:
    if connection.dialect.name == "postgresql":
        # Processes read the newest version at once and both took the next: one lost, with a 409. A lock per name,
        # held to the commit, makes them take turns. (SQLite's writer holds the file's lock.)
        connection.execute(
            text("SELECT pg_advisory_xact_lock(:space, :key)"), {"space": LOCK_SPACE, "key": _lock_key(name)}
        )


def _last_version(connection: Connection, name: str) -> int:
    """The highest version `name` ever had, stored or deleted: versions are never numbered twice."""
    stored = connection.execute(select(func.max(policies.c.version)).where(policies.c.name == name)).scalar()
    deleted = connection.execute(
        select(func.max(policy_deletions.c.last_version)).where(policy_deletions.c.name == name)
    ).scalar()
    return max(stored or 0, deleted or 0)
