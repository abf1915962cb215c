"""Group commit: one writer task, many requests' writes in one transaction, each acknowledged after its commit.

A commit costs a disk sync (SQLite, synchronous=FULL) or a round trip and a WAL flush (PostgreSQL). Paying it once
per request caps throughput; paying it once per batch does not weaken the promise, because no caller hears
"done" before the transaction holding its write has committed.

Writes are plain synchronous functions of a SQLAlchemy `Connection`, so one batch runs as one call:
- SQLite: on the event loop itself, through the stdlib driver on one connection held for the writer's life. A batch
  of 11 decisions costs about 0.43 ms here, most of it the sync; through aiosqlite, each statement's hop to the
  driver's thread and back cost more than that, and under load those threads fought the loop for the GIL. The
  write lock is taken with `BEGIN IMMEDIATE` without waiting inside SQLite: while another process holds it, the
  writer yields to the loop and tries again, so a busy file never stalls the loop.
- PostgreSQL: inside `AsyncConnection.run_sync`, each statement awaiting asyncpg without blocking the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from worthit.service.db.engine import SQLITE_PRAGMAS

__all__ = [
    "LOCK_WAIT_SECONDS",
    "PROBE_BYTES",
    "Batched",
    "GroupCommitWriter",
    "WriteFailure",
    "WriteOp",
    "WriterClosed",
    "sqlite_writer_engine",
]

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 - an item, as in the typing docs

# How long a batch waits for another process to release SQLite's write lock before it fails (as busy_timeout did).
LOCK_WAIT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Batched(Generic[I, T]):
    """A write that shares one statement with its neighbours of the same `key` (e.g. one multi-row INSERT).

    `run` takes the items of consecutive writes with the same key and returns one result per item, in order.
    """

    key: str
    run: Callable[[Connection, list[Any]], list[Any]]
    item: I


WriteOp = Callable[[Connection], Any] | Batched[Any, Any]


class WriterClosed(RuntimeError):
    """The writer is shutting down and takes no more work."""


@dataclass(frozen=True, slots=True)
class WriteFailure:
    """The writer's most recent transaction failed for the database's sake (not the data's), and none has committed
    since: a full disk, a read-only file or database, a lost connection."""

    at: datetime
    error: str


class GroupCommitWriter:
    """Serialises writes through one connection and commits them in batches of up to `max_batch`."""

    def __init__(
        self, engine: AsyncEngine, *, max_batch: int = 256, lock_wait_seconds: float = LOCK_WAIT_SECONDS
    ) -> None:
        self._engine = engine
        self._max_batch = max_batch
        self._lock_wait = lock_wait_seconds
        self._queue: asyncio.Queue[tuple[WriteOp, asyncio.Future[Any]] | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._connection: Connection | None = None  # SQLite: the writer's own connection, on its own engine
        self._held: AsyncConnection | None = None  # PostgreSQL: a pooled connection, kept while it works
        self.failure: WriteFailure | None = None

    async def start(self) -> None:
        if self._engine.dialect.name == "sqlite":
            self._connection = sqlite_writer_engine(self._engine).connect()
        self._task = asyncio.create_task(self._run(), name="worthit-writer")

    async def close(self) -> None:
        """Finish what was submitted, then stop."""
        self._closing = True
        if self._task is not None:
            await self._queue.put(None)
            await self._task
            self._task = None
        await self._release()
        if self._connection is not None:
            self._connection.close()
            self._connection.engine.dispose()
            self._connection = None

    async def probe(self) -> None:
        """One write of new data through the writer, as real writes are: after a failure, whether the database takes
        writes again. Its success clears `failure`, as any committed write does; readiness asks for it so that a
        replica taken out of rotation for failing writes can come back without traffic.

        It stores a row of PROBE_BYTES (incompressible, so PostgreSQL cannot shrink it) and deletes it in the same
        transaction: the commit still writes its pages (SQLite's WAL frames, PostgreSQL's WAL records). Rewriting a
        value in place, as the probe once did, fits in a page already written and succeeded on a full disk while
        every decision failed."""
        await self.submit(_probe)

    async def submit(self, op: Callable[[Connection], T] | Batched[Any, T]) -> T:
        """Run `op` in the next batch; return its result once the batch has committed."""
        if self._closing or self._task is None:
            raise WriterClosed("the writer is not running")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((op, future))
        return await future

    async def _run(self) -> None:
        stop = False
        while not stop:
            item = await self._queue.get()
            batch: list[tuple[WriteOp, asyncio.Future[Any]]] = []
            if item is None:
                stop = True
            else:
                batch.append(item)
            # Before paying for a sync, let the requests already in progress reach the queue: yield to the loop
            # for as long as the batch keeps growing (a lone write waits one turn of the loop).
            waiting = -1
            while waiting < self._queue.qsize() < self._max_batch:
                waiting = self._queue.qsize()
                await asyncio.sleep(0)
            while len(batch) < self._max_batch and not self._queue.empty():
                more = self._queue.get_nowait()
                if more is None:
                    stop = True
                    continue
                batch.append(more)
            if batch:
                await self._commit(batch)

    async def _commit(self, batch: list[tuple[WriteOp, asyncio.Future[Any]]]) -> None:
        live = [op for op, future in batch if not future.cancelled()]
        futures = [future for _, future in batch if not future.cancelled()]
        try:
            results = await self._transaction(live)
        except Exception:
            # One bad write must not fail its neighbours: run each alone, so only it hears the error.
            for op, future in zip(live, futures, strict=True):
                try:
                    (result,) = await self._transaction([op])
                except Exception as exc:
                    if not future.done():
                        future.set_exception(exc)
                else:
                    if not future.done():
                        future.set_result(result)
            return
        for future, result in zip(futures, results, strict=True):
            if not future.done():
                future.set_result(result)

    async def _transaction(self, ops: list[WriteOp]) -> list[Any]:
        """One transaction, remembering whether the database took it (readiness reports a writer that fails)."""
        try:
            results = await self._one_transaction(ops)
        except (DBAPIError, OSError) as exc:
            # A constraint or a value the database rejects is the write's fault, not the database's.
            if not isinstance(exc, IntegrityError | DataError):
                cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
                message = " ".join(str(cause).split())[:200] or type(cause).__name__
                self.failure = WriteFailure(at=datetime.now(UTC), error=f"{type(cause).__name__}: {message}")
            raise
        self.failure = None
        return results

    async def _one_transaction(self, ops: list[WriteOp]) -> list[Any]:
        if self._connection is None:
            return await self._async_transaction(ops)
        connection = self._connection
        await _begin_immediate(connection, self._lock_wait)
        try:
            results = _apply(connection, ops)
            connection.exec_driver_sql("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):  # a failed COMMIT may have ended the transaction already
                connection.exec_driver_sql("ROLLBACK")
            connection.rollback()
            raise
        connection.commit()  # ends SQLAlchemy's own (autocommit) transaction; SQLite's has committed above
        return results

    async def _async_transaction(self, ops: list[WriteOp]) -> list[Any]:
        # One connection held across batches: a checkout per batch (with its pre-ping round trip) cost half again
        # the CPU of the batch itself. Any failure returns it to the pool, and the next batch checks out afresh.
        if self._held is None:
            self._held = await self._engine.connect()
        try:
            async with self._held.begin():
                return await self._held.run_sync(_apply, ops)
        except BaseException:
            await self._release()
            raise

    async def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            with contextlib.suppress(Exception):
                await held.close()


def _apply(connection: Connection, ops: list[WriteOp]) -> list[Any]:
    """Run `ops` in order on `connection`; consecutive `Batched` ops of one key run as one call."""
    results: list[Any] = []
    start = 0
    while start < len(ops):
        op = ops[start]
        if isinstance(op, Batched):
            end = start + 1
            while end < len(ops) and isinstance(other := ops[end], Batched) and other.key == op.key:
                end += 1
            results.extend(op.run(connection, [batched.item for batched in ops[start:end]]))  # type: ignore[union-attr]
            start = end
        else:
            results.append(op(connection))
            start += 1
    return results


async def _begin_immediate(connection: Connection, wait_seconds: float) -> None:
    """Take SQLite's write lock, yielding to the loop (not sleeping in SQLite) while another process holds it."""
    deadline = time.monotonic() + wait_seconds
    pause = 0.0005
    while True:
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            return
        except OperationalError as exc:
            busy = isinstance(exc.orig, sqlite3.OperationalError) and exc.orig.sqlite_errorcode & 0xFF in _BUSY
            if not busy or time.monotonic() > deadline:
                raise
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.01)


