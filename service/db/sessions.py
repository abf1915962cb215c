"""Sign-in sessions of the pages: made by `POST /sign-in`, read on every page request, ended by sign-out, expiry or
the revocation of their token."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from worthit.service.db.errors import domain_errors
from worthit.service.db.models import Base
from worthit.service.db.writer import GroupCommitWriter
from worthit.service.tokens.model import GRANTS, Principal

__all__ = ["SessionStore", "page_sessions"]

page_sessions = Base.metadata.tables["page_sessions"]
_tokens = Base.metadata.tables["tokens"]


@domain_errors
class SessionStore:
    """Sessions by the digest of their id (the id itself lives only in the browser's cookie)."""

    def __init__(self, engine: AsyncEngine, writer: GroupCommitWriter) -> None:
        self._engine = engine
        self._writer = writer

    async def create(self, id_hash: str, token_id: str, lasts: timedelta) -> datetime:
        """Store a session of `token_id` ending `lasts` from now, and drop the ones already ended; when it ends."""
        now = datetime.now(UTC)
        expires_at = now + lasts

        def op(connection: Connection) -> None:
            # Expired rows would open nothing, but would pile up: each sign-in clears them (an indexed range).
            connection.execute(delete(page_sessions).where(page_sessions.c.expires_at <= now))
            connection.execute(
                insert(page_sessions).values(id_hash=id_hash, token_id=token_id, created_at=now, expires_at=expires_at)
            )

        await self._writer.submit(op)
        return expires_at

    async def find(self, id_hash: str) -> Principal | None:
        """The token of a session that has not ended, when the token is not revoked (one indexed read)."""
        query = (
            select(_tokens.c.id, _tokens.c.name, _tokens.c.scopes, page_sessions.c.expires_at)
            .join(_tokens, _tokens.c.id == page_sessions.c.token_id)
            .where(page_sessions.c.id_hash == id_hash, _tokens.c.revoked_at.is_(None))
        )
        async with self._engine.connect() as connection:
            row = (await connection.execute(query)).first()
        if row is None or _aware(row.expires_at) <= datetime.now(UTC):
            return None
        return Principal(id=row.id, name=row.name, scopes=GRANTS.get(row.scopes, frozenset()))

    async def end(self, id_hash: str) -> None:
        """Sign out: the session opens nothing from now on, whatever the browser keeps."""

        def op(connection: Connection) -> None:
            connection.execute(delete(page_sessions).where(page_sessions.c.id_hash == id_hash))

        await self._writer.submit(op)


def _aware(moment: datetime) -> datetime:
    """SQLite gives back naive datetimes (stored in UTC)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
