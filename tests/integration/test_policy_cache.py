"""The policy cache on a real database: one read per expiry, however many requests miss at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from tests.conftest import migrated
from worthit.service.db.policies import PolicyStore
from worthit.service.errors import NotFound
from worthit.service.policies.service import PolicyService


class CountingStore(PolicyStore):
    """The real store, counting how often the newest version is read."""

    reads = 0

    async def latest(self, name: str, count: int = 1) -> list[tuple[int, str]]:
        self.reads += 1
        return await super().latest(name, count)


def with_service(
    database_url: str, body: Callable[[PolicyService, CountingStore], Awaitable[None]], cache_seconds: float = 5.0
) -> None:
    async def run() -> None:
        async with migrated(database_url) as (engine, writer):
            store = CountingStore(engine, writer)
            await body(PolicyService(store, cache_seconds=cache_seconds), store)

    asyncio.run(run())


def test_concurrent_misses_share_one_read(database_url: str) -> None:
    async def body(service: PolicyService, store: CountingStore) -> None:
        await service.put("team", {"horizon_months": 9})  # with a TTL of 0, cached and expired at once
        found = await asyncio.gather(*(service.get("team") for _ in range(32)))
        assert {policy.version for policy in found} == {1}
        assert {policy.horizon_months for policy in found} == {9}
        assert store.reads == 1
        await service.get("team")
        assert store.reads == 2  # the next miss reads again

    with_service(database_url, body, cache_seconds=0.0)


def test_a_caller_that_gives_up_does_not_cancel_the_read_for_the_others(sqlite_url: str) -> None:
    async def body(service: PolicyService, store: CountingStore) -> None:
        impatient = asyncio.ensure_future(service.get("default"))
        patient = asyncio.ensure_future(service.get("default"))
        await asyncio.sleep(0)
        impatient.cancel()
        assert (await patient).name == "default"
        assert impatient.cancelled()
        assert store.reads == 1

    with_service(sqlite_url, body)


def test_an_unknown_name_fails_every_waiting_caller(sqlite_url: str) -> None:
    async def body(service: PolicyService, store: CountingStore) -> None:
        results = await asyncio.gather(*(service.get("nobody") for _ in range(4)), return_exceptions=True)
        assert all(isinstance(result, NotFound) for result in results)
        assert store.reads == 1

    with_service(sqlite_url, body)
