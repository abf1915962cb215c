"""TtlCache: concurrent misses share one load, a local write wins over a load in flight, failures reach every caller."""

from __future__ import annotations

import asyncio
import gc

import pytest

from worthit.service.cache import TtlCache


class Source:
    """A load that counts its calls and finishes only when told to."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = asyncio.Event()
        self.value = "loaded"

    async def load(self) -> str:
        self.calls += 1
        await self.release.wait()
        return self.value


def test_concurrent_misses_share_one_load_and_the_entry_serves_until_it_expires() -> None:
    async def run() -> None:
        cache: TtlCache[str, str] = TtlCache(60)
        source = Source()
        waiting = [asyncio.ensure_future(cache.get("k", source.load)) for _ in range(32)]
        await asyncio.sleep(0)
        source.release.set()
        assert await asyncio.gather(*waiting) == ["loaded"] * 32
        assert source.calls == 1
        assert await cache.get("k", source.load) == "loaded"
        assert source.calls == 1

    asyncio.run(run())


def test_an_expired_entry_is_loaded_again() -> None:
    async def run() -> None:
        cache: TtlCache[str, str] = TtlCache(0)
        source = Source()
        source.release.set()
        await cache.get("k", source.load)
        await cache.get("k", source.load)
        assert source.calls == 2

    asyncio.run(run())


def test_a_put_during_a_load_is_not_replaced_by_the_older_load() -> None:
    async def run() -> None:
        cache: TtlCache[str, str] = TtlCache(60)
        source = Source()
        reader = asyncio.ensure_future(cache.get("k", source.load))
        await asyncio.sleep(0)
        cache.put("k", "written here")  # e.g. a PUT on this process while the read was in flight
        source.release.set()
        assert await reader == "loaded"  # the caller gets what it read
        assert await cache.get("k", source.load) == "written here"  # the cache keeps the newer write
        assert source.calls == 1

    asyncio.run(run())


def test_a_failed_load_fails_every_caller_and_is_not_cached() -> None:
    async def run() -> None:
        cache: TtlCache[str, str] = TtlCache(60)
        calls = 0

        async def failing() -> str:
            nonlocal calls
            calls += 1
            await asyncio.sleep(0)
            raise LookupError("no such thing")

        results = await asyncio.gather(*(cache.get("k", failing) for _ in range(4)), return_exceptions=True)
        assert [type(result) for result in results] == [LookupError] * 4
        assert calls == 1
        with pytest.raises(LookupError):
            await cache.get("k", failing)
        assert calls == 2

    asyncio.run(run())


def test_callers_that_give_up_neither_cancel_the_load_nor_leave_an_unretrieved_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def run() -> None:
        cache: TtlCache[str, str] = TtlCache(60)
        source = Source()
        impatient = asyncio.ensure_future(cache.get("k", source.load))
        patient = asyncio.ensure_future(cache.get("k", source.load))
        await asyncio.sleep(0)
        impatient.cancel()
        source.release.set()
        assert await patient == "loaded"
        assert impatient.cancelled()

        async def failing() -> str:
            await asyncio.sleep(0.01)
            raise LookupError("nobody is listening")

        alone = asyncio.ensure_future(cache.get("other", failing))
        await asyncio.sleep(0)
        alone.cancel()
        await asyncio.sleep(0.05)  # the load fails after its only caller left

    asyncio.run(run())
    gc.collect()
    assert "exception was never retrieved" not in caplog.text


def test_the_table_is_bounded() -> None:
    async def run() -> None:
        cache: TtlCache[int, int] = TtlCache(60, max_entries=3)
        loads = 0

        async def load() -> int:
            nonlocal loads
            loads += 1
            return loads

        for key in range(5):
            await cache.get(key, load)
        assert len(cache._entries) <= 3

    asyncio.run(run())
