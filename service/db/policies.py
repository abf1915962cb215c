"""Policy versions added through the API: one row per (name, version)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from worthit.service.db.models import Base
from worthit.service.db.writer import GroupCommitWriter

policies = Base.metadata.tables["policies"]


class PolicyStore:
    """Versions of named policies added through the API."""

    def __init__(self, engine: AsyncEngine, writer: GroupCommitWriter) -> None:
        self._engine = engine
        self._writer = writer

    async def latest(self, name: str) -> tuple[int, str] | None:
        query = (
            select(policies.c.version, policies.c.document)
            .where(policies.c.name == name)
            .order_by(policies.c.version.desc())
            .limit(1)
        )
        async with self._engine.connect() as connection:
            row = (await connection.execute(query)).first()
        return (row.version, row.document) if row is not None else None

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
            current = (
                connection.execute(select(func.max(policies.c.version)).where(policies.c.name == name))
            ).scalar_one_or_none()
            version = max(current or 0, floor) + 1
            document = document_for(version)
            connection.execute(
                insert(policies).values(name=name, version=version, created_at=created_at, document=document)
            )
            return version, document

        return await self._writer.submit(op)
