"""The pages' sign-in is as safe as the bearer path: a session of the server's (not a digest anyone can compute),
ended by the server, and no lock-out of a valid token by made-up ones from the same address."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable

import httpx
import pytest
from sqlalchemy import text

from tests.conftest import Server, free_port, worthit
from tests.e2e.test_page_access import session_value
from tests.e2e.test_trust import create_token
from worthit.service.db.engine import create_engine
from worthit.service.http.page_access import SESSION_COOKIE
from worthit.service.settings import Settings

pytestmark = pytest.mark.e2e

HTML = {"accept": "text/html"}


def _run(database_url: str, statement: str) -> None:
    async def run() -> None:
        engine = create_engine(Settings(database_url=database_url))
        try:
            async with engine.begin() as connection:
                await connection.execute(text(statement))
        finally:
            await engine.dispose()

    asyncio.run(run())


def _opens(client: httpx.Client, session: str) -> int:
    return client.get("/decisions", headers={"cookie": f"{SESSION_COOKIE}={session}"} | HTML).status_code


def test_a_cookie_computed_from_a_token_opens_nothing(database_url: str, server_factory: Callable[..., Server]) -> None:
    reader = create_token(database_url, "read", "reader")
    server = server_factory(database_url)
    with server.client() as client:
        forged = hashlib.sha256(reader.encode()).hexdigest()  # what the tokens table stores
        assert _opens(client, forged) == 401
        signed_in = client.post("/sign-in", data={"token": reader})
        assert signed_in.status_code == 303, signed_in.text
        session = session_value(signed_in)
        assert _opens(client, session) == 200
        assert _opens(client, forged) == 401


def test_the_server_ends_a_session_at_its_expiry_at_sign_out_and_at_revocation(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    reader = create_token(database_url, "read", "reader")
    server = server_factory(database_url)
    with server.client() as client:
        expiring, kept, leaving = (session_value(client.post("/sign-in", data={"token": reader})) for _ in range(3))
        assert [_opens(client, session) for session in (expiring, kept, leaving)] == [200, 200, 200]

        # Past its end on the server's clock, whatever the browser keeps: the cookie is refused.
        digest = hashlib.sha256(f"worthit/page-session/v1\n{expiring}".encode()).hexdigest()
        _run(
            database_url,
            f"UPDATE page_sessions SET expires_at = created_at - INTERVAL '1 second' WHERE id_hash = '{digest}'"
            if database_url.startswith("postgresql")
            else f"UPDATE page_sessions SET expires_at = '2000-01-01 00:00:00.000000' WHERE id_hash = '{digest}'",
        )
        ended = client.get("/decisions", headers={"cookie": f"{SESSION_COOKIE}={expiring}"} | HTML)
        assert ended.status_code == 401
        assert "Sign in again" in ended.text
        assert _opens(client, kept) == 200

        # Signing out ends that session on the server, not only in this browser.
        out = client.post("/sign-out", headers={"cookie": f"{SESSION_COOKIE}={leaving}"})
        assert out.status_code == 303
        assert _opens(client, leaving) == 401
        assert _opens(client, kept) == 200

    # Revoking the token ends every session it opened, on the next request.
    assert worthit("token", "revoke", "reader", "--database", database_url).returncode == 0
    with server.client() as client:
        assert _opens(client, kept) == 401


def test_made_up_tokens_from_one_address_do_not_lock_out_a_valid_one(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    reader = create_token(database_url, "read", "reader")
    # 30 a day rather than the default 30 a minute: no failure is forgiven while a busy machine sends the 31.
    server = server_factory(database_url, env={"WORTHIT_AUTH_FAILURE_LIMIT": "30/day"})
    with server.client() as client:
        refused = [client.post("/sign-in", data={"token": f"wt_made_up_{i}"}).status_code for i in range(31)]
        assert refused == [401] * 30 + [429]
        signed_in = client.post("/sign-in", data={"token": reader, "next": "/decisions"})
        assert signed_in.status_code == 303, signed_in.text
        assert _opens(client, session_value(signed_in)) == 200
        # The address stays limited for tokens that fail.
        assert client.post("/sign-in", data={"token": "wt_made_up_again"}).status_code == 429


def test_the_sign_in_page_promises_signed_links_only_where_the_server_signs_them(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    create_token(sqlite_url, "read", "reader")
    plain = server_factory(sqlite_url)
    signing = server_factory(sqlite_url, env={"WORTHIT_LINK_SECRET": "x" * 40, "WORTHIT_LINK_TTL_DAYS": "7"})
    for server, signs in ((plain, False), (signing, True)):
        with server.client() as client:
            for page in (client.get("/sign-in"), client.get("/decisions", headers=HTML)):
                assert page.status_code in (200, 401)
                promised = "open their decision without signing in, for 7 days" in page.text
                assert promised is signs, page.text
                assert ("signed links open their decision" in page.text) is signs, page.text


def test_a_sign_in_from_another_origin_names_the_cause_and_the_setting(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    reader = create_token(sqlite_url, "read", "reader")
    server = server_factory(sqlite_url)
    address = server.url.removeprefix("http://")
    with server.client() as client:
        # TLS ended by a proxy the server does not trust: the browser is at https://, the server sees http://.
        behind = client.post("/sign-in", data={"token": reader}, headers={"origin": f"https://{address}"})
        assert behind.status_code == 403
        assert "set-cookie" not in behind.headers
        assert "That token is not valid" not in behind.text
        assert f"Your browser is at https://{address}, but this server received the sign-in as http://{address}" in (
            behind.text
        )
        assert "WORTHIT_TRUSTED_PROXIES" in behind.text
        elsewhere = client.post("/sign-in", data={"token": reader}, headers={"origin": "https://evil.example"})
        assert elsewhere.status_code == 403
        assert "That token is not valid" not in elsewhere.text
        assert f"posted from https://evil.example, not from this server (http://{address})" in elsewhere.text
    # A server told its public address takes a sign-in from there as its own.
    port = free_port()
    public = server_factory(sqlite_url, port=port, env={"WORTHIT_PUBLIC_URL": f"https://127.0.0.1:{port}/"})
    with public.client() as client:
        signed_in = client.post("/sign-in", data={"token": reader}, headers={"origin": f"https://127.0.0.1:{port}"})
        assert signed_in.status_code == 303, signed_in.text
        assert "secure" in signed_in.headers["set-cookie"].lower()
