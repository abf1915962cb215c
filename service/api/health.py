"""Liveness and readiness probes."""

from __future__ import annotations

import asyncio

from litestar import get
from litestar.datastructures import State
from sqlalchemy import text

from worthit.service.db.migrate import head_revision, schema_serves
from worthit.service.http.problems import Unavailable, problem_responses
from worthit.service.records import Health, Ready

# A probe must answer before its caller gives up, even when the database is slow to answer or to refuse.
READY_TIMEOUT_SECONDS = 2.0


@get("/healthz", tags=["operations"], opt={"scope": "public"})
async def healthz() -> Health:
    """The process is up (no dependency is checked)."""
    return Health(status="ok")


@get("/readyz", tags=["operations"], opt={"scope": "public"}, responses=problem_responses())
async def readyz(state: State) -> Ready:
    """The database answers and its schema is the one this code expects; 503 otherwise."""
    try:
        async with asyncio.timeout(READY_TIMEOUT_SECONDS), state.engine.connect() as connection:
            revision = (await connection.execute(text("SELECT version_num FROM alembic_version"))).scalar()
    except Exception as exc:
        raise Unavailable(f"The database does not answer: {type(exc).__name__}") from exc
    if not schema_serves(revision):
        raise Unavailable(f"The database schema is at {revision}, this code needs {head_revision()}")
    return Ready(status="ready", database=state.engine.dialect.name, schema_revision=revision)
