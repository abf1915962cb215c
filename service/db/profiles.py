"""The profiles table: one stored breakdown per uploaded profile, kept as the document the API serves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from worthit.service.db.errors import domain_errors
from worthit.service.db.models import Base
from worthit.service.db.writer import GroupCommitWriter

__all__ = ["ProfileRowSummary", "ProfileStore", "StoredSchedule", "profile_schedules", "profiles"]

profiles = Base.metadata.tables["profiles"]
profile_schedules = Base.metadata.tables["profile_schedules"]


@dataclass(frozen=True, slots=True)
class StoredSchedule:
    """One trace's encoded replay schedule: its device ops' count, the steps the profile was read over (the upload's
    `steps`, None for its default) and the encoding."""

    ops: int
    steps: str | None
    data: bytes


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
        self,
        *,
        id: str,
        created_at: datetime,
        name: str | None,
        format: str,
        size_bytes: int,
        document: str,
        schedules: Sequence[StoredSchedule] = (),
    ) -> None:
        """The profile and its traces' schedules (one per rank, in order), in one transaction."""

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
            # One statement a schedule: each is up to tens of MB, and a driver's batch would hold them all again.
            for position, schedule in enumerate(schedules):
                connection.execute(
                    insert(profile_schedules).values(
                        profile_id=id,
                        position=position,
                        ops=schedule.ops,
                        steps=schedule.steps,
                        schedule=schedule.data,
                    )
                )

        await self._writer.submit(op)

    async def exists(self, profile_id: str) -> bool:
        """Whether the profile is stored, without reading its document."""
        query = select(profiles.c.id).where(profiles.c.id == profile_id)
        async with self._engine.connect() as connection:
            return (await connection.execute(query)).first() is not None

    async def schedule_count(self, profile_id: str) -> int:
        """How many schedules the profile has stored (0: it cannot be replayed from the store)."""
        query = select(func.count()).select_from(profile_schedules).where(profile_schedules.c.profile_id == profile_id)
        async with self._engine.connect() as connection:
            return int((await connection.execute(query)).scalar_one())

    async def schedule(self, profile_id: str, position: int) -> StoredSchedule | None:
        """The profile's schedule at `position` (its trace's place among the upload's files), None where none: one
        row a read, so that a caller holds one encoded schedule at a time."""
        query = select(profile_schedules.c.ops, profile_schedules.c.steps, profile_schedules.c.schedule).where(
            profile_schedules.c.profile_id == profile_id, profile_schedules.c.position == position
        )
        async with self._engine.connect() as connection:
            row = (await connection.execute(query)).one_or_none()
        return None if row is None else StoredSchedule(row[0], row[1], bytes(row[2]))

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
