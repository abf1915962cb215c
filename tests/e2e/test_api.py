"""The API end to end: a real `worthit serve` (uvicorn) on a SQLite file and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.conftest import ROOT, Server
from tests.e2e.test_trust import create_token

pytestmark = pytest.mark.e2e
PROFILES = ROOT / "tests" / "data" / "profiles"

ATTENTION = {
    "target": "attention_softmax",
    "p": 0.21,
    "k": 10,
    "baseline_ms": 100,
    "cost_weeks": 3,
    "scope": {"workload": "inference"},
}


def _floats(document: object) -> list[float]:
    if isinstance(document, float):
        return [document]
    if isinstance(document, dict):
        return [x for value in document.values() for x in _floats(value)]
    if isinstance(document, list):
        return [x for value in document for x in _floats(value)]
    return []


def _holding(document: object, key: str) -> list[dict[str, object]]:
    """Every object in `document` with `key` among its keys."""
    if isinstance(document, list):
        return [found for item in document for found in _holding(item, key)]
    if not isinstance(document, dict):
        return []
    inner = [found for value in document.values() for found in _holding(value, key)]
    return [document, *inner] if key in document else inner


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
        # Exactly: figures are settled to the 15 digits a double carries, so no float noise reaches the client.
        assert (a["new_ms"], a["saving_ms"], a["rate"], a["rate_unit"]) == (81.1, 18.9, 6.3, "ms/week")
        assert (a["speedup"], a["headroom_captured"], a["remaining_ms"]) == (1.23304562268804, 0.9, 2.1)
        assert "81.1 ms (1.233×), saving 18.9 ms, 6.3 ms per engineer-week" in decision["statement"]
        figures = [value for value in _floats(decision | {"proposal": None}) if value != float(f"{value:.15g}")]
        assert figures == [], "no figure has more digits than a double carries"
        # One unit per figure: `rate` is in its `rate_unit` wherever it appears; a share per week is `rate_fraction`.
        assert all("rate_unit" in holder for holder in _holding(decision, "rate"))
        worth = next(stage for stage in decision["reasoning"] if stage["stage"] == "worth")
        assert worth["figures"]["rate_fraction"] == 0.063
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


def test_list_filters_by_team(database_url: str, server_factory: Callable[..., Server]) -> None:
    """`?team=` finds the decisions of one team, newest first, with the other filters and the cursor."""
    server = server_factory(database_url)
    with server.client() as client:
        teams = ["serving", "training", None, "serving", "serving"]
        ids = [
            client.post("/v1/decisions", json=ATTENTION | ({"team": team} if team else {})).json()["id"]
            for team in teams
        ]
        serving = [ids[4], ids[3], ids[0]]
        assert [item["id"] for item in client.get("/v1/decisions", params={"team": "serving"}).json()["items"]] == (
            serving
        )
        first = client.get("/v1/decisions", params={"team": "serving", "limit": 2}).json()
        assert [item["id"] for item in first["items"]] == serving[:2]
        rest = client.get("/v1/decisions", params={"team": "serving", "cursor": first["next_cursor"]}).json()
        assert ([item["id"] for item in rest["items"]], rest["next_cursor"]) == ([ids[0]], None)
        assert [item["id"] for item in client.get("/v1/decisions", params={"team": "training"}).json()["items"]] == [
            ids[1]
        ]
        assert client.get("/v1/decisions", params={"team": "inference"}).json()["items"] == []
        assert client.get("/v1/decisions", params={"team": "serving", "verdict": "decline"}).json()["items"] == []
        too_long = client.get("/v1/decisions", params={"team": "x" * 201})
        assert too_long.status_code == 400
        assert too_long.json()["errors"][0]["pointer"] == "#/query/team"


BAD_BODIES = [
    pytest.param(b'{"p": 1.7, "k": 10}', 422, "/p", "Expected `p` <= 1", id="p-above-one"),
    pytest.param(b'{"p": "0.5", "k": 10}', 422, "/p", 'got "0.5"', id="string-for-number"),
    pytest.param(b'{"p": 0.5, "k": 10, "speed": 3}', 422, "/speed", "Unknown field `speed`", id="unknown-field"),
    pytest.param(b'{"p": 0.5, "k": 1e999}', 422, "/k", "finite", id="infinite-number"),
    pytest.param(b'{"p": NaN, "k": 10}', 400, "", "malformed", id="nan"),
    pytest.param(b"", 400, "", "empty body", id="empty-body"),
    pytest.param(b'{"p": 0.5', 400, "", "malformed", id="truncated"),
    pytest.param(b"[0.5, 10]", 422, "", "Expected `object`", id="array"),
    pytest.param(b'{"p": 0.5}', 422, "/k", "`k` is required (the target's own speedup: `10`", id="missing-k"),
    pytest.param(
        b'{"p": 0.5, "k": 10, "cost_wekks": 3}',
        422,
        "/cost_wekks",
        "Unknown field `cost_wekks`; did you mean `cost_weeks`? The fields here: `title`, `team`, `target`, `p`,",
        id="did-you-mean",
    ),
    pytest.param(
        b'{"p": 0.5, "k": 10, "baseline": 100}',
        422,
        "/baseline",
        "Unknown field `baseline`; did you mean `baseline_ms`?",
        id="slack-name",
    ),
    pytest.param(
        b'{"p": 0.5, "k": 10, "scope": {"measured": "device"}}',
        422,
        "/scope/measured",
        'Expected `measured` to be one of `device_activity`, `end_to_end`, `rank`, `step`, got "device"',
        id="enum-lists-values",
    ),
    pytest.param(
        b'{"p": 0.5, "k": 10, "baseline_ms": "100ms"}',
        422,
        "/baseline_ms",
        'got "100ms"; a JSON body takes numbers: write 100 - at `$.baseline_ms`',
        id="shorthand-names-the-number",
    ),
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
        'Expected `portability` to be one of `hand_asm`, `portable`, `vendor_specific`, got "magic"',
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


def test_only_the_server_says_where_a_decision_comes_from(sqlite_server: Server) -> None:
    """The body has no `source` or `source_detail`: a client naming either is a 422 naming the field, and nothing is
    stored. The surfaces say it in `Worthit-Source`, and Slack only from a token with the `slack` scope
    (tests/e2e/test_slack_owner.py); the gate's pull request is its detail."""
    detail = {"user_id": "U2147483697", "team_id": "T0001", "channel_id": "C2147483705"}
    with sqlite_server.client() as client:
        plain = client.post("/v1/decisions", json=ATTENTION)
        assert plain.status_code == 201
        assert (plain.json()["source"], plain.json()["source_detail"]) == ("api", None)
        assert "source" not in plain.json()["proposal"]
        before = _count(client)
        for claim in ({"source": "slack", "source_detail": detail}, {"source": "slack"}, {"source_detail": detail}):
            refused = client.post("/v1/decisions", json=ATTENTION | claim)
            assert refused.status_code == 422, claim
            field = next(iter(claim))
            assert refused.json()["errors"][0]["pointer"] == f"/{field}"
            assert f"Unknown field `{field}`" in refused.json()["detail"]
        assert _count(client) == before
        gate = client.post(
            "/v1/decisions", json=ATTENTION, headers={"worthit-source": "gate; repository=o/n; pull_request=12"}
        )
        assert gate.status_code == 201
        assert (gate.json()["source"], gate.json()["source_detail"]) == (
            "gate",
            {"repository": "o/n", "pull_request": "12"},
        )
        for bad in ("cli", "gate; User=U1", "gate; user_id=", "slack; team_id=T1", "gate; " + "; ".join(["a=b"] * 11)):
            refused = client.post("/v1/decisions", json=ATTENTION, headers={"worthit-source": bad})
            assert refused.status_code == 400, bad
            assert "Worthit-Source" in refused.json()["detail"]
        assert _count(client) == before + 1


