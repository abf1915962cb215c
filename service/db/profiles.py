"""The profiles table: one stored breakdown per uploaded profile, kept as the document the API serves."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from worthit.service.db.errors import domain_errors
from worthit.service.db.models import Base
from worthit.service.db.writer import GroupCommitWriter

__all__ = ["ProfileRowSummary", "ProfileStore", "profiles"]

profiles = Base.metadata.tables["profiles"]


def _utc(moment: datetime) -> datetime:
    # SQLite keeps no time zone: the time was stored in UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ProfileRowSummary:
    """A stored profile without its document: what a list shows."""

    id: str
    created_at: datetime
    name: str | None
    format: str
    size_bytes: int


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

    async def page(self, cursor: str | None, limit: int) -> tuple[list[ProfileRowSummary], str | None]:
        """A page of profiles, newest first (ids are time-ordered), `limit` at most, without their documents; the
        cursor is the id of the last row of the previous page."""
        columns = (profiles.c.id, profiles.c.created_at, profiles.c.name, profiles.c.format, profiles.c.size_bytes)
        query = select(*columns).order_by(profiles.c.id.desc()).limit(limit + 1)
        if cursor is not None:
            query = query.where(profiles.c.id < cursor)
        async with self._engine.connect() as connection:
            rows = [
                ProfileRowSummary(row[0], _utc(row[1]), *row[2:]) for row in (await connection.execute(query)).all()
            ]
        next_cursor = rows[limit - 1].id if len(rows) > limit else None
        return rows[:limit], next_cursor
