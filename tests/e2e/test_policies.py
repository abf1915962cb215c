"""Policies through the API: versions, validation naming the key, decisions under a policy, re-evaluation."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import Server
from tests.e2e.test_trust import create_token

pytestmark = pytest.mark.e2e

# 1.5% of the step saved: above the default 1% noise floor, below a 2% one.
BORDERLINE = {"target": "layernorm", "p": 0.0167, "k": 10, "baseline_ms": 100, "cost_weeks": 1}


def test_a_new_policy_version_changes_a_borderline_verdict(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    admin = create_token(database_url, "admin", "platform")
    write = create_token(database_url, "write", "planner")
    server = server_factory(database_url)
    as_admin = {"authorization": f"Bearer {admin}"}
    as_writer = {"authorization": f"Bearer {write}"}
    with server.client() as client:
        before = client.post("/v1/decisions", json=BORDERLINE, headers=as_writer).json()
        assert before["verdict"] == "fund"
        assert before["policy"] == {"name": "default", "version": 1}

        denied = client.put("/v1/policies/default", json={"noise_floor": 0.02}, headers=as_writer)
        assert denied.status_code == 403
        stored = client.put("/v1/policies/default", json={"noise_floor": 0.02}, headers=as_admin)
        assert stored.status_code == 200
        assert stored.json()["version"] == 2
        assert stored.json()["noise_floor"] == 0.02
        assert client.get("/v1/policies/default", headers=as_writer).json()["version"] == 2
        assert client.get("/v1/policies/default?version=1", headers=as_writer).json()["noise_floor"] == 0.01

        after = client.post("/v1/decisions", json=BORDERLINE, headers=as_writer).json()
        assert after["verdict"] == "decline"
        assert after["policy"] == {"name": "default", "version": 2}
        assert "2%" in after["statement"]

        again = client.post(f"/v1/decisions/{before['id']}/reevaluate?policy=default", headers=as_writer).json()
        # `before` is the whole stored evaluation, like `after`, not only the policy it was made under.
        assert again["before"] == {name: before[name] for name in again["after"]}
        assert again["before"]["policy"] == {"name": "default", "version": 1}
        assert again["after"]["policy"] == {"name": "default", "version": 2}
        assert again["changed"] is True
        assert {"field": "verdict", "before": "fund", "after": "decline"} in again["changes"]
        assert "noise_floor" in again["rules_fired"]
        assert client.get(f"/v1/decisions/{before['id']}", headers=as_writer).json() == before, "stored stays stored"


def test_malformed_policies_name_the_key_and_store_nothing(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(sqlite_url)
    with server.client() as client:
        cases = [
            ({"noise_floor": 5}, "/noise_floor", "Expected `noise_floor` <= 1"),
            ({"noise_flor": 0.1}, "/noise_flor", "Unknown policy key `noise_flor`"),
            ({"min_rate": "fast"}, "/min_rate", "Expected `min_rate`"),
            ({"gate": {"fail_on": ["maybe"]}}, "/gate/fail_on/0", "Expected"),
        ]
        for body, pointer, phrase in cases:
            response = client.put("/v1/policies/strict", json=body)
            assert response.status_code == 422, body
            assert response.headers["content-type"].startswith("application/problem+json")
            assert response.json()["errors"][0]["pointer"] == pointer
            assert phrase in response.json()["detail"]
        assert (
            client.put(
                "/v1/policies/strict", content=b"noise_floor = [", headers={"content-type": "application/toml"}
            ).status_code
            == 422
        )
        assert client.put("/v1/policies/Bad Name", json={}).status_code in (400, 404, 422)
        assert client.get("/v1/policies/strict").status_code == 404
        assert [p["name"] for p in client.get("/v1/policies").json()] == ["default"]
        toml = client.put(
            "/v1/policies/strict", content=b"noise_floor = 0.05\n", headers={"content-type": "application/toml"}
        )
        assert toml.status_code == 200
        assert toml.json()["version"] == 1
        under = client.post("/v1/evaluate?policy=strict", json=BORDERLINE | {"p": 0.05}).json()
        assert under["policy"] == {"name": "strict", "version": 1}
        assert under["verdict"] == "decline"


# One pattern for the names users choose, and a way to delete a policy.


def test_a_policy_name_with_a_newline_is_refused_and_the_list_keeps_answering(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """`PUT /v1/policies/x%0A` was stored (Python's `$` matches before a final newline) and every later
    `GET /v1/policies` answered 404. Now it is a 4xx naming the name; so is a target with a newline."""
    server = server_factory(database_url)
    with server.client() as client:
        for name in ("x%0A", "x%0D", "Team", "x%20y", "-x", "a" * 65):
            answer = client.put(f"/v1/policies/{name}", json={"noise_floor": 0.02})
            assert 400 <= answer.status_code < 500, (name, answer.status_code)
            assert answer.headers["content-type"] == "application/problem+json"
            assert "`name`" in answer.json()["detail"], answer.json()
        listed = client.get("/v1/policies")
        assert listed.status_code == 200
        assert [policy["name"] for policy in listed.json()] == ["default"]
        for path in ("/v1/evaluate", "/v1/decisions"):
            answer = client.post(path, json=BORDERLINE | {"target": "layernorm\n"})
            assert answer.status_code == 422, answer.text
            assert answer.json()["errors"][0]["pointer"] == "/target"
        assert client.get("/v1/decisions").json()["items"] == []
        evaluated = client.post("/v1/evaluate", params={"policy": "x\n"}, json=BORDERLINE)
        assert evaluated.status_code == 400
        assert "`policy`" in evaluated.json()["detail"]


def test_delete_a_policy_decisions_keep_their_record_default_stays(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    admin = create_token(database_url, "admin", "platform")
    write = create_token(database_url, "write", "planner")
    server = server_factory(database_url)
    as_admin = {"authorization": f"Bearer {admin}"}
    as_writer = {"authorization": f"Bearer {write}"}
    with server.client() as client:
        assert client.put("/v1/policies/team", json={"noise_floor": 0.02}, headers=as_admin).status_code == 200
        assert client.put("/v1/policies/team", json={"noise_floor": 0.03}, headers=as_admin).json()["version"] == 2
        made = client.post("/v1/decisions", json=BORDERLINE, params={"policy": "team"}, headers=as_writer).json()
        assert made["policy"] == {"name": "team", "version": 2}
        assert client.delete("/v1/policies/team", headers=as_writer).status_code == 403
        deleted = client.delete("/v1/policies/team", headers=as_admin)
        assert deleted.status_code == 204
        assert client.get("/v1/policies/team", headers=as_writer).status_code == 404
        assert [p["name"] for p in client.get("/v1/policies", headers=as_writer).json()] == ["default"]
        kept = client.get(f"/v1/decisions/{made['id']}", headers=as_writer).json()
        assert kept["policy"] == {"name": "team", "version": 2}
        gone = client.post(f"/v1/decisions/{made['id']}/reevaluate", params={"policy": "team"}, headers=as_writer)
        assert gone.status_code == 404
        assert client.delete("/v1/policies/team", headers=as_admin).status_code == 404
        refused = client.delete("/v1/policies/default", headers=as_admin)
        assert refused.status_code == 409
        assert refused.headers["content-type"] == "application/problem+json"
        assert client.get("/v1/policies/default", headers=as_writer).status_code == 200
        # A name of the same spelling goes on after the deleted versions: `team` v2 keeps naming what it named.
        assert client.put("/v1/policies/team", json={"noise_floor": 0.05}, headers=as_admin).json()["version"] == 3


def test_a_name_stored_before_names_were_checked_is_listed_around_and_can_be_deleted(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    import sqlite3

    server = server_factory(sqlite_url)
    with server.client() as client:
        assert client.put("/v1/policies/team", json={"noise_floor": 0.02}).status_code == 200
        document = client.get("/v1/policies/team").text
    server.stop()
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        db.execute(
            "INSERT INTO policies (name, version, created_at, document) VALUES (?, 1, '2026-01-01', ?)",
            ("x\n", document.replace('"name":"team"', '"name":"x\\n"')),
        )
    server = server_factory(sqlite_url)
    with server.client() as client:
        listed = client.get("/v1/policies")
        assert listed.status_code == 200
        assert [policy["name"] for policy in listed.json()] == ["default", "team"]
        assert client.delete("/v1/policies/x%0A").status_code == 204
        assert client.delete("/v1/policies/x%0A").status_code == 404
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        assert db.execute("SELECT count(*) FROM policies WHERE name = ?", ("x\n",)).fetchone() == (0,)


def test_token_names_follow_the_same_pattern(sqlite_url: str) -> None:
    from tests.conftest import worthit

    refused = worthit("token", "create", "--name", "ops\n", "--scope", "admin", "--database", sqlite_url)
    assert refused.returncode == 2
    assert "expected a name of lowercase letters" in refused.stderr
    assert refused.stdout == ""
    listed = worthit("token", "list", "--database", sqlite_url)
    assert listed.stdout == ""


STRICT = {"noise_floor": 0.002}
LOOSE = {"noise_floor": 0.05}


def _deletions(database_url: str) -> list[tuple[str, int, int, str | None]]:
    import asyncio

    from sqlalchemy import text

    from worthit.service.db.engine import create_engine
    from worthit.service.settings import Settings

    async def read() -> list[tuple[str, int, int, str | None]]:
        engine = create_engine(Settings(database_url=database_url))
        try:
            async with engine.connect() as connection:
                query = text(
                    "SELECT name, last_version, versions, deleted_by FROM policy_deletions ORDER BY last_version"
                )
                return [tuple(row) for row in (await connection.execute(query)).all()]  # type: ignore[misc]
        finally:
            await engine.dispose()

    return asyncio.run(read())


def test_a_deleted_policy_version_is_never_numbered_again_and_the_deletion_names_its_token(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """Delete `strict`, PUT it twice: the new ones are v3 and v4, and a decision made under v2 re-evaluates under
    `strict` v2's own thresholds nowhere else (re-evaluating under the name takes the newest, labelled v4)."""
    admin = create_token(database_url, "admin", "platform")
    write = create_token(database_url, "write", "planner")
    server = server_factory(database_url, env={"WORTHIT_LOG_LEVEL": "info"})
    as_admin = {"authorization": f"Bearer {admin}"}
    as_writer = {"authorization": f"Bearer {write}"}
    with server.client() as client:
        for thresholds in (LOOSE, STRICT):
            assert client.put("/v1/policies/strict", json=thresholds, headers=as_admin).status_code == 200
        made = client.post("/v1/decisions", json=BORDERLINE, params={"policy": "strict"}, headers=as_writer).json()
        assert (made["policy"], made["verdict"]) == ({"name": "strict", "version": 2}, "fund")

        assert client.delete("/v1/policies/strict", headers=as_admin).status_code == 204
        versions = [client.put("/v1/policies/strict", json=LOOSE, headers=as_admin).json()["version"] for _ in range(2)]
        assert versions == [3, 4]
        assert client.get("/v1/policies/strict", params={"version": 2}, headers=as_writer).status_code == 404
        again = client.post(
            f"/v1/decisions/{made['id']}/reevaluate", params={"policy": "strict"}, headers=as_writer
        ).json()
        assert again["before"]["policy"] == {"name": "strict", "version": 2}
        assert again["after"]["policy"] == {"name": "strict", "version": 4}
        assert again["after"]["verdict"] == "decline"

        assert client.delete("/v1/policies/strict", headers=as_admin).status_code == 204
        assert client.put("/v1/policies/strict", json=STRICT, headers=as_admin).json()["version"] == 5
    assert _deletions(database_url) == [("strict", 2, 2, "platform"), ("strict", 4, 2, "platform")]
    deleting = [line for line in server.log.read_text().splitlines() if '"method":"DELETE"' in line]
    assert len(deleting) == 2
    assert all('"token":"platform"' in line for line in deleting), deleting
    assert admin not in server.log.read_text()


def test_the_policy_the_server_evaluates_under_cannot_be_deleted(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(database_url)
    with server.client() as client:
        assert client.put("/v1/policies/strict", json=STRICT).status_code == 200
        assert client.put("/v1/policies/other", json=LOOSE).status_code == 200
    server.stop()
    server = server_factory(database_url, env={"WORTHIT_POLICY": "strict"})
    with server.client() as client:
        refused = client.delete("/v1/policies/strict")
        assert refused.status_code == 409
        assert refused.headers["content-type"] == "application/problem+json"
        assert "WORTHIT_POLICY" in refused.json()["detail"]
        assert client.post("/v1/evaluate", json=BORDERLINE).json()["policy"] == {"name": "strict", "version": 1}
        assert client.delete("/v1/policies/other").status_code == 204
    assert _deletions(database_url) == [("other", 1, 1, None)]
