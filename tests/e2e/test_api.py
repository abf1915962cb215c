"""The API end to end: a real `worthit serve` (uvicorn) on a SQLite file and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.conftest import Server

pytestmark = pytest.mark.e2e

ATTENTION = {
    "target": "attention_softmax",
    "p": 0.21,
    "k": 10,
    "baseline_ms": 100,
    "cost_weeks": 3,
    "scope": {"workload": "inference"},
}


def _count(client: httpx.Client) -> int:
    total, cursor = 0, None
    while True:
        page = client.get("/v1/decisions", params={"limit": 200} | ({"cursor": cursor} if cursor else {})).json()
        total += len(page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            return total


def test_seed_attention_case_end_to_end(database_url: str, server_factory: Callable[..., Server]) -> None:
    """POST /v1/decisions → 201 + Location; GET returns it; figures are the seed's; then it survives a restart."""
    server = server_factory(database_url)
    with server.client() as client:
        evaluated = client.post("/v1/evaluate", json=ATTENTION)
        assert evaluated.status_code == 200
        created = client.post("/v1/decisions", json=ATTENTION)
        assert created.status_code == 201
        location = created.headers["location"]
        decision = created.json()
        assert location == f"/v1/decisions/{decision['id']}"
        a = decision["amdahl"]
        assert decision["verdict"] == "fund"
        assert a["speedup"] == pytest.approx(1.233, abs=5e-4)
        assert a["new_ms"] == pytest.approx(81.1, abs=1e-9)
        assert a["saving_ms"] == pytest.approx(18.9, abs=1e-9)
        assert a["headroom_captured"] == pytest.approx(0.9, abs=1e-12)
        assert a["remaining_ms"] == pytest.approx(2.1, abs=1e-9)
        assert a["rate"] == pytest.approx(6.3, abs=1e-9)
        assert decision["policy"] == {"name": "default", "version": 1}
        assert evaluated.json()["statement"] == decision["statement"]
        assert client.get(location).json() == decision
    server.stop()

    again = server_factory(database_url)
    with again.client() as client:
        assert client.get(location).json() == decision


