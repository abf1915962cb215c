"""Pages for people: with auth on, a decision page opens in a real browser from the link its Slack message
carries; without the link (or a sign-in) the browser gets a page that explains, never a 401 JSON.

The server is real (auth on: a token exists), the Slack request signed with Slack's SDK, the browser Debian's
headless Chromium (tests/e2e/test_pages.py's `chromium` fixture and DOM reader).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, Server, free_port, worthit
from tests.e2e.test_pages import DOM, browse, chromium
from tests.e2e.test_slack import SECRET, command
from tests.e2e.test_slackbot import _token, slash
from tests.e2e.test_slackbot import text_of as bot_text
from tests.e2e.test_trust import create_token
from tests.slack_standin import APP_TOKEN, BOT_TOKEN, SlackStandIn
from worthit.service.http.page_access import SESSION_COOKIE, signed_path
from worthit.service.tokens.model import digest

pytestmark = pytest.mark.e2e
__all__ = ["chromium"]  # the fixture, used by name

LINK_SECRET = "page-link-secret-for-tests-0123456789abcdef"
PROPOSAL_TEXT = 'p=21% k=10 cost=3w baseline=100ms target=attention_softmax title="Fuse the softmax"'


def start(sqlite_url: str, server_factory: Callable[..., Server], **env: str) -> Server:
    port = free_port()
    return server_factory(
        sqlite_url,
        port=port,
        env={
            "WORTHIT_SLACK_SIGNING_SECRET": SECRET,
            "WORTHIT_LINK_SECRET": LINK_SECRET,
            "WORTHIT_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "WORTHIT_LOG_LEVEL": "info",
        }
        | env,
    )


def slack_link(message: dict[str, Any]) -> str:
    """The address of the message's "Open the decision" link, as Slack shows it."""
    for block in message["blocks"]:
        for element in block.get("elements", []):
            found = re.fullmatch(r"<([^|>]+)\|Open the decision>", element.get("text", ""))
            if found:
                return found.group(1)
    raise AssertionError(f"no link in {message}")


def session_value(signed_in: httpx.Response) -> str:
    """The session id a sign-in's `Set-Cookie` carries."""
    cookie = signed_in.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}="), cookie
    return cookie.split(";", 1)[0].split("=", 1)[1]


def text_of(dom: Any, element_id: str) -> str:
    return str(dom.by_id(element_id).all_text().strip())


def ids(dom: Any) -> set[str]:
    return {node.attrs["id"] for node in dom.walk() if "id" in node.attrs}


