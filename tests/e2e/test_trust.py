"""Tokens and scopes, idempotent writes, rate limits, request ids, logs and metrics, on a real server."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.conftest import Server, worthit
from tests.harness import tls
from worthit.service.app import create_app
from worthit.service.settings import Settings
from worthit.service.tokens.model import PUBLIC, SCOPES

pytestmark = pytest.mark.e2e

PROPOSAL = {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}


def create_token(database_url: str, scope: str, name: str) -> str:
    result = worthit("token", "create", "--scope", scope, "--name", name, "--database", database_url)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, "the token is alone on stdout"
    assert re.fullmatch(r"wt_[A-Za-z0-9_-]{43}", lines[0])
    assert lines[0] not in result.stderr
    return lines[0]


def _routes() -> list[tuple[str, str, str]]:
    """(method, path, scope) for every route of the app, from the router itself."""
    app = create_app(Settings(migrate_on_start=False))
    found = []
    for route in app.routes:
        for handler in route.route_handlers:  # type: ignore[attr-defined]
            for method in sorted(getattr(handler, "http_methods", ())):
                if method in ("HEAD", "OPTIONS"):
                    continue
                path = re.sub(r"\{[^}]+\}", "00000000-0000-7000-8000-000000000000", route.path)
                found.append((method, path, str(handler.opt.get("scope"))))
    return found


def test_every_route_declares_a_scope() -> None:
    routes = _routes()
    assert routes
    for method, path, scope in routes:
        assert scope in (PUBLIC, *SCOPES), f"{method} {path} declares no scope"
    public = {path for _, path, scope in routes if scope == PUBLIC}
    assert {"/healthz", "/readyz", "/metrics"} <= public
    assert not any(path.startswith("/v1/") for path in public), "no /v1 route is public"


def test_no_route_is_reachable_without_its_scope(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    read = create_token(sqlite_url, "read", "reader")
    server = server_factory(sqlite_url)
    with server.client() as client:
        for method, path, scope in _routes():
            if scope == PUBLIC:
                continue
            anonymous = client.request(method, path, json={})
            assert anonymous.status_code == 401, (method, path)
            assert anonymous.headers["content-type"].startswith("application/problem+json")
            assert anonymous.headers["www-authenticate"].startswith("Bearer")
            if scope in ("write", "admin"):
                denied = client.request(method, path, json={}, headers={"authorization": f"Bearer {read}"})
                assert denied.status_code == 403, (method, path)
                assert f'scope="{scope}"' in denied.headers["www-authenticate"]


def test_tokens_scopes_and_revocation(database_url: str, server_factory: Callable[..., Server]) -> None:
    read = create_token(database_url, "read", "dashboard")
    write = create_token(database_url, "write", "planning-tool")
    server = server_factory(database_url)
    with server.client() as client:
        assert client.post("/v1/decisions", json=PROPOSAL).status_code == 401
        bad = client.post("/v1/decisions", json=PROPOSAL, headers={"authorization": "Bearer wt_nope"})
        assert bad.status_code == 401
        assert 'error="invalid_token"' in bad.headers["www-authenticate"]
        assert client.post("/v1/decisions", json=PROPOSAL, headers={"authorization": "Basic eDp5"}).status_code == 401
        as_reader = client.post("/v1/decisions", json=PROPOSAL, headers={"authorization": f"Bearer {read}"})
        assert as_reader.status_code == 403
        created = client.post("/v1/decisions", json=PROPOSAL, headers={"authorization": f"Bearer {write}"})
        assert created.status_code == 201
        assert client.get(created.headers["location"], headers={"authorization": f"Bearer {read}"}).status_code == 200
        assert client.get("/healthz").status_code == 200
    assert worthit("token", "revoke", "planning-tool", "--database", database_url).returncode == 0
    server.stop()
    restarted = server_factory(database_url)  # a fresh process: no cached token
    with restarted.client() as client:
        revoked = client.post("/v1/decisions", json=PROPOSAL, headers={"authorization": f"Bearer {write}"})
        assert revoked.status_code == 401
    listing = worthit("token", "list", "--database", database_url)
    assert "planning-tool\twrite\trevoked" in listing.stdout
    assert write not in listing.stdout


def test_tokens_never_stored_or_logged_in_plain_text(tmp_path: Path, server_factory: Callable[..., Server]) -> None:
    database = tmp_path / "w.db"
    url = f"sqlite:///{database}"
    token = create_token(url, "write", "ci")
    server = server_factory(url, env={"WORTHIT_LOG_LEVEL": "debug"})
    with server.client() as client:
        for _ in range(3):
            assert client.post("/v1/decisions", json=PROPOSAL, headers={"authorization": f"Bearer {token}"}).is_success
        assert client.get("/v1/decisions", headers={"authorization": f"Bearer {token[:-2]}xx"}).status_code == 401
    server.stop()
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("w.db*"))
    assert token.encode() not in stored
    assert token[3:].encode() not in stored
    logged = server.log.read_text()
    assert '"route":"/v1/decisions"' in logged, "the access log was written"
    assert token not in logged
    assert token[3:] not in logged


def test_idempotent_retries(database_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(database_url)
    with server.client() as client:
        headers = {"idempotency-key": "plan-42"}
        first = client.post("/v1/decisions", json=PROPOSAL, headers=headers)
        again = client.post("/v1/decisions", json=PROPOSAL, headers=headers)
        assert first.status_code == 201
        assert again.status_code == 200
        assert again.json() == first.json()
        assert again.headers["location"] == first.headers["location"]
        other = client.post("/v1/decisions", json=PROPOSAL | {"k": 5}, headers=headers)
        assert other.status_code == 409
        assert other.headers["content-type"].startswith("application/problem+json")
        assert "Idempotency-Key" in other.json()["detail"]
        assert len(client.get("/v1/decisions").json()["items"]) == 1


def test_concurrent_retries_create_exactly_one_row(database_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(database_url, workers=2)
    body = json.dumps(PROPOSAL | {"title": "concurrent"})

    def post(_: int) -> tuple[int, str]:
        with httpx.Client(base_url=server.url, timeout=20, verify=tls()) as client:
            response = client.post(
                "/v1/decisions", content=body, headers={"content-type": "application/json", "idempotency-key": "k-1"}
            )
            return response.status_code, response.json()["id"]

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(post, range(32)))
    assert {status for status, _ in results} <= {200, 201}
    assert [status for status, _ in results].count(201) == 1
    assert len({decision_id for _, decision_id in results}) == 1
    with server.client() as client:
        assert len(client.get("/v1/decisions").json()["items"]) == 1


def test_rate_limit_answers_429_with_retry_after(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(sqlite_url, env={"WORTHIT_RATE_LIMIT": "5/minute"})
    with server.client() as client:
        statuses = [client.post("/v1/evaluate", json=PROPOSAL).status_code for _ in range(6)]
        assert statuses == [200] * 5 + [429]
        limited = client.post("/v1/evaluate", json=PROPOSAL)
        assert limited.headers["content-type"].startswith("application/problem+json")
        assert 1 <= int(limited.headers["retry-after"]) <= 60
        assert client.get("/healthz").status_code == 200, "probes are not rate limited"


def test_forwarded_addresses_are_believed_only_from_trusted_proxies(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    untrusting = server_factory(sqlite_url, env={"WORTHIT_RATE_LIMIT": "2/minute"})
    with untrusting.client() as client:
        statuses = [
            client.post("/v1/evaluate", json=PROPOSAL, headers={"x-forwarded-for": f"203.0.113.{n}"}).status_code
            for n in range(3)
        ]
        assert statuses == [200, 200, 429], "a rotating X-Forwarded-For from an untrusted peer is one client"
    trusting = server_factory(
        sqlite_url, env={"WORTHIT_RATE_LIMIT": "2/minute", "WORTHIT_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1"}
    )
    with trusting.client() as client:
        statuses = [
            client.post("/v1/evaluate", json=PROPOSAL, headers={"x-forwarded-for": f"203.0.113.{n}"}).status_code
            for n in range(3)
        ]
        assert statuses == [200, 200, 200], "behind a trusted proxy, each forwarded client has its own bucket"
        same = [
            client.post("/v1/evaluate", json=PROPOSAL, headers={"x-forwarded-for": "203.0.113.0"}).status_code
            for _ in range(2)
        ]
        assert same == [200, 429]


def test_failed_authentications_are_rate_limited_per_address(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    write = create_token(sqlite_url, "write", "planning-tool")
    server = server_factory(sqlite_url, env={"WORTHIT_AUTH_FAILURE_LIMIT": "3/minute"})
    with server.client() as client:
        bad = {"authorization": "Bearer wt_" + "x" * 43}
        attempts = [
            client.post("/v1/evaluate", json=PROPOSAL, headers=bad).status_code,
            client.post("/v1/evaluate", json=PROPOSAL).status_code,  # missing counts as failed
            client.post("/v1/evaluate", json=PROPOSAL, headers={"authorization": "Basic abc"}).status_code,
        ]
        assert attempts == [401, 401, 401]
        flooded = client.post("/v1/evaluate", json=PROPOSAL, headers={"authorization": "Bearer wt_" + "y" * 43})
        assert flooded.status_code == 429
        assert flooded.headers["content-type"].startswith("application/problem+json")
        assert 1 <= int(flooded.headers["retry-after"]) <= 20
        assert "failed authentications" in flooded.json()["detail"]
        assert client.post("/v1/evaluate", json=PROPOSAL).status_code == 429
        # A valid token is never refused for others' failures at its address.
        good = client.post("/v1/evaluate", json=PROPOSAL, headers={"authorization": f"Bearer {write}"})
        assert good.status_code == 200
        assert client.get("/healthz").status_code == 200, "probes are not rate limited"


def test_made_up_tokens_never_lock_out_a_valid_admin_at_the_same_address(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """Thirty-one made-up tokens a minute (the default limit is 30) from the one address every
    client shares behind an ingress; the made-up ones end on 429, the admin token keeps its 200s."""
    admin = create_token(sqlite_url, "admin", "ops")
    server = server_factory(sqlite_url)
    with server.client() as client:
        made_up = [
            client.get("/v1/policies", headers={"authorization": f"Bearer wt_madeup{n:037d}"}).status_code
            for n in range(31)
        ]
        assert made_up == [401] * 30 + [429]
        bearer = {"authorization": f"Bearer {admin}"}
        assert [client.get("/v1/policies", headers=bearer).status_code for _ in range(5)] == [200] * 5
        assert client.put("/v1/policies/team", json={"noise_floor": 0.02}, headers=bearer).status_code == 200


def test_a_revoked_token_is_counted_against_itself_not_its_address(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """A job retrying with a revoked token reaches 429 on that token alone: others at its address, even without a
    valid token, still get their own 401s, and a valid token its 200."""
    old = create_token(sqlite_url, "write", "old-ci")
    write = create_token(sqlite_url, "write", "planning-tool")
    assert worthit("token", "revoke", "old-ci", "--database", sqlite_url).returncode == 0
    server = server_factory(sqlite_url, env={"WORTHIT_AUTH_FAILURE_LIMIT": "3/minute"})
    with server.client() as client:
        revoked = {"authorization": f"Bearer {old}"}
        assert [client.post("/v1/evaluate", json=PROPOSAL, headers=revoked).status_code for _ in range(4)] == [
            401,
            401,
            401,
            429,
        ]
        assert client.post("/v1/evaluate", json=PROPOSAL).status_code == 401, "the address has no failures yet"
        unknown = {"authorization": "Bearer wt_" + "z" * 43}
        assert client.post("/v1/evaluate", json=PROPOSAL, headers=unknown).status_code == 401
        valid = {"authorization": f"Bearer {write}"}
        assert client.post("/v1/evaluate", json=PROPOSAL, headers=valid).status_code == 200


def test_successful_authentications_never_count_as_failures(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    write = create_token(sqlite_url, "write", "planning-tool")
    server = server_factory(sqlite_url, env={"WORTHIT_AUTH_FAILURE_LIMIT": "2/minute"})
    with server.client(headers={"authorization": f"Bearer {write}"}) as client:
        assert [client.post("/v1/evaluate", json=PROPOSAL).status_code for _ in range(5)] == [200] * 5


def test_request_ids_access_log_and_metrics(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(sqlite_url, env={"WORTHIT_LOG_LEVEL": "info"})
    with server.client() as client:
        echoed = client.post("/v1/decisions", json=PROPOSAL, headers={"x-request-id": "req-123"})
        assert echoed.headers["x-request-id"] == "req-123"
        generated = client.get("/healthz").headers["x-request-id"]
        assert re.fullmatch(r"[0-9a-f]{32}", generated)
        assert client.get("/nowhere").headers["x-request-id"]
        metrics = client.get("/metrics").text
    assert 'worthit_requests_total{method="POST",route="/v1/decisions",status="201"} 1.0' in metrics
    assert 'worthit_decisions_total{source="api",verdict="fund"} 1.0' in metrics
    assert "worthit_request_duration_seconds_bucket" in metrics
    lines = [json.loads(line) for line in server.log.read_text().splitlines() if line.startswith("{")]
    access = [line for line in lines if line.get("request_id") == "req-123"]
    assert len(access) == 1
    assert access[0]["route"] == "/v1/decisions"
    assert access[0]["status"] == 201
    assert access[0]["duration_ms"] > 0


def test_serve_refuses_a_public_address_with_auth_off(sqlite_url: str) -> None:
    result = worthit("serve", "--host", "0.0.0.0", "--port", "1", "--database", sqlite_url)
    assert result.returncode == 2
    assert "refusing to serve on 0.0.0.0" in result.stderr
