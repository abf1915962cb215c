"""Alembic owns the schema: one head, a clean round trip, and models that match what the migrations make."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect

from tests.harness import ROOT
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


def test_an_upgrade_at_head_runs_nothing_of_alembic_and_one_behind_migrates(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every start migrates first: at head that is one look at the version table; a revision behind, Alembic runs."""
    ran: list[str] = []
    upgrade = command.upgrade
    monkeypatch.setattr(command, "upgrade", lambda config, revision: ran.append(revision) or upgrade(config, revision))

    async def run() -> None:
        engine = create_engine(Settings(database_url=sqlite_url))
        try:
            await migrate.upgrade(engine)
            assert ran == ["head"]
            await migrate.upgrade(engine)
            assert ran == ["head"], "at head: nothing to run"
            await migrate.downgrade(engine, "-1")
            await migrate.upgrade(engine)
            assert ran == ["head", "head"]
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


def test_the_alembic_command_line_migrates_the_configured_database(database_url: str, tmp_path: Path) -> None:
    """`alembic upgrade head` from the checkout (pyproject.toml's [tool.alembic]) brings a fresh database to head, on
    the database of WORTHIT_DATABASE_URL; `alembic current` then reports the head, and `downgrade base` empties it."""
    alembic = Path(sys.executable).parent / "alembic"
    env = {key: value for key, value in os.environ.items() if not key.startswith("WORTHIT_")}
    env["WORTHIT_DATABASE_URL"] = database_url

    def run(*args: str) -> str:
        done = subprocess.run(
            [str(alembic), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr

    run("upgrade", "head")
    head = migrate.head_revision()
    assert head is not None
    assert f"{head} (head)" in run("current")
    run("downgrade", "base")

    async def tables() -> set[str]:
        engine = create_engine(Settings(database_url=database_url))
        try:
            async with engine.connect() as connection:
                return await connection.run_sync(_tables)
        finally:
            await engine.dispose()

    assert asyncio.run(tables()) <= {"alembic_version"}


def test_the_team_column_is_filled_from_the_documents_stored_before_it(database_url: str) -> None:
    """0009 copies each decision's `proposal.team` out of its document (in batches), so `?team=` finds decisions
    made before the column existed; a decision without a team stays NULL."""
    from datetime import UTC, datetime

    from sqlalchemy import text

    async def run() -> None:
        engine = create_engine(Settings(database_url=database_url))
        try:
            await migrate.upgrade(engine, "0008")
            rows = [
                (
                    f"00000000-0000-7000-8000-{i:012d}",
                    {"proposal": {"team": f"team-{i % 3}"}} if i % 4 else {"proposal": {}},
                )
                for i in range(1203)  # more than two batches of 500
            ]
            async with engine.begin() as connection:
                await connection.execute(
                    text(
                        "INSERT INTO decisions (id, created_at, verdict, policy_name, policy_version, source, document)"
                        " VALUES (:id, :at, 'fund', 'default', 1, 'api', :document)"
                    ),
                    [
                        {
                            "id": id_,
                            "at": datetime(2026, 12, 1, tzinfo=UTC),
                            "document": msgspec.json.encode(doc).decode(),
                        }
                        for id_, doc in rows
                    ],
                )
            await migrate.upgrade(engine)
            async with engine.connect() as connection:
                found = dict((await connection.execute(text("SELECT id, team FROM decisions"))).all())
            assert found == {id_: doc["proposal"].get("team") for id_, doc in rows}
            assert sum(team is None for team in found.values()) == len(range(0, 1203, 4))
        finally:
            await engine.dispose()

    asyncio.run(run())
