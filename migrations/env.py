"""Alembic environment. Run through `service.db.migrate` (which hands in a connection: the server's start and
`worthit migrate`) or the alembic command line from the checkout, configured by pyproject.toml's `[tool.alembic]`:
`alembic upgrade head` migrates the database of WORTHIT_DATABASE_URL (or DATABASE_URL; default ./worthit.db), and
`alembic -x url=postgresql://… upgrade head` another one."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import Connection, text

from worthit.service.db.models import Base
from worthit.service.settings import Settings

# An arbitrary constant: the key of the PostgreSQL advisory lock held while migrating, so replicas that start
# at once take turns and all but the first find nothing to do.
MIGRATION_LOCK_KEY = 7_310_421_001

config = context.config
target_metadata = Base.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        render_as_batch=connection.dialect.name == "sqlite",
        transaction_per_migration=False,
    )


def run_with_connection(connection: Connection) -> None:
    _configure(connection)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        context.run_migrations()


def _url() -> str:
    """`-x url=…`, else an ini file's `sqlalchemy.url` (when run with one), else the server's own setting."""
    given = context.get_x_argument(as_dictionary=True).get("url")
    if given:
        return given
    if config.file_config.has_option(config.config_ini_section, "sqlalchemy.url"):
        return config.get_main_option("sqlalchemy.url") or Settings.from_env().database_url
    return Settings.from_env().database_url


async def _run_online() -> None:
    from worthit.service.db.engine import create_engine

    url = _url()
    engine = create_engine(Settings.from_env(database_url=url), null_pool=True)
    async with engine.connect() as connection:
        await connection.run_sync(run_with_connection)
        await connection.commit()
    await engine.dispose()


def run_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
elif (given := config.attributes.get("connection")) is not None:
    run_with_connection(given)
else:
    asyncio.run(_run_online())