_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def sqlite_writer_engine(engine: AsyncEngine) -> Engine:
    """A synchronous stdlib-sqlite engine on the same file, for the writer's one connection.

    The driver is in autocommit mode so that the writer issues BEGIN IMMEDIATE and COMMIT itself, and SQLite never
    waits for a lock (busy_timeout 0): `_begin_immediate` waits on the loop instead.
    """
    sync = create_engine(
        engine.url.set(drivername="sqlite+pysqlite"), isolation_level="AUTOCOMMIT", pool_size=1, max_overflow=0
    )

    @event.listens_for(sync, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        for pragma in (*SQLITE_PRAGMAS, "PRAGMA busy_timeout=0"):
            dbapi_connection.execute(pragma)

    return sync


# Larger than most decisions (a few KB to ~280 KB at the body limit): a disk that takes the probe takes most writes.
PROBE_BYTES = 64 * 1024


def _probe(connection: Connection) -> None:
    key = f"worthit-readiness-probe:{secrets.token_hex(16)}"  # replicas probing at once never meet
    parameters = {"key": key, "route": "/readyz", "document": secrets.token_hex(PROBE_BYTES // 2)}
    connection.execute(
        text(
            "INSERT INTO idempotency_keys (key, route, request_hash, status_code, document, created_at) "
            "VALUES (:key, :route, '', 0, :document, CURRENT_TIMESTAMP)"
        ),
        parameters,
    )
    connection.execute(text("DELETE FROM idempotency_keys WHERE key = :key AND route = :route"), parameters)
