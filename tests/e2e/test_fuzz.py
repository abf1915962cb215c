"""Schemathesis against openapi/openapi.json on a live server: no 5xx, every response as documented.

Two checks are left out, each for a reason:
- `positive_data_acceptance`: the cross-field rules of a proposal (`p` or `profile_id`; constraints inside the
  `p`/`k` unions, which Litestar's schema generator drops) cannot be said in OpenAPI, so "schema-valid" bodies may
  rightly be rejected with a 422 naming the rule.
- `allow_header_conformance`: Litestar answers automatic OPTIONS per handler, listing POST or GET, not both.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import IN_CI, ROOT, Server
from tests.e2e.test_trust import create_token
from tests.strategies import extreme_proposals, nested_json, nesting_depths

# Minutes each (schemathesis on SQLite, on PostgreSQL): on two workers they run side by side.
pytestmark = [pytest.mark.e2e, pytest.mark.spread]

EXAMPLES = int(os.environ.get("WORTHIT_FUZZ_EXAMPLES", "50" if IN_CI else "40"))


def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    database_url: str, server_factory: Callable[..., Server], tmp_path: Path
) -> None:
    """On SQLite and on PostgreSQL: the two reject different things (PostgreSQL text holds no NUL).

    With auth on, as the document declares it (bearer): the checks of unauthenticated requests expect a 401. Failed
    authentications are not limited, or those probes would answer 429 to every later request of the address."""
    token = create_token(database_url, "admin", "schemathesis")
    server = server_factory(
        database_url,
        env={"WORTHIT_RATE_LIMIT": "off", "WORTHIT_AUTH_FAILURE_LIMIT": "off", "WORTHIT_LOG_LEVEL": "info"},
    )
    schemathesis = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "schemathesis"
    result = subprocess.run(
        [
            str(schemathesis if schemathesis.exists() else "schemathesis"),
            "run",
            str(ROOT / "openapi" / "openapi.json"),
            "--url",
            server.url,
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance,allow_header_conformance",
            "--max-examples",
            str(EXAMPLES),
            "--workers",
            "1",
            "--seed",
            "20261129",
            "--generation-database",
            "none",
            "--no-color",
            "--header",
            f"Authorization: Bearer {token}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    summary = re.search(r"(\d+) generated", result.stdout)
    print(f"schemathesis: {summary.group(0) if summary else '?'} over {EXAMPLES} examples per operation")
    assert result.returncode == 0, result.stdout[-6000:]
    assert summary is not None
    assert int(summary.group(1)) > 200
    assert "Tested: " in result.stdout
    server_log = server.log.read_text()
    assert server_log.count('"msg":"request"') > 200, "the access log saw the requests"
    assert not re.search(r'"status":5\d\d', server_log)


def test_extreme_numbers_and_deep_nesting_never_answer_5xx(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """The strategies of extreme inputs (tests/strategies.py), through a real server on both databases: extreme
    doubles in every numeric field of a proposal and bodies nested to any depth get a 4xx problem or a full answer
    that reads back."""
    server = server_factory(database_url, env={"WORTHIT_RATE_LIMIT": "off"})
    with server.client(timeout=30) as client:
        _fuzz(client)
    assert not re.search(r'"status":5\d\d', server.log.read_text())
    assert "unhandled error" not in server.log.read_text()


def _fuzz(client: httpx.Client) -> None:

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(body=extreme_proposals())
    def numbers(body: dict[str, object]) -> None:
        for path, payload in (
            ("/v1/evaluate", body),
            ("/v1/portfolio", {"proposals": [body], "budget_weeks": 3}),
            ("/v1/decisions", body),
        ):
            answer = client.post(path, json=payload)
            assert answer.status_code < 500, (path, payload, answer.text)
            if answer.status_code >= 400:
                assert answer.headers["content-type"] == "application/problem+json"
            elif path == "/v1/decisions":
                assert client.get(answer.headers["location"]).json() == answer.json()
        assert client.get("/v1/decisions", params={"limit": 5}).status_code == 200

    @settings(max_examples=max(EXAMPLES // 4, 10), deadline=None, database=None)
    @given(depth=nesting_depths, array=st.booleans())
    def nesting(depth: int, array: bool) -> None:
        body = nested_json(depth, array=array)
        json_ = {"content-type": "application/json"}
        for method, path, headers, content in (
            ("POST", "/v1/evaluate", json_, body),
            ("POST", "/v1/decisions", json_, body),
            ("POST", "/v1/plans", json_, body),
            ("POST", "/v1/portfolio", json_, body),
            ("PUT", "/v1/policies/fuzz", json_, body),
            ("PUT", "/v1/policies/fuzz", {"content-type": "application/toml"}, b"x = " + b"[" * depth + b"]" * depth),
        ):
            answer = client.request(method, path, content=content, headers=headers)
            assert 400 <= answer.status_code < 500, (method, path, depth, answer.status_code)
            assert answer.headers["content-type"] == "application/problem+json"

    numbers()
    nesting()
    assert client.get("/v1/policies/fuzz").status_code == 404
