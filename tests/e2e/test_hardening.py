"""End to end on real servers: what an attacker and a careless admin found, each shut for good."""

from __future__ import annotations

import gzip
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import Server, worthit
from tests.e2e.test_slack import SECRET, command
from tests.e2e.test_trust import create_token
from tests.harness import tls

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


# 3. A rejected policy is not stored, and a damaged stored one never takes the service down.

REJECTED_POLICIES = [
    ("application/toml", b"min_rate = inf", "/min_rate"),
    ("application/toml", b"noise_floor = nan", "/noise_floor"),
    ("application/toml", b"horizon_months = inf", "/horizon_months"),
    ("application/toml", b"noise_floor = 1.5", "/noise_floor"),
    ("application/toml", b'[gate]\nmissing_block = "maybe"', "/gate/missing_block"),
    ("application/json", b'{"min_rate": 1e999}', ""),
    ("application/toml", b"x = " + b"[" * 5000 + b"]" * 5000, ""),
    ("application/json", b'{"a":' * 5000 + b"1" + b"}" * 5000, ""),
]


def test_rejected_policies_store_nothing(database_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(database_url)
    with server.client() as client:
        for content_type, body, pointer in REJECTED_POLICIES:
            answer = client.put("/v1/policies/default", content=body, headers={"content-type": content_type})
            assert 400 <= answer.status_code < 500, (body[:40], answer.status_code, answer.text)
            assert answer.headers["content-type"] == "application/problem+json", body[:40]
            if pointer:
                assert (answer.json().get("errors") or [{}])[0].get("pointer") == pointer, (body[:40], answer.json())
        assert client.get("/v1/policies/default").json()["version"] == 1
        assert client.get("/v1/policies/default", params={"version": 2}).status_code == 404
        assert client.post("/v1/evaluate", json=ATTENTION).status_code == 200


ATTENTION = {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}


def test_a_damaged_stored_policy_never_takes_evaluation_down(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """A version stored before validation was complete (min_rate written as null) is skipped, not fatal."""
    import sqlite3

    server = server_factory(sqlite_url)
    with server.client() as client:
        assert client.put("/v1/policies/team", json={"noise_floor": 0.05}).status_code == 200
    server.stop()
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        document = db.execute("SELECT document FROM policies WHERE name = 'team'").fetchone()[0]
        damaged = document.replace('"version":1', '"version":2').replace('"min_rate":0.01', '"min_rate":null')
        db.execute(
            "INSERT INTO policies (name, version, created_at, document) VALUES ('team', 2, '2026-01-01', ?)", (damaged,)
        )
        damaged_default = damaged.replace('"name":"team"', '"name":"default"')
        db.execute(
            "INSERT INTO policies (name, version, created_at, document) VALUES ('default', 2, '2026-01-01', ?)",
            (damaged_default,),
        )
    server = server_factory(sqlite_url)
    with server.client() as client:
        team = client.post("/v1/evaluate", json=ATTENTION, params={"policy": "team"})
        assert team.status_code == 200
        assert team.json()["policy"] == {"name": "team", "version": 1}
        default = client.post("/v1/evaluate", json=ATTENTION)
        assert default.status_code == 200
        assert default.json()["policy"] == {"name": "default", "version": 1}
        assert client.get("/v1/policies/team", params={"version": 2}).status_code == 404
        assert client.put("/v1/policies/team", json={"noise_floor": 0.02}).json()["version"] == 3


def answers_floors(answers: list[httpx.Response]) -> set[float]:
    return {answer.json()["noise_floor"] for answer in answers}


# 6. Concurrent policy PUTs on several processes: every valid write stores a version; no SQL in any answer.


def test_concurrent_policy_puts_all_store_a_version(postgres_url: str, server_factory: Callable[..., Server]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    server = server_factory(postgres_url, workers=2)

    def put(i: int) -> httpx.Response:
        with httpx.Client(base_url=server.url, timeout=60, verify=tls()) as client:
            return client.put("/v1/policies/shared", json={"noise_floor": (i + 1) / 1000})

    with ThreadPoolExecutor(64) as pool:
        answers = list(pool.map(put, range(64)))
    bodies = [answer.text for answer in answers]
    assert [answer.status_code for answer in answers] == [200] * 64, [b for b in bodies if "version" not in b][:3]
    assert sorted(answer.json()["version"] for answer in answers) == list(range(1, 65))
    assert not any("INSERT" in body or "SELECT" in body for body in bodies)
    with server.client() as client:
        # The newest as every process will see it once its 5 s policy cache expires: version 64 is stored.
        assert client.get("/v1/policies/shared", params={"version": 64}).json()["noise_floor"] in answers_floors(
            answers
        )


# 5. The 500s: each is a 4xx naming the field.

BASE = {"target": "a", "p": 0.5, "baseline_ms": 100}
HUGE = [{"name": name, "ms": 1e308} for name in ("a", "b", "c")]
FIVE_HUNDREDS = [
    (BASE | {"k": 10, "goal": {"throughput_per_s": 1e308}}, "/goal/throughput_per_s"),
    (BASE | {"k": 5e-324, "goal": {"throughput_per_s": 10}}, "/k"),
    ({"target": "a", "p": 0.5, "k": 10, "breakdown": HUGE}, "/breakdown"),
    (BASE | {"k": 10, "breakdown": HUGE}, "/breakdown"),
]


def _trace(ts: float) -> bytes:
    import json

    events = [
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 1, "tid": 7, "ts": ts, "dur": 10.0},
        {"ph": "X", "cat": "kernel", "name": "softmax", "pid": 1, "tid": 7, "ts": 20.0, "dur": 5.0},
    ]
    return json.dumps({"traceEvents": events}).encode()


def test_former_500s_are_4xx_naming_the_field(database_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(database_url)
    with server.client() as client:
        for body, pointer in FIVE_HUNDREDS:
            for path in ("/v1/evaluate", "/v1/decisions"):
                answer = client.post(path, json=body)
                assert answer.status_code == 422, (path, body, answer.text)
                assert answer.headers["content-type"] == "application/problem+json"
                assert answer.json()["errors"][0]["pointer"] == pointer, answer.json()
        deep = b'{"p":' * 20_000 + b"1" + b"}" * 20_000
        nested = client.post("/v1/evaluate", content=deep, headers={"content-type": "application/json"})
        assert nested.status_code == 422
        for deep in (b'{"traceEvents":' + b"[" * 100_000 + b"]" * 100_000 + b"}", b"[" * 100_000 + b"]" * 100_000):
            upload = client.post("/v1/profiles", content=deep, headers={"content-type": "application/json"})
            assert upload.status_code == 422, upload.text
            policy = client.put("/v1/policies/default", content=deep, headers={"content-type": "application/json"})
            assert policy.status_code == 400, policy.text
            assert "nested too deeply" in policy.json()["detail"]
        toml = client.put(
            "/v1/policies/default",
            content=b"x = " + b"[" * 5000 + b"]" * 5000,
            headers={"content-type": "application/toml"},
        )
        assert toml.status_code == 422
        for ts in (1e23, 1e308):
            profile = client.post("/v1/profiles", content=_trace(ts), headers={"content-type": "application/json"})
            assert profile.status_code == 422, (ts, profile.text)
            assert "outside what a profiler clock records" in profile.json()["detail"]
        assert client.get("/v1/decisions").json()["items"] == []
    assert "unhandled error" not in server.log.read_text()


# 7. Slack: what a user typed is escaped in every field Slack renders, the notification fallback too.


def _strings(value: object) -> list[str]:
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return [value] if isinstance(value, str) else []


def test_slack_escapes_user_text_in_the_fallback_and_every_block(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(sqlite_url, env={"WORTHIT_SLACK_SIGNING_SECRET": SECRET})
    with server.client() as client:
        for text in (
            "p=21% k=10 cost=3w baseline=100ms target=<!channel>",
            "p=21% k=10 cost=3w baseline=100ms target=<@U123ABC>",
            "p=21% k=10 cost=3w baseline=100ms target=<https://evil.example|click>",
            "p=21% k=10 <!here>",
        ):
            message = command(client, text).json()
            assert message["text"], message
            rendered = [message["text"]] + [
                s for block in message["blocks"] if block["type"] != "header" for s in _strings(block)
            ]
            for field in rendered:
                for raw in ("<!channel>", "<!here>", "<@U123ABC>", "<https://evil.example|click>"):
                    assert raw not in field, (text, field)
        assert (
            "&lt;!channel&gt;" in command(client, "p=21% k=10 cost=3w baseline=100ms target=<!channel>").json()["text"]
        )


# A mistyped value nested deep under a field is one 4xx; the body is decoded once.


def test_a_value_nested_100000_deep_under_a_field_is_a_422(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """`title` holding 100,000 nested arrays (or objects): 422 problem+json on both routes, nothing stored; a number
    out of range still names its field."""
    server = server_factory(database_url)
    arrays = b'{"target":"a","p":0.5,"k":10,"title":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    objects = b'{"target":"a","p":0.5,"k":10,"title":' + b'{"a":' * 40_000 + b"1" + b"}" * 40_000 + b"}"
    with server.client() as client:
        for body in (arrays, objects):
            for path in ("/v1/evaluate", "/v1/decisions"):
                answer = client.post(path, content=body, headers={"content-type": "application/json"})
                assert answer.status_code == 422, (path, answer.status_code, answer.text[:200])
                assert answer.headers["content-type"] == "application/problem+json"
                assert "nested too deeply" in answer.json()["detail"]
        shallow = client.post("/v1/evaluate", json={"target": "a", "p": 0.5, "k": 10, "title": [[[1]]]})
        assert shallow.status_code == 422
        assert shallow.json()["errors"][0]["pointer"] == "/title"
        out_of_range = client.post(
            "/v1/evaluate",
            content=b'{"target":"a","p":0.5,"k":10,"breakdown":[{"name":"a","ms":1e999}]}',
            headers={"content-type": "application/json"},
        )
        assert out_of_range.status_code == 422
        assert out_of_range.json()["errors"][0]["pointer"] == "/breakdown/0/ms"
        assert "finite number" in out_of_range.json()["detail"]
        assert client.get("/v1/decisions").json()["items"] == []
        assert client.get("/healthz", timeout=1).status_code == 200
    assert "unhandled error" not in server.log.read_text()


# No public route serves a page that loads third-party JavaScript, unless a setting asks for it.


def test_schema_pages_are_off_unless_enabled_and_the_document_stays(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """Litestar's /schema pages load scripts from a CDN at `latest` without SRI: off by default (404, no script);
    /schema/openapi.json still answers; WORTHIT_SCHEMA_UI=1 brings the pages back."""
    create_token(sqlite_url, "admin", "ops")  # auth on: the document stays public
    server = server_factory(sqlite_url)
    with server.client() as client:
        for path in ("/schema/swagger", "/schema/redoc", "/schema/elements", "/schema/rapidoc", "/schema/scalar"):
            page = client.get(path)
            assert page.status_code == 404, path
            assert "<script" not in page.text, path
        for path in ("/schema", "/schema/openapi.json"):
            document = client.get(path)
            assert document.status_code == 200, path
            assert document.headers["content-type"].startswith("application/vnd.oai.openapi+json"), path
            assert document.json()["info"]["title"] == "worthit"
    server.stop()
    enabled = server_factory(sqlite_url, env={"WORTHIT_SCHEMA_UI": "1"})
    with enabled.client() as client:
        page = client.get("/schema/swagger")
        assert page.status_code == 200
        assert "<script" in page.text


# Idempotency keys are the caller's own.


def test_an_idempotency_key_reused_by_another_token_gets_its_own_decision(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """Keys were global: another token reusing one got the first caller's decision, or 409 with another body."""
    first = {"authorization": f"Bearer {create_token(database_url, 'write', 'team-a')}"}
    second = {"authorization": f"Bearer {create_token(database_url, 'write', 'team-b')}"}
    server = server_factory(database_url)
    key = {"idempotency-key": "retry-1"}
    with server.client() as client:
        made = client.post("/v1/decisions", json=ATTENTION, headers=first | key)
        assert made.status_code == 201
        theirs = client.post("/v1/decisions", json=ATTENTION, headers=second | key)
        assert theirs.status_code == 201, theirs.text
        assert theirs.json()["id"] != made.json()["id"]
        other_body = client.post("/v1/decisions", json=ATTENTION | {"k": 5}, headers=second | {"idempotency-key": "k2"})
        assert other_body.status_code == 201
        assert (
            client.post(
                "/v1/decisions", json=ATTENTION | {"k": 4}, headers=first | {"idempotency-key": "k2"}
            ).status_code
            == 201
        )
        replay = client.post("/v1/decisions", json=ATTENTION, headers=first | key)
        assert (replay.status_code, replay.json()["id"]) == (200, made.json()["id"])
        assert client.post("/v1/decisions", json=ATTENTION | {"k": 3}, headers=first | key).status_code == 409
        assert len(client.get("/v1/decisions", headers=first).json()["items"]) == 4


# A policy whose figures are each valid but multiply to nothing: every evaluation under it was a 500.

STARTS = {
    "target": "step",
    "p": 0.3,
    "k": 3,
    "baseline_ms": 10,
    "cost_weeks": 2,
    "flags": {"gpu_minutes_per_start": 45, "starts_per_day": 2000},
}


def test_a_gpu_hour_priced_near_nothing_is_an_answer_not_a_500(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """`gpu_hour_usd = 1e-200` and `horizon_months = 1e-200` are each a positive number, and the horizon's GPU-hour
    price, their product, underflowed to 0: recurring_gpu_cost divided by it and every proposal with a per-start
    cost and no fleet answered 500. No fleet pays for the work then: decline, on both routes, and stored."""
    server = server_factory(sqlite_url)
    with server.client() as client:
        assert client.put("/v1/policies/free", json={"gpu_hour_usd": 1e-200, "horizon_months": 1e-200}).is_success
        for path in ("/v1/evaluate", "/v1/decisions"):
            answer = client.post(path, params={"policy": "free"}, json=STARTS)
            assert answer.is_success, (path, answer.status_code, answer.text[:300])
            assert answer.json()["verdict"] == "decline"
            assert answer.json()["statement"].startswith("No fleet is large enough to pay for it")
        assert client.post("/v1/evaluate", json=STARTS).json()["verdict"] == "fund_if"  # the default still asks
    assert "unhandled error" not in server.log.read_text()


# Profiles whose kernel names are hundreds of KB: small as a gzip, large once read.


def _long_names_trace(kernels: int, length: int) -> bytes:
    """A gzipped PyTorch trace of `kernels` kernels, each named by `length` characters (and one `softmax`)."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100_000},
        {"ph": "X", "cat": "kernel", "name": "softmax", "pid": 1, "tid": 7, "ts": 0, "dur": 10},
    ]
    events += [
        {"ph": "X", "cat": "kernel", "name": f"k{i:03d}" + "x" * length, "pid": 1, "tid": 7, "ts": 10 + i * 100}
        | {"dur": 50}
        for i in range(kernels)
    ]
    return gzip.compress(json.dumps({"traceEvents": events}).encode(), 9)


def test_a_glob_over_names_of_hundreds_of_kb_is_refused_before_it_holds_the_server(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """`*` + 16,000 `x` + `y*` as the target of a profile of 20 names of 200 KB: fnmatch's regex backtracked through
    6.4e10 character pairs on the event loop, /healthz stopped answering and SIGTERM could not stop the server. Now
    a 422 naming the figures, at once; an exact name and a plain prefix still find their phase."""
    server = server_factory(sqlite_url)
    with server.client(timeout=10) as client:
        upload = client.post(
            "/v1/profiles", content=_long_names_trace(20, 200_000), headers={"content-type": "application/gzip"}
        )
        assert upload.status_code == 201, upload.text[:300]
        profile = upload.json()["id"]
        started = time.monotonic()
        glob = client.post("/v1/evaluate", json={"target": "*" + "x" * 16_000 + "y*", "profile_id": profile, "k": 2})
        assert glob.status_code == 422
        assert "more matching than a request may do" in glob.json()["detail"]
        assert time.monotonic() - started < 5
        assert client.get("/healthz", timeout=1).status_code == 200
        for target in ("softmax", "k007"):
            found = client.post("/v1/evaluate", json={"target": target, "profile_id": profile, "k": 2})
            assert found.status_code == 200, (target, found.text[:300])
    assert "unhandled error" not in server.log.read_text()


def test_kernel_names_of_hundreds_of_kb_are_stored_cut_and_read_without_copies(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """60 kernels named by 400 KB each (27 KB of gzip): every read of the profile was 48 MB (each name in `phases`
    and again in `step_figures`) and 8 concurrent reads took the server to 637 MB, past the pod's 512 MiB. Names are
    now stored cut to the model's 16,384 characters with a digest of the whole: a 2 MB document, still distinct, still
    found by their start and by the name the CLI shows; 8 concurrent reads stay far within the pod; the 150-kernel
    upload that was a 413 (its breakdown over the worker's 64 MiB answer) is now a profile of 5 MB."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.e2e.test_memory import POD_LIMIT, peak_rss
    from worthit.rules.model import LONG_NAME_MAX
    from worthit.rules.profiles.naming import short_name

    server = server_factory(sqlite_url)
    with server.client(timeout=60) as client:
        upload = client.post(
            "/v1/profiles", content=_long_names_trace(60, 400_000), headers={"content-type": "application/gzip"}
        )
        assert upload.status_code == 201, upload.text[:300]
        assert len(upload.content) < 4 * 1024**2
        profile = upload.json()
        names = [phase["name"] for phase in profile["breakdown"]["phases"]]
        assert len(set(names)) == len(names) == 61
        assert max(len(name) for name in names) == LONG_NAME_MAX
        for step in profile["breakdown"]["step_figures"]:
            assert set(step["phases"]) <= set(names)

        def read(_: int) -> httpx.Response:
            with server.client(timeout=60) as reader:
                return reader.get(f"/v1/profiles/{profile['id']}")

        with ThreadPoolExecutor(8) as pool:
            reads = list(pool.map(read, range(8)))
        assert all(answer.status_code == 200 for answer in reads)
        assert reads[0].json() == profile
        assert reads[0].headers["etag"]
        same = client.get(f"/v1/profiles/{profile['id']}", headers={"if-none-match": reads[0].headers["etag"]})
        assert (same.status_code, same.content) == (304, b"")
        shown = short_name("k007" + "x" * 400_000)  # what `worthit profile` shows for the file as it was
        for target in ("softmax", "k007", shown):
            found = client.post("/v1/evaluate", json={"target": target, "profile_id": profile["id"], "k": 2})
            assert found.status_code == 200, (target[:40], found.text[:300])
        larger = client.post(
            "/v1/profiles", content=_long_names_trace(150, 400_000), headers={"content-type": "application/gzip"}
        )
        assert larger.status_code == 201, larger.text[:300]
        assert len(larger.content) < 8 * 1024**2
    assert peak_rss(server.process.pid) < POD_LIMIT // 2
    assert "unhandled error" not in server.log.read_text()


def test_a_since_outside_the_years_in_utc_is_a_400_on_both_databases(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """`since=0001-01-01T00:00:00+14:00` is in year 0 in UTC: PostgreSQL refused it and the service answered 503,
    "the database takes no writes now". A 400 naming the parameter; the edge of the range still answers."""
    server = server_factory(database_url)
    with server.client() as client:
        for since in ("0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-23:59"):
            answer = client.get("/v1/decisions", params={"since": since})
            assert answer.status_code == 400, (since, answer.text[:300])
            assert answer.json()["errors"][0]["pointer"] == "#/query/since"
        assert client.get("/v1/decisions", params={"since": "0001-01-01T14:00:00+14:00"}).status_code == 200
        assert client.get("/v1/decisions", params={"since": "9999-12-31T23:59:59Z"}).status_code == 200
    assert not re.search(r'"status":5\d\d', server.log.read_text())


# A decision that does not read back: stored, it broke every read of it and every listing that reached it.

UNREADABLE = {
    "target": "decode",
    "p": 0.8,
    "k": 1.0,
    "cost_weeks": 1,
    "scope": {"workload": "unreadable"},
    "added_work": {
        "speculative": {
            "draft_tokens": 14,
            "acceptance": 2.2250738585072014e-308,
            "draft_cost": 0.98,
            "verify_cost": 1.7976931348623157e308,
        }
    },
}


def _store_unreadable_copy(database_url: str, decision_id: str) -> str:
    """A copy of a stored decision, newer than it, whose `saving_fraction` is null: what the service stored before
    writes were checked to read back. Its id."""
    import asyncio

    from sqlalchemy import text

    from worthit.service.db.engine import create_engine
    from worthit.service.ids import new_id
    from worthit.service.settings import Settings

    bad_id = new_id()

    async def write() -> None:
        engine = create_engine(Settings(database_url=database_url))
        try:
            async with engine.begin() as connection:
                row = (
                    await connection.execute(text("SELECT * FROM decisions WHERE id = :id"), {"id": decision_id})
                ).one()
                values = dict(row._mapping) | {"id": bad_id}
                document = values["document"].replace(decision_id, bad_id)
                values["document"] = re.sub(r'"saving_fraction":[^,]+', '"saving_fraction":null', document)
                assert '"saving_fraction":null' in values["document"]
                columns = ", ".join(values)
                await connection.execute(
                    text(f"INSERT INTO decisions ({columns}) VALUES ({', '.join(':' + c for c in values)})"), values
                )
        finally:
            await engine.dispose()

    asyncio.run(write())
    return bad_id


def test_a_decision_that_does_not_read_back_is_never_stored_and_never_breaks_a_listing(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """A k of 5.6e-309 made `saving_fraction` -inf, stored as null: the POST answered 201, then `GET` of it answered
    422 and `GET /v1/decisions` cut its 200 stream mid-body for every reader. Now the write is a 422 and nothing is
    stored (the engine refuses such a k; a decision that would not read back is refused before it is stored
    either way); a document stored so before is left out of listings (logged) and its own read is a 500 naming it."""
    server = server_factory(database_url)
    with server.client() as client:
        refused = client.post("/v1/decisions", json=UNREADABLE)
        assert refused.status_code == 422, refused.text[:300]
        assert refused.headers["content-type"] == "application/problem+json"
        # refused where the derived k is made (rules.context.derived_k); the service's read-back check stands behind
        assert "added_work" in refused.json()["detail"]
        assert client.get("/v1/decisions").json()["items"] == []
        older = client.post("/v1/decisions", json=ATTENTION | {"scope": {"workload": "unreadable"}}).json()
    bad_id = _store_unreadable_copy(database_url, older["id"])
    with server.client() as client:
        newer = client.post("/v1/decisions", json=ATTENTION | {"scope": {"workload": "unreadable"}}).json()
        listing = client.get("/v1/decisions")
        assert listing.status_code == 200
        assert [item["id"] for item in listing.json()["items"]] == [newer["id"], older["id"]]  # whole JSON
        assert [item["id"] for item in client.get("/v1/decisions", params={"limit": 2}).json()["items"]] == [
            newer["id"]
        ]
        one = client.get(f"/v1/decisions/{bad_id}")
        assert one.status_code == 500
        assert one.headers["content-type"] == "application/problem+json"
        assert bad_id in one.json()["detail"]
        assert client.get(f"/v1/decisions/{older['id']}").json() == older
        assert client.get("/decisions").status_code == 200
        assert client.get("/v1/workloads/unreadable").status_code == 200
    assert "unhandled error" not in server.log.read_text()
    assert "left out of a listing" in server.log.read_text()