def test_list_filters_and_cursor_pagination(database_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(database_url)
    with server.client() as client:
        ids = []
        for i in range(7):
            body = ATTENTION | {"target": f"kernel_{i % 2}", "p": 0.005 if i == 6 else 0.21}
            ids.append(client.post("/v1/decisions", json=body).json()["id"])
        seen, cursor = [], None
        while True:
            params = {"limit": 3} | ({"cursor": cursor} if cursor else {})
            page = client.get("/v1/decisions", params=params).json()
            seen += [item["id"] for item in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == list(reversed(ids))
        kernel_one = client.get("/v1/decisions", params={"target": "kernel_1"}).json()["items"]
        assert [item["id"] for item in kernel_one] == [ids[5], ids[3], ids[1]]
        declined = client.get("/v1/decisions", params={"verdict": "decline"}).json()["items"]
        assert [item["id"] for item in declined] == [ids[6]]
        assert client.get("/v1/decisions", params={"workload": "training"}).json()["items"] == []
        since = client.get(f"/v1/decisions/{ids[0]}").json()["created_at"]
        assert len(client.get("/v1/decisions", params={"since": since}).json()["items"]) == 7
        assert client.get("/v1/decisions", params={"since": "2999-01-01T00:00:00Z"}).json()["items"] == []


BAD_BODIES = [
    pytest.param(b'{"p": 1.7, "k": 10}', 422, "/p", "Expected `p` <= 1", id="p-above-one"),
    pytest.param(b'{"p": "0.5", "k": 10}', 422, "/p", 'got "0.5"', id="string-for-number"),
    pytest.param(b'{"p": 0.5, "k": 10, "speed": 3}', 422, "/speed", "Unknown field `speed`", id="unknown-field"),
    pytest.param(b'{"p": 0.5, "k": 1e999}', 422, "/k", "finite", id="infinite-number"),
    pytest.param(b'{"p": NaN, "k": 10}', 400, "", "malformed", id="nan"),
    pytest.param(b"", 400, "", "empty body", id="empty-body"),
    pytest.param(b'{"p": 0.5', 400, "", "malformed", id="truncated"),
    pytest.param(b"[0.5, 10]", 422, "", "Expected `object`", id="array"),
    pytest.param(b'{"p": 0.5}', 422, "/k", "Expected `k`", id="missing-k"),
    pytest.param(b'{"k": 10}', 422, "", "Expected `p`", id="missing-p"),
    pytest.param(b'{"p": 0.5, "k": 0}', 422, "/k", "Expected `k`", id="k-zero"),
    pytest.param(b'{"p": 0.5, "k": "fast"}', 422, "/k", 'got "fast"', id="k-word"),
    pytest.param(
        b'{"p": 0.5, "k": 10, "breakdown": [{"name": "a", "ms": -1}]}',
        422,
        "/breakdown/0/ms",
        "Expected `ms` >= 0",
        id="negative-ms",
    ),
    pytest.param(
        b'{"p": 0.5, "k": 10, "flags": {"portability": "magic"}}',
        422,
        "/flags/portability",
        "portability",
        id="bad-enum",
    ),
    pytest.param(b'{"p": {"low": 0.3, "high": 0.1}, "k": 10}', 422, "/p", "low", id="inverted-range"),
    pytest.param(b"\xff\xfe\x00garbage", 400, "", "malformed", id="binary"),
]


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    from tests.conftest import start_server

    directory = tmp_path_factory.mktemp("bad-input")
    server = start_server(f"sqlite:///{directory / 'w.db'}", directory / "server.log")
    yield server  # type: ignore[misc]
    server.stop()


@pytest.mark.parametrize(("body", "status", "pointer", "phrase"), BAD_BODIES)
def test_bad_input_is_a_problem_naming_the_field_and_nothing_is_stored(
    sqlite_server: Server, body: bytes, status: int, pointer: str, phrase: str
) -> None:
    with sqlite_server.client() as client:
        before = _count(client)
        response = client.post("/v1/decisions", content=body, headers={"content-type": "application/json"})
        assert response.status_code == status, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        problem = response.json()
        assert problem["status"] == status
        assert {"type", "title", "status", "detail", "errors"} <= problem.keys()
        assert phrase in problem["detail"]
        assert [error["pointer"] for error in problem["errors"]][:1] == [pointer]
        assert _count(client) == before


def test_wrong_content_type_and_oversized_body(sqlite_server: Server) -> None:
    with sqlite_server.client() as client:
        before = _count(client)
        wrong = client.post("/v1/decisions", content=b'{"p": 0.5, "k": 2}', headers={"content-type": "text/plain"})
        assert wrong.status_code == 415
        assert wrong.headers["content-type"].startswith("application/problem+json")
        huge = {"p": 0.5, "k": 2, "title": "x" * 100, "breakdown": [{"name": f"n{i}", "ms": 1} for i in range(20000)]}
        too_big = client.post("/v1/decisions", json=huge)
        assert too_big.status_code == 413
        assert too_big.headers["content-type"].startswith("application/problem+json")
        assert _count(client) == before


def test_bad_query_and_unknown_ids_are_problems(sqlite_server: Server) -> None:
    with sqlite_server.client() as client:
        for params in ({"limit": 0}, {"limit": "many"}, {"verdict": "maybe"}, {"since": "yesterday"}):
            response = client.get("/v1/decisions", params=params)
            assert response.status_code == 400, params
            assert response.headers["content-type"].startswith("application/problem+json")
            assert next(iter(params)) in response.json()["detail"]
        missing = client.get("/v1/decisions/00000000-0000-7000-8000-000000000000")
        assert missing.status_code == 404
        assert missing.headers["content-type"].startswith("application/problem+json")
        assert client.post("/v1/evaluate", json={"p": 0.5, "k": 2}, params={"policy": "nonexistent"}).status_code == 404
        assert client.get("/nowhere").status_code == 404
        assert client.delete("/v1/decisions").status_code == 405


def test_health_and_readiness(sqlite_server: Server) -> None:
    with sqlite_server.client() as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz").json()
        assert ready["status"] == "ready"
        assert ready["database"] == "sqlite"


def test_nul_characters_are_rejected_at_the_boundary(database_url: str, server_factory: Callable[..., Server]) -> None:
    """PostgreSQL text cannot hold NUL: it is a 4xx naming the field on every database, never a 5xx."""
    server = server_factory(database_url)
    with server.client() as client:
        body = b'{"p": 0.5, "k": 2, "target": "a\\u0000b"}'
        response = client.post("/v1/decisions", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 422
        assert response.json()["errors"][0]["pointer"] == "/target"
        assert client.get("/v1/decisions", params={"target": "a\x00b"}).status_code == 400
        for path in (
            "/v1/decisions/a%00b",
            "/v1/decisions/a%00b/outcome",
            "/v1/policies/a%00b",
            "/v1/profiles/a%00b",
            "/decisions/a%00b",
        ):
            assert client.get(path).status_code == 404, path
        assert client.post("/v1/decisions/a%00b/reevaluate", params={"policy": "default"}).status_code == 404
        assert client.get("/v1/decisions", params={"cursor": "a\x00"}).status_code == 400
        assert client.get("/decisions", params={"cursor": "a\x00"}).status_code == 400
        assert client.get("/v1/decisions").json()["items"] == []


def test_a_client_may_say_where_a_decision_comes_from(sqlite_server: Server) -> None:
    """`source` and `source_detail` are optional: stored when given, `api` when not; `cli` and odd details are 422."""
    detail = {"user_id": "U2147483697", "team_id": "T0001", "channel_id": "C2147483705"}
    with sqlite_server.client() as client:
        plain = client.post("/v1/decisions", json=ATTENTION)
        assert plain.status_code == 201
        assert (plain.json()["source"], plain.json()["source_detail"]) == ("api", None)
        assert "source" not in plain.json()["proposal"]
        slack = client.post("/v1/decisions", json=ATTENTION | {"source": "slack", "source_detail": detail})
        assert slack.status_code == 201
        stored = client.get(slack.headers["location"]).json()
        assert (stored["source"], stored["source_detail"]) == ("slack", detail)
        assert stored["proposal"] == plain.json()["proposal"]
        before = _count(client)
        for bad in ({"source": "cli"}, {"source_detail": {"User": "U1"}}, {"source_detail": {"user_id": ""}}):
            refused = client.post("/v1/decisions", json=ATTENTION | bad)
            assert refused.status_code == 422, bad
        assert _count(client) == before
