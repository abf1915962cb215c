"""Alembic owns the schema: one head, a clean round trip, and models that match what the migrations make."""

from __future__ import annotations

import asyncio

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect

from worthit.service.db import migrate
from worthit.service.db.engine import create_engine
from worthit.service.db.models import Base
from worthit.service.settings import Settings


def test_single_head() -> None:
    assert len(ScriptDirectory.from_config(migrate.alembic_config()).get_heads()) == 1


def _diff(connection: Connection) -> list[object]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


def _tables(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


def test_upgrade_downgrade_upgrade_round_trip(database_url: str) -> None:
    """Upgrade → downgrade to base → upgrade on SQLite and PostgreSQL; the models match the result."""

    async def run() -> None:
        engine = create_engine(Settings(database_url=database_url))
        try:
            await migrate.upgrade(engine)
            assert await migrate.current_revision(engine) == migrate.head_revision()
            await migrate.downgrade(engine, "base")
            async with engine.connect() as connection:
                assert await connection.run_sync(_tables) <= {"alembic_version"}
            await migrate.upgrade(engine)
            async with engine.connect() as connection:
                assert {"decisions", "policies"} <= await connection.run_sync(_tables)
                assert await connection.run_sync(_diff) == []
            await migrate.upgrade(engine)  # idempotent
            assert await migrate.current_revision(engine) == migrate.head_revision()
        finally:
            await engine.dispose()

    asyncio.run(run())


def test_which_schemas_this_code_serves_on() -> None:
    """Head: yes; an older known revision or an empty database: no; an unknown (newer) revision: yes."""
    assert migrate.schema_serves(migrate.head_revision())
    assert not migrate.schema_serves(None)
    assert not migrate.schema_serves("0001")
    assert migrate.schema_serves("9999_from_a_newer_release")
