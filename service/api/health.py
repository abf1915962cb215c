"""Liveness and readiness probes."""

from __future__ import annotations

import asyncio
import contextlib

from litestar import get
from litestar.datastructures import State

from worthit.service.api.schemas import Health, Ready
from worthit.service.db.migrate import current_revision, head_revision, schema_serves
from worthit.service.db.writer import WriteFailure
from worthit.service.errors import Unavailable
from worthit.service.http.problems import problem_responses

__all__ = ["READY_TIMEOUT_SECONDS", "healthz", "readyz"]

# A probe must answer before its caller gives up, even when the database is slow to answer or to refuse.
READY_TIMEOUT_SECONDS = 2.0


@get("/healthz", tags=["operations"], opt={"scope": "public"})
async def healthz() -> Health:
    """The process is up (no dependency is checked)."""
    return Health(status="ok")


@get("/readyz", tags=["operations"], opt={"scope": "public"}, responses=problem_responses())
async def readyz(state: State) -> Ready:
    """The database answers, its schema is the one this code expects and its writes succeed; 503 otherwise.

    Writes fail for readiness from the moment one fails for the database's sake (a full disk, a read-only
    database) until one succeeds again; while they fail, each probe tries one write itself, so that recovery needs
    no client traffic.
    """
    try:
        async with asyncio.timeout(READY_TIMEOUT_SECONDS):
            revision = await current_revision(state.engine)
    except Exception as exc:
        raise Unavailable(f"The database does not answer: {type(exc).__name__}") from exc
    if not schema_serves(revision):
        raise Unavailable(f"The database schema is at {revision}, this code needs {head_revision()}")
    failure: WriteFailure | None = state.writer.failure
    if failure is not None:
        # Ask the database whether it takes a write again: a replica out of rotation gets no traffic to find out.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(READY_TIMEOUT_SECONDS):
                await state.writer.probe()
        failure = state.writer.failure
    if failure is not None:
        # The database answers reads but takes no writes (a full disk, a read-only database): not ready.
        raise Unavailable(
            f"Writes are failing: the last one, at {failure.at.isoformat(timespec='seconds')}, failed with "
            f"{failure.error}; none has succeeded since"
        )
    return Ready(status="ready", database=state.engine.dialect.name, schema_revision=revision)
