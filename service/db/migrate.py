"""Apply Alembic migrations from code: on start, from `worthit migrate`, and in tests."""

from __future__ import annotations

from functools import cache
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


@cache
def _scripts() -> tuple[str | None, frozenset[str]]:
    """The head and every revision of this code's migration scripts. Read once per process: the scripts are the
    code's own and never change under it, and reading them executes every script (every /readyz asked for them)."""
    scripts = ScriptDirectory.from_config(alembic_config())
    return scripts.get_current_head(), frozenset(script.revision for script in scripts.walk_revisions())


def head_revision() -> str | None:
    return _scripts()[0]


def schema_serves(current: str | None) -> bool:
    """Whether this code can serve on a database at revision `current`.

    At head: yes. At a revision this code knows but is not head (older): no. At a revision this code does not know:
    yes, as a newer schema that a rolling deploy's migration job has already applied — migrations here only add
    (expand first, contract in a later release), so old code keeps working on the newer schema until it is replaced.
    """
    head, known = _scripts()
    if current == head:
        return True
    if current is None:
        return False
    return current not in known


def _upgrade(connection: Connection, revision: str) -> None:
    if revision == "head" and _current(connection) == head_revision():
        # Every start and every `worthit token` migrates first; at head, a look at the version table is all it takes
        # (Alembic's upgrade would load its environment and every script to find nothing to do). A replica that
        # reads an older revision here while another migrates goes on to wait for the migration lock (env.py).
        return
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
