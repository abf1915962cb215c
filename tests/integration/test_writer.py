"""The group-commit writer on real databases: batches, isolation of a bad write, and SQLite's write lock."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.exc import IntegrityError, OperationalError

from tests.conftest import migrated
from worthit.service.db.writer import Batched, GroupCommitWriter


def with_writer(database_url: str, body: Callable[[GroupCommitWriter, Any], Awaitable[None]], **options: Any) -> None:
    async def run() -> None:
        async with migrated(database_url, **options) as (engine, writer):
            async with engine.begin() as connection:
                await connection.execute(text("CREATE TABLE scratch (n INTEGER PRIMARY KEY)"))
            await body(writer, engine)

    asyncio.run(run())


def insert(n: int) -> Callable[[Connection], int]:
    def op(connection: Connection) -> int:
        connection.execute(text("INSERT INTO scratch (n) VALUES (:n)"), {"n": n})
        return n

    return op


def insert_many(connection: Connection, items: list[int]) -> list[int]:
    connection.execute(text("INSERT INTO scratch (n) VALUES (:n)"), [{"n": n} for n in items])
    return [n * 10 for n in items]


async def stored(engine: Any) -> list[int]:
    async with engine.connect() as connection:
        return [row[0] for row in await connection.execute(text("SELECT n FROM scratch ORDER BY n"))]


def test_concurrent_writes_share_batches_and_each_hears_its_own_result(database_url: str) -> None:
    async def body(writer: GroupCommitWriter, engine: Any) -> None:
        ops: list[Any] = [Batched("scratch", insert_many, n) if n % 2 else insert(n) for n in range(1, 41)]
        results = await asyncio.gather(*(writer.submit(op) for op in ops))
        assert results == [n * 10 if n % 2 else n for n in range(1, 41)]
        assert await stored(engine) == list(range(1, 41))

    with_writer(database_url, body)


def test_a_failing_write_fails_alone(database_url: str) -> None:
    async def body(writer: GroupCommitWriter, engine: Any) -> None:
        await writer.submit(insert(7))
        results = await asyncio.gather(
            writer.submit(insert(1)), writer.submit(insert(7)), writer.submit(insert(2)), return_exceptions=True
        )
        assert results[0] == 1
        assert results[2] == 2
        assert isinstance(results[1], IntegrityError)
        assert await stored(engine) == [1, 2, 7]
        assert await writer.submit(insert(3)) == 3  # the writer goes on after a failed batch

    with_writer(database_url, body)


def test_sqlite_write_lock_held_elsewhere_waits_without_blocking_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"

    async def body(writer: GroupCommitWriter, engine: Any) -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process's writer, mid-transaction
        write = asyncio.ensure_future(writer.submit(insert(1)))
        for _ in range(20):
            await asyncio.sleep(0.005)  # the loop turns while the write waits (busy_timeout would block it)
        assert not write.done()
        other.execute("COMMIT")
        other.close()
        assert await asyncio.wait_for(write, 5) == 1
        assert await stored(engine) == [1]

    with_writer(f"sqlite:///{path}", body)


def test_sqlite_write_lock_never_released_fails_the_write_after_the_wait(tmp_path: Path) -> None:
    path = tmp_path / "stuck.db"

    async def body(writer: GroupCommitWriter, engine: Any) -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(OperationalError, match="locked"):
                await writer.submit(insert(1))
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert await writer.submit(insert(2)) == 2
        assert await stored(engine) == [2]

    with_writer(f"sqlite:///{path}", body, lock_wait_seconds=0.2)
