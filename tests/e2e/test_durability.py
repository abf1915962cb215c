"""Nothing lost: every acknowledged decision survives SIGKILL mid-load; outages answer 503 and recover."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import POSTGRES_URL, Server
from tests.tcp_proxy import Proxy

pytestmark = pytest.mark.e2e

CLIENTS = 16
ACKED_BEFORE_KILL = 60
"""Acknowledged writes to wait for before the kill: a count, not a time (2.5 s of load acknowledged 33 on a loaded
machine, where a test wants more than 50)."""


def proposal(key: str) -> dict[str, object]:
    return {"title": key, "target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}


async def _load(
    url: str, acked: dict[str, dict[str, object]], sent: list[str], stop_at: float, enough: asyncio.Event
) -> None:
    """Writes from `CLIENTS` clients until `stop_at` or the server is gone; `enough` is set once
    `ACKED_BEFORE_KILL` are acknowledged."""

    async def client(number: int) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            n = 0
            while time.monotonic() < stop_at:
                key = f"c{number}-{n}"
                n += 1
                sent.append(key)
                try:
                    response = await http.post("/v1/decisions", json=proposal(key), headers={"idempotency-key": key})
                except httpx.HTTPError:
                    return  # the server is gone: this request was never acknowledged
                if response.status_code in (200, 201):
                    acked[key] = response.json()
                    if len(acked) >= ACKED_BEFORE_KILL:
                        enough.set()

    await asyncio.gather(*(client(number) for number in range(CLIENTS)))


def _all(client: httpx.Client) -> list[dict[str, object]]:
    items: list[dict[str, object]] = []
    cursor = None
    while True:
        page = client.get("/v1/decisions", params={"limit": 200} | ({"cursor": cursor} if cursor else {})).json()
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items


def test_acknowledged_decisions_survive_sigkill_mid_load(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(database_url, workers=2, env={"WORTHIT_RATE_LIMIT": "off"})
    acked: dict[str, dict[str, object]] = {}
    sent: list[str] = []

    async def run() -> None:
        enough = asyncio.Event()
        load = asyncio.create_task(_load(server.url, acked, sent, time.monotonic() + 120, enough))
        await asyncio.wait([load, asyncio.create_task(enough.wait())], return_when=asyncio.FIRST_COMPLETED)
        server.kill()  # SIGKILL to the whole process group while requests are in flight
        await load

    asyncio.run(run())
    assert len(acked) >= ACKED_BEFORE_KILL, "the load reached the server"
    assert len(sent) > len(acked), "requests were in flight at the kill"

    restarted = server_factory(database_url, env={"WORTHIT_RATE_LIMIT": "off"})
    with restarted.client() as client:
        stored = _all(client)
        by_title = {str(item["title"] if "title" in item else item["proposal"]["title"]): item for item in stored}  # type: ignore[index]
        found = [key for key in acked if key in by_title]
        print(f"durability: {len(sent)} sent, {len(acked)} acknowledged, {len(found)} found after SIGKILL")
        assert len(found) == len(acked)
        for decision in acked.values():
            assert client.get(f"/v1/decisions/{decision['id']}").json() == decision, "intact, byte for byte"
        titles = [item["proposal"]["title"] for item in stored]  # type: ignore[index]
        assert len(titles) == len(set(titles)), "no duplicates"
        assert all(item["verdict"] == "fund" and item["statement"] for item in stored), "no half-written rows"
        # Retrying every request that was sent: each key maps to exactly one decision, acknowledged or not.
        for key in sent:
            retry = client.post("/v1/decisions", json=proposal(key), headers={"idempotency-key": key})
            assert retry.status_code in (200, 201)
            if key in acked:
                assert retry.status_code == 200
                assert retry.json()["id"] == acked[key]["id"]
        assert len(_all(client)) == len(set(sent))


@pytest.fixture
def proxied_postgres(postgres_url: str) -> tuple[str, Proxy]:
    host_port = POSTGRES_URL.split("@", 1)[-1].split("/", 1)[0]
    host, _, port = host_port.partition(":")
    proxy = Proxy(host or "127.0.0.1", int(port or 5432))
    database = postgres_url.rsplit("/", 1)[1]
    user = POSTGRES_URL.split("://", 1)[1].split("@", 1)[0]
    yield f"postgresql://{user}@127.0.0.1:{proxy.port}/{database}", proxy  # type: ignore[misc]
    proxy.close()


def test_postgres_down_and_slow_answer_503_and_recover(
    proxied_postgres: tuple[str, Proxy], server_factory: Callable[..., Server]
) -> None:
    url, proxy = proxied_postgres
    server = server_factory(url, env={"WORTHIT_REQUEST_TIMEOUT_SECONDS": "3"})
    with server.client(timeout=15) as client:
        assert client.post("/v1/decisions", json=proposal("before")).status_code == 201
        proxy.down()
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.headers["content-type"].startswith("application/problem+json")
        write = client.post("/v1/decisions", json=proposal("during"))
        assert write.status_code == 503, write.text
        assert write.headers["content-type"].startswith("application/problem+json")
        assert write.headers["retry-after"]
        proxy.up()
        deadline = time.monotonic() + 15
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, "readiness recovers when the database returns"
            time.sleep(0.2)
        assert client.post("/v1/decisions", json=proposal("after")).status_code == 201
        proxy.delay = 5.0  # slower than the request deadline
        slow = client.get("/readyz")
        assert slow.status_code == 503
        slow_write = client.post("/v1/decisions", json=proposal("slow"))
        assert slow_write.status_code == 503
        assert slow_write.headers["content-type"].startswith("application/problem+json")
        proxy.delay = 0.0
        deadline = time.monotonic() + 30
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        titles = {item["proposal"]["title"] for item in _all(client)}
        assert {"before", "after"} <= titles
        assert "during" not in titles


def test_sqlite_locked_by_another_writer_answers_503_then_recovers(
    tmp_path: Path, server_factory: Callable[..., Server]
) -> None:
    database = tmp_path / "w.db"
    server = server_factory(f"sqlite:///{database}", env={"WORTHIT_REQUEST_TIMEOUT_SECONDS": "1"})
    with server.client(timeout=15) as client:
        assert client.post("/v1/decisions", json=proposal("before")).status_code == 201
        blocker = sqlite3.connect(database, isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")
        try:
            blocked = client.post("/v1/decisions", json=proposal("blocked"))
            assert blocked.status_code == 503
            assert blocked.headers["content-type"].startswith("application/problem+json")
            assert client.get("/readyz").status_code == 200, "readers are not blocked by a writer (WAL)"
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert client.post("/v1/decisions", json=proposal("after")).status_code == 201
