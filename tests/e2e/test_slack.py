"""`/worthit` end to end: a real server, requests signed with Slack's own SDK, answers checked against Block Kit.

Signatures come from `slack_sdk.signature.SignatureVerifier.generate_signature`, not from an HMAC of ours, so a
mistake shared by the server and its tests cannot hide.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier

from tests.conftest import Server, start_server
from tests.unit.test_slack_blocks import block_kit_problems

pytestmark = pytest.mark.e2e

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # the example secret of Slack's documentation
PUBLIC_URL = "https://worthit.example.com"
FORM = {
    "token": "gIkuvaNzQIHg97ATvDxqgjtO",
    "team_id": "T0001",
    "team_domain": "example",
    "channel_id": "C2147483705",
    "channel_name": "perf",
    "user_id": "U2147483697",
    "user_name": "ada",
    "command": "/worthit",
    "response_url": "https://hooks.slack.com/commands/1234/5678",
    "trigger_id": "13345224609.738474920.8088930838d88f008e0",
    "api_app_id": "A123456",
}


def slash_body(text: str) -> bytes:
    return urlencode(FORM | {"text": text}).encode()


def signed_headers(body: bytes, *, secret: str = SECRET, timestamp: int | None = None) -> dict[str, str]:
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    assert signature is not None
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature,
    }


def command(client: httpx.Client, text: str) -> httpx.Response:
    body = slash_body(text)
    return client.post("/slack/commands", content=body, headers=signed_headers(body))


def count(client: httpx.Client) -> int:
    total, cursor = 0, None
    while True:
        page = client.get("/v1/decisions", params={"limit": 200} | ({"cursor": cursor} if cursor else {})).json()
        total += len(page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            return total


def slack_server(server_factory: Callable[..., Server], database_url: str, **env: str) -> Server:
    return server_factory(database_url, env={"WORTHIT_SLACK_SIGNING_SECRET": SECRET} | env)


@pytest.fixture(scope="module")
def storing_nothing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server with the signing secret for the tests whose requests must store nothing: each checks that the
    database is still empty after its own, so sharing it hides no stored row (one would fail that test and the next)."""
    directory = tmp_path_factory.mktemp("slack")
    server = start_server(
        f"sqlite:///{directory / 'w.db'}", directory / "server.log", env={"WORTHIT_SLACK_SIGNING_SECRET": SECRET}
    )
    yield server
    server.stop()


def text_of(message: dict[str, Any]) -> str:
    parts = [message["text"]]
    for block in message["blocks"]:
        parts += [block["text"]["text"]] if "text" in block else []
        parts += [item["text"] for item in block.get("fields", []) + block.get("elements", [])]
    return "\n".join(parts)


