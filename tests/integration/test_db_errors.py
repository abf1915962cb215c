"""A PostgreSQL connection lost in the middle of an operation is reported as dropped, on a real server: not as a
database that refuses writes ("read-only, or out of space"), which sends an operator looking in the wrong place."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from tests.harness import admin, migrated
from worthit.service.db.errors import DROPPED, translated
from worthit.service.errors import Unavailable

pytestmark = pytest.mark.postgres


def test_a_connection_ended_by_the_server_is_said_to_have_dropped(postgres_url: str) -> None:
    async def run() -> Unavailable:
        async with migrated(postgres_url) as (engine, _), engine.connect() as connection:
            pid = (await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one()
            await admin(f"SELECT pg_terminate_backend({pid})")
            with pytest.raises(Unavailable) as raised, translated():
                await connection.execute(text("SELECT 1"))
            return raised.value

    error = asyncio.run(run())
    assert str(error) == DROPPED
