"""Apply Alembic migrations from code: on start, from `worthit migrate`, and in tests."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

import worthit.migrations as migrations

__all__ = ["alembic_config", "current_revision", "downgrade", "head_revision", "schema_serves", "upgrade"]


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__).parent))
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def schema_serves(current: str | None) -> bool:
    """Whether this code can serve on a database at revision `current`.

    At head: yes. At a revision this code knows but is not head (older): no. At a revision this code does not know:
    yes, as a newer schema that a rolling deploy's migration job has already applied — migrations here only add
    (expand first, contract in a later release), so old code keeps working on the newer schema until it is replaced.
    """
    head = head_revision()
    if current == head:
        return True
    if current is None:
        return False
    known = {script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()}
    return current not in known


def _upgrade(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _downgrade(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.downgrade(config, revision)


def _current(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Bring the database to `revision` (idempotent; serialised across processes on PostgreSQL)."""
    async with engine.begin() as connection:
        await connection.run_sync(_upgrade, revision)


async def downgrade(engine: AsyncEngine, revision: str) -> None:
    async with engine.begin() as connection:
        await connection.run_sync(_downgrade, revision)


async def current_revision(engine: AsyncEngine) -> str | None:
    async with engine.connect() as connection:
        return await connection.run_sync(_current)