def _problem(response: httpx.Response, status: int) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, object] = response.json()
    assert problem["status"] == status
    return problem


def test_repeated_and_unknown_query_parameters_are_refused_naming_them(sqlite_server: Server) -> None:
    """No API parameter is a list: a repeated one is a 400 (not the last value kept), and so is one the route does
    not take (not ignored, as unknown body fields are not); both name the parameter with a `#/query/…` pointer."""
    with sqlite_server.client() as client:
        repeated = _problem(client.get("/v1/decisions?verdict=fund&verdict=decline"), 400)
        assert repeated["detail"] == "Invalid query `verdict`: expected one value, got 2"
        assert repeated["errors"] == [{"detail": repeated["detail"], "pointer": "#/query/verdict"}]
        unknown = _problem(client.get("/v1/decisions", params={"verdcit": "fund", "limit": 5}), 400)
        assert unknown["detail"] == (
            "Invalid query `verdcit`: unknown parameter; did you mean `verdict`? this route takes "
            "`cursor`, `limit`, `since`, `target`, `team`, `verdict`, `workload`"
        )
        assert [error["pointer"] for error in unknown["errors"]] == ["#/query/verdcit"]  # type: ignore[attr-defined]
        on_a_body_route = _problem(client.post("/v1/evaluate", params={"polcy": "default"}, json=ATTENTION), 400)
        assert "`polcy`" in str(on_a_body_route["detail"])
        assert "`policy`" in str(on_a_body_route["detail"])
        both = _problem(client.get("/v1/decisions?limit=1&limit=2&x="), 400)
        assert [error["pointer"] for error in both["errors"]] == ["#/query/limit", "#/query/x"]  # type: ignore[attr-defined]
        assert client.get("/v1/decisions", params={"verdict": "fund", "limit": 5}).status_code == 200
        assert client.get("/decisions", params={"verdict": "fund", "utm_source": "slack"}).status_code == 200
        assert client.options("/v1/decisions?verdict=fund&verdict=decline").status_code == 204


