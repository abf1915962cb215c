"""Pages for people: a signed link opens one decision's page, a sign-in cookie opens them all, and a browser that
has neither gets a page that explains (never a 401 JSON).

Browsers cannot send bearer tokens, so where tokens are enforced (service/http/auth.py) a page route (`opt` has
`page`) is first seen here, before the bearer check:

- **A signed link** `/decisions/{id}?link={expires}.{signature}` opens that decision's page, read-only, until it expires
  (`WORTHIT_LINK_TTL_DAYS`). The signature is an HMAC-SHA256 of the decision id and the expiry under the server's
  secret (`WORTHIT_LINK_SECRET`, the same on every replica), compared in constant time. Slack's messages and the API
  (`GET /v1/decisions/{id}/link`, for clients such as the Socket Mode bot) give such links. It opens nothing else.
- **A sign-in** (`GET/POST /sign-in`) takes a token with the `read` scope and sets an HttpOnly, SameSite=Lax cookie
  holding a session id: 256 random bits of the server's, never the token nor anything computed from it. The database
  keeps the id's SHA-256 with its token and its end (service/db/sessions.py), so the server ends a session after
  `SESSION_SECONDS` whatever the browser keeps, at sign-out, and at its token's revocation (looked up on every
  request). A stolen cookie opens pages only: it is no bearer token, and reading the database opens nothing.
- **Neither**: a browser (one that accepts `text/html`) gets a 401 page saying why and offering the sign-in; any
  other client goes on to the bearer check and its problem+json 401, as on every other route.

A request with an `Authorization` header is the bearer check's alone. The signature travels in the query string,
which the access log leaves out (it logs the path), and no token, digest or signature is logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeGuard
from urllib.parse import parse_qs, quote

from worthit.service.db.sessions import SessionStore
from worthit.service.http.auth import PAGE_GRANTED
from worthit.service.tokens.model import Principal

__all__ = [
    "LINK_PARAMETER",
    "SESSION_COOKIE",
    "SESSION_SECONDS",
    "Denied",
    "LinkState",
    "PageAccess",
    "PageAccessMiddleware",
    "check_link",
    "link_expiry",
    "link_signature",
    "session_cookie",
    "signed_path",
    "wants_html",
]

LINK_PARAMETER = "link"
SESSION_COOKIE = "worthit_session"
SESSION_SECONDS = 12 * 3600
_SESSION_ID_CHARS = 43  # secrets.token_urlsafe(32)
_SESSION_ID_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_MAX_EXPIRES_DIGITS = 12

LinkState = Literal["none", "valid", "expired", "invalid"]


def link_signature(secret: str, decision_id: str, expires: int) -> str:
    """The HMAC-SHA256 (base64url, unpadded) over the decision id and the expiry, in a context of its own."""
    message = f"worthit/page-link/v1\n{decision_id}\n{expires}".encode()
    mac = hmac.new(secret.encode(), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def signed_path(decision_id: str, secret: str, ttl_seconds: float, now: float | None = None) -> tuple[str, int]:
    """`/decisions/{id}?link={expires}.{signature}` and its expiry (Unix seconds).

    One parameter, so the link has no `&` for Slack's mrkdwn or Markdown to escape."""
    expires = int((time.time() if now is None else now) + ttl_seconds)
    signature = link_signature(secret, decision_id, expires)
    return f"/decisions/{quote(decision_id, safe='')}?{LINK_PARAMETER}={expires}.{signature}", expires


def _link_parameter(query: bytes) -> tuple[int, str] | Literal[False] | None:
    """The link's (expiry, signature); None when the query has none; False when it is malformed."""
    try:
        values = parse_qs(query.decode("latin-1"), max_num_fields=8).get(LINK_PARAMETER, [])
    except ValueError:
        return False
    if not values:
        return None
    expires, dot, signature = values[0].partition(".")
    if len(values) != 1 or not dot or not expires.isdigit() or len(expires) > _MAX_EXPIRES_DIGITS:
        return False
    return int(expires), signature


def check_link(secret: str | None, decision_id: str, query: bytes, now: float | None = None) -> LinkState:
    """Whether the query string carries a valid link to `decision_id` (`none` when it carries no link)."""
    found = _link_parameter(query)
    if found is None:
        return "none"
    if found is False or secret is None:
        return "invalid"
    expires, signature = found
    expected = link_signature(secret, decision_id, expires)
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        return "invalid"
    return "valid" if expires > (time.time() if now is None else now) else "expired"


def link_expiry(query: bytes) -> datetime | None:
    """The expiry a link's query string states (shown on the page that explains an expired link)."""
    found = _link_parameter(query)
    return datetime.fromtimestamp(found[0], UTC) if found else None


