"""On a real server: a signed slash command of 58 KB is refused by its length, not read for 9 s."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import Server
from tests.e2e.test_slack import command, slack_server
from worthit.service.slack.text import MAX_TEXT_CHARS

pytestmark = pytest.mark.e2e


def test_a_58_kb_signed_command_is_answered_with_the_cap_and_stores_nothing(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """The reported attack (any workspace member can send it): 58 KB of spaces after a proposal.

    Before, the text was read (9 s of CPU on the event loop, /healthz waiting). Now the 58 KB body is past the
    32 KiB a Slack body may have (413, before its signature is even checked), and a 20 KB one that fits is answered
    at once with the text's length cap; neither stores anything."""
    server = slack_server(server_factory, sqlite_url)
    with server.client(timeout=60) as client:
        response = command(client, "p=21% k=10 " + " " * 58_000 + "x")
        assert response.status_code == 413
        assert "WORTHIT_MAX_SLACK_BODY_BYTES" in response.json()["detail"]
        response = command(client, "p=21% k=10 " + " " * 20_000 + "x")
        assert response.status_code == 200
        message = response.json()
        assert f"a /worthit command is at most {MAX_TEXT_CHARS:,}" in message["text"]
        assert "20,012 characters" in message["text"]
        assert client.get("/v1/decisions").json()["items"] == []


def test_a_command_at_the_cap_is_still_read(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    server = slack_server(server_factory, sqlite_url)
    text = "p=21% k=10 baseline=100ms " + "\u00a0" * (MAX_TEXT_CHARS - 26)
    with server.client(timeout=60) as client:
        response = command(client, text)
    assert response.status_code == 200
    assert response.json()["text"].startswith("Fund")