def test_header_problems_name_the_header_as_sent(sqlite_server: Server) -> None:
    with sqlite_server.client() as client:
        response = client.post("/v1/decisions", json=ATTENTION, headers={"Idempotency-Key": "k" * 256})
        problem = _problem(response, 400)
        assert problem["detail"] == "Invalid header `Idempotency-Key`: Expected `str` of length <= 255"
        assert problem["errors"] == [{"detail": problem["detail"], "pointer": "#/header/Idempotency-Key"}]


def test_every_problem_has_a_type_uri_and_the_413_states_the_limit(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """400, 401, 403, 404, 405, 413 (stating the route's limit and its setting) and 415: each has a problem type."""
    limits = {"WORTHIT_MAX_BODY_BYTES": "4096", "WORTHIT_MAX_PROFILE_BYTES": "8192"}
    server = server_factory(sqlite_url, env={"WORTHIT_REQUIRE_AUTH": "true"} | limits)
    base = "https://worthit.dev/problems/"
    with server.client() as client:
        assert _problem(client.get("/v1/decisions"), 401)["type"] == base + "unauthorized"
    token = create_token(sqlite_url, "write", "planner")
    with server.client(headers={"Authorization": f"Bearer {token}"}) as client:
        assert _problem(client.get("/v1/decisions/nope"), 404)["type"] == base + "not-found"
        assert _problem(client.get("/v1/policies/a%00b"), 404)["type"] == base + "not-found"
        assert _problem(client.delete("/v1/decisions"), 405)["type"] == base + "method-not-allowed"
        wrong = client.post("/v1/decisions", content=b"{}", headers={"content-type": "text/plain"})
        assert _problem(wrong, 415)["type"] == base + "unsupported-media-type"
        big = _problem(client.post("/v1/decisions", json=ATTENTION | {"title": "x" * 5000}), 413)
        assert big["type"] == base + "too-large"
        assert big["detail"] == "Expected a request body of at most 4096 bytes (WORTHIT_MAX_BODY_BYTES), got more"
        profile = _problem(client.post("/v1/profiles", content=b"x" * 8193), 413)
        assert (
            profile["detail"] == "Expected a request body of at most 8192 bytes (WORTHIT_MAX_PROFILE_BYTES), got more"
        )
        assert _problem(client.put("/v1/policies/strict", json={}), 403)["type"] == base + "forbidden"
        assert _problem(client.get("/v1/decisions", params={"limit": 0}), 400)["type"] == base + "bad-request"


def test_decision_and_profile_reads_carry_an_etag_and_answer_304(sqlite_server: Server) -> None:
    """`ETag` + `Cache-Control: no-cache, private` on decision and profile reads; `If-None-Match` with the tag
    (alone, in a list, weak, or `*`) is an empty 304 with the same headers; another tag gets the document."""
    with sqlite_server.client() as client:
        decision = client.post("/v1/decisions", json=ATTENTION).json()
        uploaded = client.post("/v1/profiles", content=(PROFILES / "seed_part2" / "kernel_trace.csv").read_bytes())
        assert uploaded.status_code == 201, uploaded.text
        urls = [f"/v1/decisions/{decision['id']}", uploaded.headers["location"]]
        for url in urls:
            first = client.get(url)
            assert first.status_code == 200
            tag = first.headers["etag"]
            assert len(tag) == 34
            assert tag == f'"{tag[1:-1]}"', "a strong tag, quoted"
            assert first.headers["cache-control"] == "no-cache, private"
            assert client.get(url).headers["etag"] == tag, "the same document has the same tag"
            for condition in (tag, f'"other", {tag}', f"W/{tag}", "*"):
                unchanged = client.get(url, headers={"If-None-Match": condition})
                assert unchanged.status_code == 304, condition
                assert unchanged.content == b""
                assert (unchanged.headers["etag"], unchanged.headers["cache-control"]) == (tag, "no-cache, private")
            changed = client.get(url, headers={"If-None-Match": '"not-this-one"'})
            assert changed.status_code == 200
            assert changed.json() == first.json()
        other = client.post("/v1/decisions", json=ATTENTION | {"p": 0.3}).json()
        assert client.get(f"/v1/decisions/{other['id']}").headers["etag"] != client.get(urls[0]).headers["etag"]
        for read in ("/v1/decisions", "/v1/rules", "/v1/policies", "/v1/policies/default", "/v1/calibration"):
            assert client.get(read).headers["cache-control"] == "no-cache, private", read
