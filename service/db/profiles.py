"""The profiles table: one stored breakdown per uploaded profile, kept as the document the API serves."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from worthit.service.db.errors import domain_errors
from worthit.service.db.models import Base
from worthit.service.db.writer import GroupCommitWriter

__all__ = ["ProfileStore", "profiles"]

profiles = Base.metadata.tables["profiles"]


@domain_errors
class ProfileStore:
    """Profiles in the database: written through the group-commit writer, read by id."""

    def __init__(self, engine: AsyncEngine, writer: GroupCommitWriter) -> None:
        self._engine = engine
        self._writer = writer

    async def add(
        self, *, id: str, created_at: datetime, name: str | None, format: str, size_bytes: int, document: str
    ) -> None:
        def op(connection: Connection) -> None:
            connection.execute(
                insert(profiles).values(
                    id=id,
                    created_at=created_at,
                    name=name,
                    format=format[:200],
                    size_bytes=size_bytes,
                    document=document,
                )
            )

        await self._writer.submit(op)

    async def document(self, profile_id: str) -> str | None:
        async with self._engine.connect() as connection:
            return (
                await connection.execute(select(profiles.c.document).where(profiles.c.id == profile_id))
            ).scalar_one_or_none()