def test_a_decision_page_opens_from_its_slack_link_in_a_browser_and_explains_without_it(
    sqlite_url: str, server_factory: Callable[..., Server], chromium: str, tmp_path: Path
) -> None:
    reader = create_token(sqlite_url, "read", "reader")  # a token exists: auth is on from the start
    server = start(sqlite_url, server_factory)
    with server.client() as client:
        answer = command(client, PROPOSAL_TEXT)
        assert answer.status_code == 200
        message = answer.json()
        link = slack_link(message)
        decision_id = link.split("/decisions/", 1)[1].split("?", 1)[0]
        decision = client.get(f"/v1/decisions/{decision_id}", headers={"authorization": f"Bearer {reader}"}).json()
        assert client.get(f"/decisions/{decision_id}").status_code == 401  # not a bare link: auth is on

    assert link.startswith(f"{server.url}/decisions/{decision_id}?link=")
    dom = DOM(browse(chromium, tmp_path / "profile", link, "--dump-dom").stdout).root
    assert text_of(dom, "verdict") == decision["verdict"] == "fund"
    assert text_of(dom, "statement") == decision["statement"]
    assert text_of(dom, "title") == "Fuse the softmax"

    # Without the link: a page that explains, with the sign-in form (a fresh profile: no cookie).
    dom = DOM(browse(chromium, tmp_path / "anonymous", f"{server.url}/decisions/{decision_id}", "--dump-dom").stdout)
    page = dom.root
    assert text_of(page, "sign-in-title") == "Sign in to see this page"
    assert "signed links open their decision" in text_of(page, "why")
    assert {"sign-in", "why"} <= ids(page)
    assert "verdict" not in ids(page)
    assert "statement" not in ids(page)

    # A link altered by one character, or one to another decision, opens nothing and says why.
    tampered = link[:-1] + ("A" if link[-1] != "A" else "B")
    page = DOM(browse(chromium, tmp_path / "anonymous", tampered, "--dump-dom").stdout).root
    assert text_of(page, "sign-in-title") == "This link does not open this page"
    assert "verdict" not in ids(page)
    other = link.replace(decision_id, decision_id[:-1] + ("0" if decision_id[-1] != "0" else "1"))
    page = DOM(browse(chromium, tmp_path / "anonymous", other, "--dump-dom").stdout).root
    assert "verdict" not in ids(page)

    # An expired link (signed with the server's key, an hour in the past).
    path, _ = signed_path(decision_id, LINK_SECRET, -3600)
    page = DOM(browse(chromium, tmp_path / "anonymous", server.url + path, "--dump-dom").stdout).root
    assert text_of(page, "sign-in-title") == "This link has expired"
    assert "verdict" not in ids(page)

    # The token, its digest and the link's signature never reach the server's log.
    log = server.log.read_text()
    assert '"path": "/decisions/' in log or '"path":"/decisions/' in log  # the access log is on
    signature = link.rsplit(".", 1)[1]
    for secret in (reader, digest(reader), signature, LINK_SECRET):
        assert secret not in log


