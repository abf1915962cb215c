"""Group commit: one writer task, many requests' writes in one transaction, each acknowledged after its commit.

A commit costs a disk sync (SQLite, synchronous=FULL) or a round trip and a WAL flush (PostgreSQL). Paying it once
per request caps throughput; paying it once per batch does not weaken the promise, because no caller hears
"done" before the transaction holding its write has committed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 - an item, as in the typing docs


@dataclass(frozen=True, slots=True)
class Batched(Generic[I, T]):
    """A write that shares one statement with its neighbours of the same `key` (e.g. one multi-row INSERT).

    `run` takes the items of consecutive writes with the same key and returns one result per item, in order.
    """

    key: str
    run: Callable[[AsyncConnection, list[Any]], Awaitable[list[Any]]]
    item: I


WriteOp = Callable[[AsyncConnection], Awaitable[Any]] | Batched[Any, Any]

log = logging.getLogger("worthit.writer")


class WriterClosed(RuntimeError):
    """The writer is shutting down and takes no more work."""


class GroupCommitWriter:
    """Serialises writes through one connection and commits them in batches of up to `max_batch`."""

    def __init__(self, engine: AsyncEngine, *, max_batch: int = 256) -> None:
        self._engine = engine
        self._max_batch = max_batch
        self._queue: asyncio.Queue[tuple[WriteOp, asyncio.Future[Any]] | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="worthit-writer")

    async def close(self) -> None:
        """Finish what was submitted, then stop."""
        self._closing = True
        if self._task is not None:
            await self._queue.put(None)
            await self._task
            self._task = None

    async def submit(self, op: Callable[[AsyncConnection], Awaitable[T]] | Batched[Any, T]) -> T:
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
            while len(batch) < self._max_batch and not self._queue.empty():
                more = self._queue.get_nowait()
                if more is None:
                    stop = True
                    continue
                batch.append(more)
            if batch:
                await self._commit(batch)

    async def _commit(self, batch: list[tuple[WriteOp, asyncio.Future[Any]]]) -> None:
        live = [(op, future) for op, future in batch if not future.cancelled()]
        try:
            results = await self._transaction(live)
        except Exception:
            for op, future in live:
                try:
                    (result,) = await self._transaction([(op, future)])
                except Exception as exc:
                    if not future.done():
                        future.set_exception(exc)
                else:
                    if not future.done():
                        future.set_result(result)
            return
        for (_, future), result in zip(live, results, strict=True):
            if not future.done():
                future.set_result(result)

    async def _transaction(self, ops: list[tuple[WriteOp, asyncio.Future[Any]]]) -> list[Any]:
        results: list[Any] = []
        async with self._engine.begin() as connection:
            start = 0
            while start < len(ops):
                op = ops[start][0]
                if isinstance(op, Batched):
                    end = start + 1
                    while end < len(ops) and isinstance(other := ops[end][0], Batched) and other.key == op.key:
                        end += 1
                    items = [batched.item for batched, _ in ops[start:end]]  # type: ignore[union-attr]
                    results.extend(await op.run(connection, items))
                    start = end
                else:
                    results.append(await op(connection))
                    start += 1
        return results
