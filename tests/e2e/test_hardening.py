"""Issue #14, end to end on real servers: what an attacker and a careless admin found, each shut for good."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import Server, worthit
from tests.e2e.test_slack import SECRET, command
from tests.e2e.test_trust import create_token

pytestmark = pytest.mark.e2e

POLICY_PUT = {"noise_floor": 0.05}


def _stays(client: httpx.Client, check: Callable[[], int], expected: int, seconds: float) -> None:
    """`check()` answers `expected` every time for `seconds` (longer than any per-process cache)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert check() == expected
        time.sleep(0.25)


# 1. Auth: revoking the last token never opens a server; revocation takes effect on the next request.


def test_public_server_stays_closed_after_its_last_token_is_revoked(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """On a non-loopback address tokens are required for the server's whole life, even with none left."""
    admin = create_token(sqlite_url, "admin", "ops")
    server = server_factory(sqlite_url, env={"WORTHIT_HOST": "0.0.0.0"})
    with server.client() as client:
        assert client.put("/v1/policies/default", json=POLICY_PUT).status_code == 401
        bearer = {"authorization": f"Bearer {admin}"}
        assert client.put("/v1/policies/default", json=POLICY_PUT, headers=bearer).status_code == 200
        assert worthit("token", "revoke", "ops", "--database", sqlite_url).returncode == 0
        # Past the old 5 s cache of "are there any tokens?": it must stay shut, not open.
        _stays(client, lambda: client.put("/v1/policies/default", json=POLICY_PUT).status_code, 401, 7)
        assert client.put("/v1/policies/default", json=POLICY_PUT, headers=bearer).status_code == 401
        assert client.get("/v1/policies/default").status_code == 401
        assert client.get("/v1/policies/default").json()["status"] == 401
        assert client.get("/v1/policies/default", params={"version": 2}, headers=bearer).status_code == 401
        assert client.get("/healthz").status_code == 200


def test_loopback_server_stays_closed_once_a_token_was_seen(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    create_token(sqlite_url, "admin", "ops")
    server = server_factory(sqlite_url)
    with server.client() as client:
        assert client.put("/v1/policies/default", json=POLICY_PUT).status_code == 401
        assert worthit("token", "revoke", "ops", "--database", sqlite_url).returncode == 0
        _stays(client, lambda: client.put("/v1/policies/default", json=POLICY_PUT).status_code, 401, 7)


def test_revocation_takes_effect_on_the_next_request(database_url: str, server_factory: Callable[..., Server]) -> None:
    write = create_token(database_url, "write", "planning-tool")
    create_token(database_url, "read", "dashboard")  # auth stays on by the old rule too
    server = server_factory(database_url)
    bearer = {"authorization": f"Bearer {write}"}
    with server.client() as client:
        assert client.get("/v1/decisions", headers=bearer).status_code == 200
        assert worthit("token", "revoke", "planning-tool", "--database", database_url).returncode == 0
        revoked = client.get("/v1/decisions", headers=bearer)
        assert revoked.status_code == 401
        assert 'error="invalid_token"' in revoked.headers["www-authenticate"]


# 2. Infinite speedups are answers: p = 1 with k = ∞ (and k = 1e-300) on every path.

UNBOUNDED = {
    "target": "whole_step",
    "p": 1,
    "k": "inf",
    "baseline_ms": 100,
    "cost_weeks": 1,
    "scope": {"workload": "unbounded", "model": "m"},
}
TINY_K = UNBOUNDED | {"k": 1e-300}


def test_unbounded_speedup_is_stored_and_every_read_still_answers(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(database_url, env={"WORTHIT_SLACK_SIGNING_SECRET": SECRET})
    with server.client() as client:
        evaluated = client.post("/v1/evaluate", json=UNBOUNDED)
        assert evaluated.status_code == 200
        figures = evaluated.json()["amdahl"]
        assert figures["speedup"] is None  # declared: None is unbounded
        assert figures["ceiling_speedup"] is None
        assert (figures["new_ms"], figures["saving_ms"], figures["rate"]) == (0.0, 100.0, 100.0)
        created = client.post("/v1/decisions", json=UNBOUNDED)
        assert created.status_code == 201
        tiny = client.post("/v1/decisions", json=TINY_K)
        assert tiny.status_code == 201
        assert tiny.json()["amdahl"]["speedup"] == 1e-300
        decision_id = created.json()["id"]
        assert client.get(f"/v1/decisions/{decision_id}").json() == created.json()
        listing = client.get("/v1/decisions")
        assert listing.status_code == 200
        assert [item["id"] for item in listing.json()["items"]] == [tiny.json()["id"], decision_id]
        pages = (f"/decisions/{decision_id}", f"/decisions/{tiny.json()['id']}", "/decisions", "/workloads/unbounded")
        for path in pages:
            assert client.get(path).status_code == 200, path
        assert "∞" in client.get(f"/decisions/{decision_id}").text
        history = client.get("/v1/workloads/unbounded")
        assert history.status_code == 200
        assert client.post(f"/v1/decisions/{decision_id}/reevaluate", params={"policy": "default"}).status_code == 200
        outcome = client.post(
            f"/v1/decisions/{decision_id}/outcome", json={"target_ms": 0, "step_ms": 50, "scope": {"model": "m"}}
        )
        assert outcome.status_code == 201, outcome.text
        assert outcome.json()["predicted"]["speedup"] is None
        assert outcome.json()["realized"]["speedup"] == 2.0
        assert outcome.json()["speedup_ratio"] is None
        assert client.get(f"/v1/decisions/{decision_id}/outcome").status_code == 200
        slack = command(client, "p=100% k=inf cost=1w baseline=100ms target=whole_step")
        assert slack.status_code == 200
        assert "∞" in slack.text
        assert client.get("/v1/decisions").status_code == 200


def test_gate_answers_an_unbounded_speedup(tmp_path: Path) -> None:
    body = tmp_path / "pr.md"
    body.write_text("```worthit\ntarget: whole_step\np: 100%\nk: inf\nbaseline_ms: 100\ncost_weeks: 1\n```\n")
    result = worthit("gate", "--body", str(body))
    assert result.returncode == 0, result.stderr
    assert "∞" in result.stdout