def test_a_link_opens_one_decision_read_only(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    """The link opens its decision's page and nothing else: not the list, not the JSON, not a write."""
    create_token(sqlite_url, "read", "reader")
    server = start(sqlite_url, server_factory)
    html = {"accept": "text/html"}
    with server.client() as client:
        link = slack_link(command(client, PROPOSAL_TEXT).json())
        path = link.removeprefix(server.url)
        decision_id = path.split("/decisions/", 1)[1].split("?", 1)[0]
        query = path.split("?", 1)[1]
        assert client.get(path, headers=html).status_code == 200
        assert client.get(f"/decisions?{query}", headers=html).status_code == 401
        assert client.get(f"/v1/decisions/{decision_id}?{query}").status_code == 401
        assert client.post(f"/v1/decisions/{decision_id}/outcome?{query}", json={"step_ms": 90}).status_code == 401
        # Clients that are not browsers keep the API's problem+json.
        plain = client.get(f"/decisions/{decision_id}")
        assert plain.status_code == 401
        assert plain.headers["content-type"].startswith("application/problem+json")


def test_sign_in_sets_an_httponly_samesite_cookie_that_opens_every_page(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    reader = create_token(sqlite_url, "read", "reader")
    writer = create_token(sqlite_url, "write", "writer")
    server = start(sqlite_url, server_factory)
    html = {"accept": "text/html"}
    with server.client() as client:
        decision_id = slack_link(command(client, PROPOSAL_TEXT).json()).split("/decisions/")[1].split("?")[0]
        form = client.get(f"/sign-in?next=/decisions/{decision_id}")
        assert form.status_code == 200
        assert 'action="/sign-in"' in form.text

        refused = client.post("/sign-in", data={"token": "wt_made_up", "next": "/decisions"})
        assert refused.status_code == 401
        assert "That token is not valid" in refused.text
        assert "set-cookie" not in refused.headers

        signed_in = client.post("/sign-in", data={"token": reader, "next": f"/decisions/{decision_id}"})
        assert signed_in.status_code == 303
        assert signed_in.headers["location"] == f"/decisions/{decision_id}"
        cookie = signed_in.headers["set-cookie"]
        value = session_value(signed_in)
        assert reader not in cookie  # a session of the server's, never the token
        assert value != digest(reader)
        assert "HttpOnly" in cookie
        assert "samesite=lax" in cookie.lower()

        session = {"cookie": f"{SESSION_COOKIE}={value}"} | html
        for page in (f"/decisions/{decision_id}", "/decisions"):
            assert client.get(page, headers=session).status_code == 200, page
        # The cookie opens pages only: not the API, and not as a bearer token either.
        assert client.get(f"/v1/decisions/{decision_id}", headers=session).status_code == 401
        bearer = {"authorization": f"Bearer {value}"}
        assert client.get(f"/v1/decisions/{decision_id}", headers=bearer).status_code == 401
        # No leaving the site after signing in, and no sign-in posted by another site.
        away = client.post("/sign-in", data={"token": reader, "next": "//evil.example/x"})
        assert away.headers["location"] == "/decisions"
        forged = client.post("/sign-in", data={"token": writer}, headers={"origin": "https://evil.example"})
        assert forged.status_code == 403

    # Revoking the token ends the sign-in on the next request.
    assert worthit("token", "revoke", "reader", "--database", sqlite_url).returncode == 0
    deadline = time.monotonic() + 10
    with server.client() as client:
        while time.monotonic() < deadline:
            ended = client.get("/decisions", headers=session)
            if ended.status_code == 401:
                break
            time.sleep(0.2)
        assert ended.status_code == 401
        assert "Sign in again" in ended.text


def test_the_api_gives_signed_links_to_clients_with_a_token(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """`GET /v1/decisions/{id}/link`: what the Socket Mode bot puts in its messages; 404 where links are off."""
    reader = create_token(sqlite_url, "read", "reader")
    bearer = {"authorization": f"Bearer {reader}"}
    server = start(sqlite_url, server_factory)
    with server.client() as client:
        decision_id = slack_link(command(client, PROPOSAL_TEXT).json()).split("/decisions/")[1].split("?")[0]
        assert client.get(f"/v1/decisions/{decision_id}/link").status_code == 401
        link = client.get(f"/v1/decisions/{decision_id}/link", headers=bearer).json()
        assert link["url"] == server.url + link["path"]
        assert client.get(link["path"], headers={"accept": "text/html"}).status_code == 200
        assert client.get("/v1/decisions/00000000-0000-7000-8000-000000000000/link", headers=bearer).status_code == 404
    off = server_factory(sqlite_url)
    with off.client() as client:
        answer = client.get(f"/v1/decisions/{decision_id}/link", headers=bearer)
        assert answer.status_code == 404
        assert "WORTHIT_LINK_SECRET" in answer.json()["detail"]
        assert client.get(f"/decisions/{decision_id}", headers=bearer).status_code == httpx.codes.OK


def test_the_socket_mode_bot_posts_a_signed_link_that_opens_the_page(
    sqlite_url: str, server_factory: Callable[..., Server], tmp_path: Path
) -> None:
    """The bot is an API client without the key: it asks `GET /v1/decisions/{id}/link` and posts that link."""

    server = start(sqlite_url, server_factory, WORTHIT_REQUIRE_AUTH="1")
    token = _token(sqlite_url)
    slack = SlackStandIn()
    log = tmp_path / "bot.log"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("WORTHIT_", "SLACK_"))}
    env |= {
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "WORTHIT_URL": server.url,
        "WORTHIT_TOKEN": token,
        "WORTHIT_PUBLIC_URL": server.url,
    }
    with log.open("ab") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "worthit.service.cli", "slack-bot"], cwd=ROOT, env=env, stdout=handle, stderr=handle
        )
    try:
        slack.wait(lambda: slack.connected() == 1)
        slack.send(slash(PROPOSAL_TEXT + " public"))
        slack.wait(lambda: slack.posts())
        [(_, posted)] = slack.posts()
    finally:
        process.terminate()
        process.wait(timeout=30)
        slack.close()
    found = re.search(r"<([^|>]+)\|Open the decision>", bot_text(posted))
    assert found is not None, posted
    link = found.group(1)
    assert "?link=" in link
    with server.client() as client:
        page = client.get(link.removeprefix(server.url), headers={"accept": "text/html"})
    assert page.status_code == 200
    assert 'id="verdict"' in page.text
    assert token not in log.read_text()
