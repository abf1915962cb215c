"""The async engine, with the per-connection SQLite settings that keep an acknowledged write."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from worthit.service.settings import Settings

__all__ = ["SQLITE_PRAGMAS", "create_engine"]

# WAL persists in the file; the rest must be set on every connection. FULL syncs the WAL on every commit, so a
# commit that returned survives a killed process and a power cut alike; group commit pays it once per batch.
SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA busy_timeout=10000",
)


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    for pragma in SQLITE_PRAGMAS:
        cursor.execute(pragma)
    cursor.close()


def create_engine(settings: Settings, *, null_pool: bool = False, **kwargs: Any) -> AsyncEngine:
    """An async engine for the configured database (aiosqlite for SQLite files, asyncpg for PostgreSQL).

    `null_pool`: a connection per use, closed after it (one-off commands such as a migration run).
    """
    url = settings.async_database_url
    pooling: dict[str, Any] = {"poolclass": NullPool} if null_pool else {"pool_size": 4, "max_overflow": 4}
    if url.startswith("sqlite"):
        engine = create_async_engine(url, **pooling, **kwargs)
        event.listen(engine.sync_engine, "connect", _sqlite_on_connect)
        return engine
    if not null_pool:
        pooling = {"pool_size": 10, "max_overflow": 10, "pool_pre_ping": True}
    return create_async_engine(url, **pooling, **kwargs)