def _well_formed(cookie: str | None) -> TypeGuard[str]:
    return cookie is not None and len(cookie) == _SESSION_ID_CHARS and _SESSION_ID_ALPHABET.issuperset(cookie)


def _session_digest(session_id: str) -> str:
    return hashlib.sha256(f"worthit/page-session/v1\n{session_id}".encode()).hexdigest()


def session_cookie(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The sign-in cookie a request carries, if any."""
    for name, value in headers:
        if name != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            key, _, found = part.strip().partition("=")
            if key == SESSION_COOKIE:
                return found
    return None


def wants_html(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the client is a browser (it asks for HTML); other clients keep the API's problem+json."""
    return any(name == b"accept" and b"text/html" in value for name, value in headers)


@dataclass(frozen=True, slots=True)
class Denied:
    """Why a browser may not see a page: the explanation's reason, and where to come back after signing in."""

    reason: Literal["none", "expired", "invalid", "session"]
    next: str
    expired_at: datetime | None = None


class PageAccess:
    """The decision of one page request: granted, denied (with why), or left to the bearer check (None)."""

    def __init__(
        self,
        sessions: SessionStore,
        *,
        secret: str | None,
        explain: Callable[[Any, Denied], str],
        headers: Mapping[str, str],
    ) -> None:
        """`explain(app, denied)` renders the page that explains (the pages' own, service/api/pages.py), sent with
        the pages' `headers` (their CSP)."""
        self._sessions = sessions
        self.secret = secret
        self.explain = explain
        self.headers = headers

    async def sign_in(self, principal: Principal) -> str:
        """A new session of `principal`, ending in SESSION_SECONDS; the id for the cookie (stored only digested)."""
        session_id = secrets.token_urlsafe(32)
        await self._sessions.create(_session_digest(session_id), principal.id, timedelta(seconds=SESSION_SECONDS))
        return session_id

    async def sign_out(self, cookie: str | None) -> None:
        """End the session a cookie names, if it names one."""
        if _well_formed(cookie):
            await self._sessions.end(_session_digest(cookie))

    async def session(self, cookie: str | None) -> Principal | None:
        """The token behind a sign-in cookie, while its session lasts, its token is not revoked and it may read."""
        if not _well_formed(cookie):
            return None
        principal = await self._sessions.find(_session_digest(cookie))
        return principal if principal is not None and "read" in principal.scopes else None

    async def decide(self, scope: Any) -> Principal | str | Denied | None:
        """A principal (signed in), the decision id a link opens, a `Denied`, or None for the bearer check."""
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        if any(name == b"authorization" for name, _ in headers):
            return None
        if not await scope["litestar_app"].state.authenticator.enforced():
            return None
        query: bytes = scope.get("query_string", b"")
        decision_id = scope.get("path_params", {}).get("decision_id")
        link: LinkState = "none"
        if isinstance(decision_id, str):
            link = check_link(self.secret, decision_id, query)
            if link == "valid":
                return decision_id
        cookie = session_cookie(headers)
        principal = await self.session(cookie)
        if principal is not None:
            return principal
        back = scope["path"] + (f"?{query.decode('latin-1')}" if query and link == "none" else "")
        if link in ("expired", "invalid"):
            return Denied(reason=link, next=back, expired_at=link_expiry(query) if link == "expired" else None)
        return Denied(reason="session" if cookie else "none", next=back)


class PageAccessMiddleware:
    """Per page route, before the bearer check (service/http/auth.py): a signed link or a sign-in opens the page;
    a browser with neither gets the sign-in page that explains; everything else goes on unchanged."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["route_handler"].opt.get("page"):
            await self.app(scope, receive, send)
            return
        access: PageAccess = scope["litestar_app"].state.page_access
        decided = await access.decide(scope)
        if isinstance(decided, Denied):
            if wants_html(scope["headers"]):
                await _explain(scope, send, access, decided)
                return
        elif decided is not None:
            limiter = scope["litestar_app"].state.rate_limiter
            key = decided.id if isinstance(decided, Principal) else f"page-link:{decided}"
            if limiter is None or limiter.hit(key) is None:
                scope[PAGE_GRANTED] = True
        await self.app(scope, receive, send)


async def _explain(scope: Any, send: Any, access: PageAccess, denied: Denied) -> None:
    body = access.explain(scope["litestar_app"], denied)
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"cache-control", b"no-store")]
    headers += [(name.lower().encode(), value.encode()) for name, value in access.headers.items()]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode()})
