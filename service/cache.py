"""Values read from the database and kept a few seconds per process, read once however many requests miss at once.

Under load an entry expires for every request in flight at the same moment. Reading the store once per request
then means a burst of reads (on PostgreSQL, overflow connections opened to serve them) every TTL, which showed in
the p99. Here the first miss reads and the others wait for that read; the read is shielded, so a caller that gives
up does not cancel it for the rest.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["TtlCache"]

K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    def __init__(self, ttl_seconds: float, *, max_entries: int = 10_000) -> None:
        self._ttl = ttl_seconds
        self._max_entries = max_entries  # bound the table against floods of made-up keys
        self._entries: dict[K, tuple[float, V]] = {}
        self._loading: dict[K, asyncio.Future[V]] = {}
        self._generation: dict[K, int] = {}

    async def get(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        """The cached value of `key`, or what `load()` returns (one call for all concurrent misses of `key`)."""
        entry = self._entries.get(key)
        if entry is not None and time.monotonic() - entry[0] < self._ttl:
            return entry[1]
        loading = self._loading.get(key)
        if loading is None:
            generation = self._generation.get(key, 0)  # now: the task's body starts only on the loop's next turn
            loading = self._loading[key] = asyncio.ensure_future(self._load(key, load, generation))
            loading.add_done_callback(functools.partial(self._loaded, key))
        return await asyncio.shield(loading)

    def put(self, key: K, value: V) -> None:
        """Store `value` now (e.g. what this process just wrote); a read already in flight will not replace it."""
        self._generation[key] = self._generation.get(key, 0) + 1
        self._store(key, time.monotonic(), value)

    def drop(self, key: K) -> None:
        """Forget `key` now (e.g. what this process just deleted); a read already in flight will not restore it."""
        self._generation[key] = self._generation.get(key, 0) + 1
        self._entries.pop(key, None)

    async def _load(self, key: K, load: Callable[[], Awaitable[V]], generation: int) -> V:
        started = time.monotonic()
        value = await load()
        if self._generation.get(key, 0) == generation:
            self._store(key, started, value)
        return value

    def _store(self, key: K, at: float, value: V) -> None:
        if len(self._entries) >= self._max_entries and key not in self._entries:
            self._entries.clear()
            self._generation.clear()
        self._entries[key] = (at, value)

    def _loaded(self, key: K, loading: asyncio.Future[V]) -> None:
        del self._loading[key]
        if not loading.cancelled():
            loading.exception()  # retrieved here too: every caller may have given up by now
