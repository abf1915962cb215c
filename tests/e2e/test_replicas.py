"""Many API processes on one PostgreSQL, as deploy/ runs them: started at once on an empty database they migrate it
exactly once, serve the same data, and keep idempotency keys across processes; one that may not migrate refuses
an old schema; SIGTERM drains what is in flight.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic.script import ScriptDirectory

from tests.conftest import ROOT, Server, free_port, start_server
from worthit.service.db.migrate import alembic_config, head_revision

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

PROPOSAL = {
    "target": "attention_softmax",
    "p": 0.21,
    "k": 10,
    "baseline_ms": 100,
    "cost_weeks": 3,
    "scope": {"workload": "inference"},
}
# Every DDL statement run in the test database, with the backend that ran it: how many processes really migrated.
DDL_AUDIT = """
CREATE SCHEMA ddl_audit;
CREATE TABLE ddl_audit.log (tag text NOT NULL, object text, pid integer NOT NULL);
CREATE FUNCTION ddl_audit.record() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE command record;
BEGIN
    FOR command IN SELECT * FROM pg_event_trigger_ddl_commands() LOOP
        INSERT INTO ddl_audit.log VALUES (command.command_tag, command.object_identity, pg_backend_pid());
    END LOOP;
END $$;
CREATE EVENT TRIGGER ddl_audit ON ddl_command_end EXECUTE FUNCTION ddl_audit.record();
"""


def _sql(url: str, statement: str, *args: object) -> list[Any]:
    import asyncpg

    async def run() -> list[Any]:
        connection = await asyncpg.connect(url)
        try:
            return list(await connection.fetch(statement, *args))
        finally:
            await connection.close()

    return asyncio.run(run())


def _execute(url: str, script: str) -> None:
    import asyncpg

    async def run() -> None:
        connection = await asyncpg.connect(url)
        try:
            await connection.execute(script)
        finally:
            await connection.close()

    asyncio.run(run())


def _revisions() -> int:
    return len(list(ScriptDirectory.from_config(alembic_config()).walk_revisions()))


@pytest.fixture
def three_servers(postgres_url: str, tmp_path: Path) -> Iterator[list[Server]]:
    """Three `worthit serve` processes launched at the same moment on one empty database (migration logs shown)."""
    _execute(postgres_url, DDL_AUDIT)
    logs = [tmp_path / f"replica-{index}.log" for index in range(3)]
    start = threading.Barrier(3)

    def launch(log: Path) -> Server:
        start.wait(timeout=30)
        return start_server(postgres_url, log, env={"WORTHIT_LOG_LEVEL": "info"})

    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(launch, log) for log in logs]
    try:
        yield [future.result() for future in futures]
    finally:
        for future in futures:
            if future.exception() is None:
                future.result().stop()


def test_three_processes_on_an_empty_database_migrate_it_exactly_once(
    postgres_url: str, three_servers: list[Server]
) -> None:
    """One process ran the migrations; the other two waited on the advisory lock and found nothing to do."""
    head = head_revision()
    assert [row["version_num"] for row in _sql(postgres_url, "SELECT version_num FROM alembic_version")] == [head]

    logs = [server.log.read_text() for server in three_servers]
    # `worthit serve` counts the revisions it applied in one line (Alembic's own lines are for `worthit migrate`).
    counts = [
        re.search(rf"database at revision {head} \((no migration|\d+) ?(?:migrations?)? applied\)", log) for log in logs
    ]
    assert all(counts), logs
    upgrades = [0 if match[1] == "no migration" else int(match[1]) for match in counts if match]
    assert sorted(upgrades) == [0, 0, _revisions()], upgrades

    created = _sql(postgres_url, "SELECT object, pid FROM ddl_audit.log WHERE tag = 'CREATE TABLE'")
    objects = [row["object"] for row in created]
    assert sorted(objects) == sorted(set(objects)), "no table was created twice"
    assert {"public.alembic_version", "public.decisions"} <= set(objects)
    assert len({row["pid"] for row in created}) == 1, "all DDL ran on one connection"

    for server in three_servers:
        ready = httpx.get(f"{server.url}/readyz", timeout=5)
        assert ready.status_code == 200
        assert ready.json()["schema_revision"] == head


def test_a_decision_written_through_one_process_is_read_through_the_others(three_servers: list[Server]) -> None:
    ids = []
    for index, writer in enumerate(three_servers):
        created = httpx.post(f"{writer.url}/v1/decisions", json=PROPOSAL | {"target": f"kernel_{index}"}, timeout=10)
        assert created.status_code == 201, created.text
        decision = created.json()
        ids.append(decision["id"])
        for reader in three_servers:
            assert httpx.get(f"{reader.url}{created.headers['location']}", timeout=10).json() == decision
    for reader in three_servers:
        listed = httpx.get(f"{reader.url}/v1/decisions", params={"limit": 10}, timeout=10).json()
        assert [item["id"] for item in listed["items"]] == list(reversed(ids))


def _post_together(servers: list[Server], key: str, body: dict[str, Any]) -> list[httpx.Response]:
    """POST the same request to every server at the same moment (connections opened first, then a barrier)."""
    barrier = threading.Barrier(len(servers))

    def post(server: Server) -> httpx.Response:
        with server.client() as client:
            client.get("/healthz")
            barrier.wait()
            return client.post("/v1/decisions", json=body, headers={"Idempotency-Key": key})

    with ThreadPoolExecutor(len(servers)) as pool:
        return list(pool.map(post, servers))


def test_an_idempotency_key_holds_across_processes(postgres_url: str, three_servers: list[Server]) -> None:
    """The same key and body sent to all three at the same moment: one decision stored, one 201, the same id."""
    rounds = 8
    for round_ in range(rounds):
        key = f"deploy-replicas-{round_}"
        body = PROPOSAL | {"title": f"round {round_}"}
        responses = _post_together(three_servers, key, body)
        assert sorted(response.status_code for response in responses) == [200, 200, 201], [
            response.text for response in responses
        ]
        assert len({response.json()["id"] for response in responses}) == 1
        assert len({response.json()["created_at"] for response in responses}) == 1

        for server in three_servers:
            other = httpx.post(
                f"{server.url}/v1/decisions", json=body | {"k": 20}, headers={"Idempotency-Key": key}, timeout=10
            )
            assert other.status_code == 409, other.text
            assert other.headers["content-type"].startswith("application/problem+json")

    stored = _sql(
        postgres_url,
        "SELECT idempotency_key, count(*) AS n FROM decisions WHERE idempotency_key LIKE 'deploy-replicas-%' "
        "GROUP BY idempotency_key",
    )
    assert len(stored) == rounds
    assert {row["n"] for row in stored} == {1}


def _serve(database_url: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("WORTHIT_")}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "worthit.service.cli",
            "serve",
            "--port",
            str(free_port()),
            "--database",
            database_url,
            *extra,
        ],
        cwd=ROOT,
        env=environment | (env or {}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("flag", "env"), [(("--no-migrate",), {}), ((), {"WORTHIT_MIGRATE_ON_START": "0"})], ids=["flag", "environment"]
)
def test_a_process_that_may_not_migrate_refuses_an_old_schema(
    postgres_url: str, tmp_path: Path, flag: tuple[str, ...], env: dict[str, str]
) -> None:
    """With migrations off, `serve` exits non-zero naming both revisions and the fix; it changes nothing."""
    refused = _serve(postgres_url, *flag, env=env)
    assert refused.returncode == 1
    assert "refusing to serve" in refused.stderr
    assert f"this code needs {head_revision()}" in refused.stderr
    assert "worthit migrate" in refused.stderr
    tables = _sql(postgres_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    assert tables == [], "a process that may not migrate created nothing"

    migrated = subprocess.run(
        [sys.executable, "-m", "worthit.service.cli", "migrate", "--database", postgres_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert f"database at revision {head_revision()}" in migrated.stdout
    assert "Running upgrade" in migrated.stderr, "the migration job's log says what it applied"

    server = start_server(postgres_url, tmp_path / "no-migrate.log", env={"WORTHIT_MIGRATE_ON_START": "0"} | env)
    try:
        assert httpx.get(f"{server.url}/readyz", timeout=5).status_code == 200
        assert "Running upgrade" not in server.log.read_text()
    finally:
        server.stop()


def _waiting_on_a_lock(url: str) -> int:
    rows = _sql(
        url,
        "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    return int(rows[0]["n"])


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_finishes_in_flight_writes_and_exits_zero(postgres_url: str, tmp_path: Path, workers: int) -> None:
    """Writes held up in the database when SIGTERM arrives still commit and answer; every 2xx is stored; exit 0."""
    # Rate limiting off: the load below is meant to reach the writer, not to be turned away.
    env = {"WORTHIT_LOG_LEVEL": "info", "WORTHIT_RATE_LIMIT": "off"}
    server = start_server(postgres_url, tmp_path / "server.log", workers=workers, env=env)
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop_load = threading.Event()
    results: list[tuple[float, float, int]] = []
    started = threading.Semaphore(0)

    def post(client: httpx.Client, index: int) -> None:
        started.release()
        sent = time.monotonic()
        response = client.post("/v1/decisions", json=PROPOSAL | {"title": f"in flight {index}"})
        with lock:
            results.append((sent, time.monotonic(), response.status_code))
            if response.is_success:
                acknowledged.append(response.json()["id"])

    def post_once(index: int) -> None:
        with server.client(timeout=30) as client:
            post(client, index)

    def load(worker: int) -> None:
        """Keeps posting until the server stops answering (bounded in count and time)."""
        deadline = time.monotonic() + 30
        with server.client() as client:
            for index in range(2_000):
                if stop_load.is_set() or time.monotonic() > deadline:
                    return
                try:
                    post(client, worker * 100_000 + index)
                except httpx.HTTPError:
                    return

    try:
        for index in range(5):
            with server.client() as client:
                post(client, index)
        assert len(acknowledged) == 5

        import asyncpg

        async def hold_then_release(terminate: threading.Event, release: threading.Event) -> None:
            connection = await asyncpg.connect(postgres_url)
            try:
                async with connection.transaction():
                    # Writes wait behind this lock: they are in flight, inside the server, when SIGTERM arrives.
                    await connection.execute("LOCK TABLE decisions IN EXCLUSIVE MODE")
                    terminate.set()
                    await asyncio.to_thread(release.wait, 20)
            finally:
                await connection.close()

        locked, release = threading.Event(), threading.Event()
        holder = threading.Thread(target=lambda: asyncio.run(hold_then_release(locked, release)))
        holder.start()
        assert locked.wait(10)
        with ThreadPoolExecutor(12) as pool:
            blocked = [pool.submit(post_once, 1000 + index) for index in range(8)]
            loaders = [pool.submit(load, worker) for worker in range(4)]
            deadline = time.monotonic() + 10
            while _waiting_on_a_lock(postgres_url) == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _waiting_on_a_lock(postgres_url) > 0, "writes are waiting in the database"
            for _ in range(5 + 8 + 4):
                assert started.acquire(timeout=10)
            time.sleep(0.5)  # the last requests sent reach the server (loopback: well under this)

            signalled = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            time.sleep(1.0)
            assert server.process.poll() is None, "the server waits for its in-flight requests"
            release.set()
            holder.join(10)
            for future in blocked:
                future.result(timeout=20)
            stop_load.set()
            for future in loaders:
                future.result(timeout=20)
            returncode = server.process.wait(timeout=20)
        exited = time.monotonic()
    finally:
        stop_load.set()
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()

    log = server.log.read_text()
    assert returncode == 0, log
    assert exited - signalled < 15, "within uvicorn's graceful timeout (10 s) and a margin"
    across = [status for sent, answered, status in results if sent < signalled < answered]
    assert len(across) >= 8, "the writes held in the database were in flight at SIGTERM"
    assert set(across) == {201}, "every write in flight at SIGTERM was answered 201"
    assert "Application shutdown complete" in log, "the lifespan closed the writer and the engine"
    assert "Traceback" not in log

    stored = _sql(postgres_url, "SELECT id FROM decisions WHERE id = ANY($1::text[])", acknowledged)
    assert len(stored) == len(acknowledged) == len(set(acknowledged))
    assert len(acknowledged) >= 13


def test_the_app_refuses_an_old_schema_at_startup_but_not_a_database_that_is_down(postgres_url: str) -> None:
    """The same check in the app's lifespan, for servers started without `worthit serve` (uvicorn --factory)."""
    from litestar.testing import TestClient

    from worthit.service.app import SchemaMismatch, create_app
    from worthit.service.settings import Settings

    refused = create_app(Settings(database_url=postgres_url, migrate_on_start=False))
    with pytest.raises(ExceptionGroup) as raised, TestClient(refused):  # the test client's task group wraps it
        pass
    assert raised.group_contains(SchemaMismatch, match="run `worthit migrate` first")

    down = f"postgresql://postgres@127.0.0.1:{free_port()}/nothing"
    with TestClient(create_app(Settings(database_url=down, migrate_on_start=False))) as client:
        assert client.get("/readyz").status_code == 503, "a database that is down is /readyz's to report"
