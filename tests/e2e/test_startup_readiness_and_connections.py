"""End to end: start-up errors, readiness under failing writes, Slack replays,
idle and slow connections."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import POSTGRES_URL, Server, worthit
from tests.e2e.test_slack import SECRET, signed_headers, slash_body
from tests.harness import admin, postgres_answers

pytestmark = pytest.mark.e2e

PROPOSAL = {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("WORTHIT_")}


def _unusable_databases(tmp_path: Path) -> list[tuple[str, str]]:
    """(database URL, the words its one-line cause must contain)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    cases = [
        (f"sqlite:///{blocker / 'worthit.db'}", "unable to open database file"),
        ("postgresql://postgres:secret-password@127.0.0.1:1/test", "Connect call failed"),
    ]
    if postgres_answers():
        role = POSTGRES_URL.replace("postgres@", "no_such_role@", 1)
        cases.append((role, 'role "no_such_role" does not exist'))
    return cases


@pytest.mark.parametrize("command", [["migrate"], ["serve"], ["serve", "--no-migrate"], ["token", "list"]])
def test_an_unusable_database_is_one_line_and_exit_2(command: list[str], tmp_path: Path) -> None:
    for url, cause in _unusable_databases(tmp_path):
        result = worthit(*command, "--database", url, env=_environment())
        assert result.returncode == 2, (url, result.stderr)
        assert "Traceback" not in result.stderr
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("worthit: cannot use the database ")
        assert cause in lines[0]
        assert "secret-password" not in lines[0], "a password is never printed"


def test_a_setting_that_does_not_read_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = _environment() | {"WORTHIT_TRUSTED_PROXIES": "10.0.0.0/8, proxy"}
    result = worthit("serve", "--database", str(tmp_path / "worthit.db"), env=env)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "worthit: Expected `trusted_proxies` to list addresses or CIDRs (`10.0.0.0/8, 127.0.0.1`), got 'proxy'"
    ]


def _database_name(url: str) -> str:
    return url.rsplit("/", 1)[1]


def _read_only(name: str, on: bool) -> None:
    setting = "SET default_transaction_read_only = on" if on else "RESET default_transaction_read_only"
    asyncio.run(admin(f'ALTER DATABASE "{name}" {setting}'))
    # Sessions keep the setting they started with: end them all, so every new one takes the new default.
    asyncio.run(admin(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"))


def test_readiness_fails_while_writes_fail_and_recovers_when_the_database_takes_writes_again(
    postgres_url: str, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(postgres_url)
    name = _database_name(postgres_url)
    with server.client() as client:
        assert client.post("/v1/decisions", json=PROPOSAL).status_code == 201
        assert client.get("/readyz").status_code == 200
        _read_only(name, True)
        failed = client.post("/v1/decisions", json=PROPOSAL)
        assert failed.status_code == 503, failed.text
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.headers["content-type"].startswith("application/problem+json")
        detail = ready.json()["detail"]
        assert detail.startswith("Writes are failing: the last one, at ")
        assert "read-only transaction" in detail
        assert detail.endswith("; none has succeeded since")
        assert client.get("/readyz").status_code == 503, (
            "the probe's own write fails too while the database is read-only"
        )
        _read_only(name, False)
        # Out of rotation, the replica gets no writes to find out: the probe writes once itself, and recovers.
        assert client.get("/readyz").status_code == 200
        assert client.post("/v1/decisions", json=PROPOSAL).status_code == 201
        assert len(client.get("/v1/decisions").json()["items"]) == 2


def test_a_replayed_slack_command_answers_the_same_and_stores_nothing(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(database_url, env={"WORTHIT_SLACK_SIGNING_SECRET": SECRET}, workers=2)
    body = slash_body("p=21% k=10 cost=3w baseline=100ms target=attention_softmax")
    headers = signed_headers(body)
    with server.client() as client:
        first = client.post("/slack/commands", content=body, headers=headers)
        assert first.status_code == 200
        # Two workers: replays on fresh connections land on either; each answers the first one's decision.
        replays = []
        for _ in range(6):
            with server.client() as fresh:
                replays.append(fresh.post("/slack/commands", content=body, headers=headers))
        assert [replay.status_code for replay in replays] == [200] * 6
        assert all(replay.json() == first.json() for replay in replays)
        assert len(client.get("/v1/decisions").json()["items"]) == 1
        # The same text signed again (a new request, as Slack sends a new one) is a new decision.
        again = signed_headers(body, timestamp=int(headers["X-Slack-Request-Timestamp"]) + 1)
        assert client.post("/slack/commands", content=body, headers=again).status_code == 200
        assert len(client.get("/v1/decisions").json()["items"]) == 2


def _closed_by_server(sock: socket.socket) -> bytes:
    """What the server sends before it closes the connection (a generous timeout: a server that never closes fails)."""
    sock.settimeout(30)
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


@pytest.mark.parametrize("sent", [b"", b"GET /healthz HT"], ids=["nothing", "half a request line"])
def test_a_connection_without_complete_headers_is_closed(
    sent: bytes, sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(sqlite_url, env={"WORTHIT_HEADER_TIMEOUT_SECONDS": "0.5"})
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(sent)
        assert _closed_by_server(sock) == b""


def test_a_slow_further_request_on_a_kept_alive_connection_is_closed(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(
        sqlite_url, env={"WORTHIT_HEADER_TIMEOUT_SECONDS": "0.5", "WORTHIT_KEEP_ALIVE_TIMEOUT_SECONDS": "60"}
    )
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        response = b""
        while not response.endswith(b'{"status":"ok"}'):
            response += sock.recv(4096)
        assert response.startswith(b"HTTP/1.1 200 OK\r\n")
        sock.sendall(b"GET /hea")
        assert _closed_by_server(sock) == b""


def test_complete_requests_are_served_as_before(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(sqlite_url, env={"WORTHIT_HEADER_TIMEOUT_SECONDS": "0.5"}, workers=2)
    with server.client() as client:
        assert [client.get("/healthz").status_code for _ in range(5)] == [200] * 5
