"""One log line per request, `X-Request-ID`, Prometheus metrics, and a deadline on every request.

It wraps the whole ASGI app (not one route), so unmatched paths and rejected requests are logged and counted too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from functools import cache
from typing import Any

import msgspec

from worthit.service.http.auth import PRINCIPAL
from worthit.service.metrics import LATENCY, REQUESTS

__all__ = ["PROBLEM_NUL_PATH", "PROBLEM_TIMEOUT", "JSONFormatter", "Observability", "Scope", "configure_logging"]

log = logging.getLogger("worthit.access")

_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_encoder = msgspec.json.Encoder()

Scope = dict[str, Any]


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


@cache
def _counter(method: str, route: str, status: int) -> Any:
    # `labels()` takes a lock and builds a key on every call; the set of (method, route, status) is small.
    return REQUESTS.labels(method, route, str(status))


@cache
def _histogram(route: str) -> Any:
    return LATENCY.labels(route)


class JSONFormatter(logging.Formatter):
    """Log records as one JSON object per line; request fields come in `extra`."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line |= getattr(record, "fields", {})
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return _encoder.encode(line).decode()


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JSONFormatter())
    root = logging.getLogger("worthit")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


PROBLEM_NUL_PATH = _encoder.encode(
    {
        "type": "https://worthit.dev/problems/not-found",
        "title": "Not Found",
        "status": 404,
        "detail": "No resource has a NUL character in its path.",
        "errors": [],
    }
)
PROBLEM_TIMEOUT = _encoder.encode(
    {
        "type": "https://worthit.dev/problems/timeout",
        "title": "Service Unavailable",
        "status": 503,
        "detail": "The request took longer than the server's deadline; retry (with the same Idempotency-Key).",
        "errors": [],
    }
)


async def _send_problem(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/problem+json"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Observability:
    """ASGI wrapper: request id, deadline, access log, metrics."""

    def __init__(self, app: Any, *, timeout_seconds: float) -> None:
        self.app = app
        self.timeout = timeout_seconds

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = ""
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                candidate = value.decode("latin-1")
                request_id = candidate if _VALID_REQUEST_ID.match(candidate) else ""
                break
        request_id = request_id or os.urandom(16).hex()
        header = (b"x-request-id", request_id.encode())
        status = 500
        response_started = False

        async def send_wrapper(message: dict[str, Any]) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
                message["headers"] = [*message.get("headers", []), header]
            await send(message)

        try:
            if "\x00" in scope["path"]:
                # No id or name of ours holds a NUL (and PostgreSQL text cannot): answer for every route at once.
                await _send_problem(send_wrapper, 404, PROBLEM_NUL_PATH)
                return
            async with asyncio.timeout(self.timeout):
                await self.app(scope, receive, send_wrapper)
        except TimeoutError:
            if not response_started:
                status = 503
                await _send_problem(send, 503, PROBLEM_TIMEOUT, [(b"retry-after", b"1"), header])
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("path_template") or "unmatched"
            method = scope["method"] if scope["method"] in _METHODS else "other"  # clients choose methods: bound them
            _counter(method, route, status).inc()
            _histogram(route).observe(elapsed)
            if log.isEnabledFor(logging.INFO):
                fields = {
                    "request_id": request_id,
                    "method": scope["method"],
                    "route": route,
                    "path": scope["path"],
                    "status": status,
                    "duration_ms": round(elapsed * 1000, 3),
                }
                # Who did it, by the token's name (never the token): an admin's deletion is found in the log.
                if (principal := scope.get(PRINCIPAL)) is not None:
                    fields["token"] = principal.name
                log.info("request", extra={"fields": fields})