def test_signed_command_is_answered_in_block_kit_and_stored(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """Signed → 200 (not 201), Block Kit within limits, a link to the decision page, stored with the Slack ids."""
    server = slack_server(server_factory, database_url, WORTHIT_PUBLIC_URL=PUBLIC_URL)
    with server.client() as client:
        response = command(client, "p=21% k=10 cost=3w baseline=100ms target=attention_softmax")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/json")
        message = response.json()
        assert block_kit_problems(message) == []
        assert message["response_type"] == "ephemeral"
        assert message["blocks"][0]["text"]["text"] == ":white_check_mark: Fund: attention_softmax"

        items = client.get("/v1/decisions").json()["items"]
        assert len(items) == 1
        decision = items[0]
        assert decision["source"] == "slack"
        assert decision["source_detail"] == {"user_id": "U2147483697", "team_id": "T0001", "channel_id": "C2147483705"}
        assert decision["amdahl"]["new_ms"] == pytest.approx(81.1, abs=1e-9)
        assert message["blocks"][1]["text"]["text"] == decision["statement"]
        assert f"<{PUBLIC_URL}/decisions/{decision['id']}|Open the decision>" in text_of(message)
        assert "100 ms → 81.1 ms" in text_of(message)


@pytest.mark.parametrize(
    "forge",
    ["wrong secret", "altered body", "six minutes old", "no headers", "no signature", "no timestamp", "junk stamp"],
)
def test_unsigned_or_mis_signed_requests_get_401_and_store_nothing(forge: str, storing_nothing: Server) -> None:
    server = storing_nothing
    body = slash_body("p=21% k=10 cost=3w target=attention_softmax")
    headers = signed_headers(body)
    if forge == "wrong secret":
        headers = signed_headers(body, secret="not-the-secret")
    elif forge == "altered body":
        body = slash_body("p=99% k=10 cost=3w target=attention_softmax")
    elif forge == "six minutes old":
        headers = signed_headers(body, timestamp=int(time.time()) - 6 * 60)
    elif forge == "no headers":
        headers = {"Content-Type": headers["Content-Type"]}
    elif forge == "no signature":
        del headers["X-Slack-Signature"]
    elif forge == "no timestamp":
        del headers["X-Slack-Request-Timestamp"]
    elif forge == "junk stamp":
        headers["X-Slack-Request-Timestamp"] = "yesterday"
    with server.client() as client:
        assert count(client) == 0
        response = client.post("/slack/commands", content=body, headers=headers)
        assert response.status_code == 401
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["status"] == 401
        assert count(client) == 0


def test_forgeries_store_nothing_and_the_genuine_one_is_stored(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """On each database: every forgery is refused with nothing stored; the genuine request is stored once."""
    server = slack_server(server_factory, database_url)
    body = slash_body("p=5% k=2 fleet=20000 cost=3w target=x")
    forgeries = [
        signed_headers(body, secret="not-the-secret"),
        signed_headers(body, timestamp=int(time.time()) - 6 * 60),
        {"Content-Type": "application/x-www-form-urlencoded"},
    ]
    with server.client() as client:
        before = count(client)
        for headers in forgeries:
            assert client.post("/slack/commands", content=body, headers=headers).status_code == 401
        tampered = slash_body("p=50% k=2 fleet=20000 cost=3w target=x")
        assert client.post("/slack/commands", content=tampered, headers=signed_headers(body)).status_code == 401
        assert count(client) == before
        assert client.post("/slack/commands", content=body, headers=signed_headers(body)).status_code == 200
        assert count(client) == before + 1


def test_without_a_secret_the_endpoint_is_off(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    """No signing secret configured → 404 (off, not open), even for a request signed with some secret."""
    server = server_factory(sqlite_url)
    with server.client() as client:
        response = command(client, "p=21% k=10")
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("application/problem+json")
        assert count(client) == 0


def test_typos_answer_200_with_usage_naming_the_token(storing_nothing: Server) -> None:
    """A malformed text is never an error page: 200, ephemeral, the usage, the bad token named; nothing stored."""
    server = storing_nothing
    with server.client() as client:
        for text, token in [
            ("p=21% k=10 cots=3w", "cots=3w"),
            ("p=2l% k=10", "p=2l%"),
            ("p=170% k=10", "p=170%"),
            ("k=10", "p="),
        ]:
            response = command(client, text)
            assert response.status_code == 200
            message = response.json()
            assert block_kit_problems(message) == []
            assert message["response_type"] == "ephemeral"
            assert f"Couldn't read `{token}`" in message["blocks"][0]["text"]["text"]
            assert "/worthit p=21% k=10" not in text_of(message)  # one line; `/worthit help` has the usage
            assert "type `/worthit help`" in text_of(message)
        assert count(client) == 0


def test_help_answers_the_usage(storing_nothing: Server) -> None:
    server = storing_nothing
    with server.client() as client:
        for text in ("help", ""):
            message = command(client, text).json()
            assert block_kit_problems(message) == []
            assert message["response_type"] == "ephemeral"
            assert "Couldn't read" not in text_of(message)
            assert "p=21%  p=0.21" in text_of(message)
        assert count(client) == 0


def test_fleet_case_from_slack_matches_the_json_api(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    """Seed case 12 (5% on 20,000 GPUs) typed in Slack gets the verdict and statement /v1/evaluate gives its JSON."""
    server = slack_server(server_factory, sqlite_url)
    with server.client() as client:
        message = command(client, "p=5% k=2 fleet=20000 cost=3w target=x public").json()
        evaluated = client.post(
            "/v1/evaluate",
            json={"p": 0.05, "k": 2, "flags": {"fleet_gpus": 20000}, "cost_weeks": 3, "target": "x"},
        ).json()
        stored = client.get("/v1/decisions").json()["items"][0]
    assert block_kit_problems(message) == []
    assert message["response_type"] == "in_channel"
    assert stored["verdict"] == evaluated["verdict"]
    assert stored["statement"] == evaluated["statement"]
    assert message["blocks"][1]["text"]["text"] == evaluated["statement"]
    assert "GPU-equivalents freed" in text_of(message)


def test_unsigned_slack_bodies_are_bounded_in_size_and_time(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """/slack/commands reads its body before the signature is checked, so anyone can send one.
    Its limit is 32 KiB (a 255 KB body is a 413 at once, read or not), and a body sent slowly gets 408 at a short
    deadline instead of holding its connection for the 30 s request deadline; a signed command still answers."""
    from tests.e2e.test_memory import answer_of, stalled_upload

    server = server_factory(sqlite_url, env={"WORTHIT_SLACK_SIGNING_SECRET": SECRET})
    with server.client() as client:
        large = client.post(
            "/slack/commands",
            content=b"text=" + b"a" * 255_000,
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert large.status_code == 413
        assert large.headers["content-type"] == "application/problem+json"
        assert command(client, "p=21% k=10 cost=3w baseline=100ms target=attention_softmax").status_code == 200
    # Announced within the limit, sent but for its last byte: the deadline ends it (bounded wait: 20 s).
    host, port = server.url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=20)
    connection.sendall(
        b"POST /slack/commands HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        b"Content-Length: 20001\r\n\r\n" + b"a" * 20_000
    )
    answer = answer_of(connection)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
    assert b"WORTHIT_SLACK_BODY_TIMEOUT_SECONDS" in answer
    assert stalled_upload(server.url, 1024**2, path="/slack/commands").startswith(b"HTTP/1.1 413")
