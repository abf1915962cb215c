"""Bearer tokens with scopes (read ⊂ write ⊂ admin), stored as SHA-256 digests, checked by one guard.

Tokens are 256 random bits, so a fast digest is enough: there is nothing to brute-force, and a lookup by digest
costs one indexed read. The check is global and fails closed: a route without a declared scope needs `admin`.
Every route states its scope in `opt={"scope": …}`; a test walks the router to keep it so. The check runs as a
middleware on every route (AuthMiddleware).

Failed authentications are counted (`WORTHIT_AUTH_FAILURE_LIMIT`) where they come from, and a token that is valid is
never refused for anyone's failures: behind an ingress or a NAT every client shares one address, and thirty made-up
tokens a minute from it must not lock out the rest. A presented token that fails is counted against itself (its
digest); one that was never issued (made up, mistyped), a malformed header and a missing token are counted against
the client address too. A failing request whose token or address is past its limit gets 429 instead of 401. Every
presented token is looked up (one indexed read) before any bucket is consulted: that read is what tells a valid
token from a made-up one, and it costs a flood no more than it costs the same number of valid requests.
"""

from __future__ import annotations

from typing import Any

from litestar.exceptions import NotAuthorizedException, PermissionDeniedException, TooManyRequestsException
from litestar.handlers.base import BaseRouteHandler

from worthit.service.cache import TtlCache
from worthit.service.db.tokens import TokenStore
from worthit.service.http.ratelimit import RateLimiter
from worthit.service.tokens.model import PUBLIC, Principal, digest

__all__ = [
    "CACHE_SECONDS",
    "PAGE_GRANTED",
    "PRINCIPAL",
    "AuthMiddleware",
    "Authenticator",
    "authorize",
    "principal_of",
    "required_scope",
]

# Set in the ASGI scope by service/http/page_access.py when a signed link or a sign-in cookie opened a page route.
PAGE_GRANTED = "worthit.page_granted"

# "Are there any tokens?" is cached per process this long: a token created on another process turns auth on
# within it. Nothing turns it off again (see Authenticator.enforced), and tokens themselves are not cached.
CACHE_SECONDS = 5.0


class Authenticator:
    """Decides who is calling and whether auth is on at all.

    Auth is on for the whole life of the process when tokens are required (`WORTHIT_REQUIRE_AUTH`) or the server
    listens on a non-loopback address, and from the moment a token is first seen otherwise: revoking the last
    token must never open a server, so "on" is never re-read back to "off". Every bearer token is looked up on
    every request (one indexed read), so a revocation takes effect on the next request, on every process.
    """

    def __init__(self, store: TokenStore, *, require_auth: bool) -> None:
        self._store = store
        self._enforced = require_auth
        self._active: TtlCache[None, bool] = TtlCache(CACHE_SECONDS)

    async def enforced(self) -> bool:
        if not self._enforced and await self._active.get(None, self._store.any_active):
            self._enforced = True
        return self._enforced

    async def principal(self, token: str) -> tuple[Principal | None, bool]:
        """The token's principal (None when unknown or revoked), and whether it was ever issued."""
        return await self._store.lookup(digest(token))


def _refuse(failures: RateLimiter | None, keys: list[str], unauthorized: NotAuthorizedException) -> None:
    """Count one failed authentication against each of `keys`, then raise: 429 when one of them is past its limit
    (before this failure), else `unauthorized`."""
    if failures is not None:
        waits = [wait for key in keys if (wait := failures.check(key)) is not None]
        for key in keys:
            failures.hit(key)
        if waits:
            retry_after = max(waits)
            raise TooManyRequestsException(
                f"Too many failed authentications from this address or with this token ({failures.describe()}); "
                f"retry in {retry_after} s",
                headers={"Retry-After": str(retry_after)},
            )
    raise unauthorized


def _challenge(error: str | None = None, scope: str | None = None) -> dict[str, str]:
    parts = ['Bearer realm="worthit"']
    if error:
        parts.append(f'error="{error}"')
    if scope:
        parts.append(f'scope="{scope}"')
    return {"WWW-Authenticate": ", ".join(parts)}


PRINCIPAL = "worthit.principal"
"""The ASGI scope key under which the guard leaves the request's token (None: no token), for the handlers."""


def principal_of(request: Any) -> Principal | None:
    """The token a request authenticated with, if any (set by the guard; public routes have none)."""
    found: Principal | None = request.scope.get(PRINCIPAL)
    return found


def required_scope(handler: BaseRouteHandler) -> str:
    """The scope a route needs; `admin` when it declares none (fail closed)."""
    return str(handler.opt.get("scope", "admin"))


class AuthMiddleware:
    """Per route, after routing: let the request through when its token grants the route's scope (or auth is off);
    401, 403 or 429 otherwise.

    A middleware rather than a Litestar guard: guards get a copy of the route handler on every call, which cost
    an eighth of the server's time per request when measured.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await authorize(scope)
        await self.app(scope, receive, send)


async def authorize(scope: Any) -> None:
    """Check one request against the scope its route declares."""
    required = required_scope(scope["route_handler"])
    if required == PUBLIC or scope.get(PAGE_GRANTED):
        return
    state = scope["litestar_app"].state
    authenticator: Authenticator = state.authenticator
    header = ""
    for name, value in scope["headers"]:
        if name == b"authorization":
            header = value.decode("latin-1")
            break
    client = scope.get("client")
    address = client[0] if client else "?"
    failures: RateLimiter | None = state.auth_failures
    principal: Principal | None = None
    if header:
        kind, _, token = header.partition(" ")
        if kind.lower() != "bearer" or not token.strip():
            _refuse(
                failures,
                [f"address:{address}"],
                NotAuthorizedException(
                    "Expected `Authorization: Bearer <token>`", headers=_challenge("invalid_request")
                ),
            )
        principal, issued = await authenticator.principal(token.strip())
        if principal is None:
            presented = "token:" + digest(token.strip())
            _refuse(
                failures,
                [presented] if issued else [presented, f"address:{address}"],
                NotAuthorizedException(
                    "The bearer token is not valid (unknown or revoked)", headers=_challenge("invalid_token")
                ),
            )
    elif await authenticator.enforced():
        _refuse(
            failures,
            [f"address:{address}"],
            NotAuthorizedException(
                f"This route needs a bearer token with the `{required}` scope", headers=_challenge()
            ),
        )
    scope[PRINCIPAL] = principal
    if principal is not None and required not in principal.scopes:
        raise PermissionDeniedException(
            f"The token `{principal.name}` lacks the `{required}` scope this route needs",
            headers=_challenge("insufficient_scope", required),
        )
    limiter = state.rate_limiter
    if limiter is not None:
        key = principal.id if principal is not None else address
        retry_after = limiter.hit(key)
        if retry_after is not None:
            raise TooManyRequestsException(
                f"Rate limit of {limiter.describe()} exceeded; retry in {retry_after} s",
                headers={"Retry-After": str(retry_after)},
            )
