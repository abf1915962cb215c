"""Request bodies: a deadline for reading each one, and a cap on how many large ones are read at once.

A client that sends its body slowly held what it had sent for the whole request deadline: sixteen connections
sending 31 MB profiles slowly held 500 MB between them. Here, as an ASGI wrapper in front of the app:

- **A body deadline.** From the app's first read of a body, the whole of it must arrive within
  `WORTHIT_BODY_TIMEOUT_SECONDS` (`/slack/…`: `WORTHIT_SLACK_BODY_TIMEOUT_SECONDS`, shorter: Slack sends its few
  kilobytes at once, and those routes read before any signature is checked). Past it: 408, and the connection closed.
- **A cap on large bodies.** A body announced larger than the JSON limit (`WORTHIT_MAX_BODY_BYTES`), or of unknown
  length (chunked), is read only while it holds one of `WORTHIT_MAX_CONCURRENT_UPLOADS` slots, until its request has
  been answered (the app holds the body until then). The slot is taken at the app's first read, after routing and
  authentication: a request refused for its token or its size never takes one. At most
  `WORTHIT_MAX_WAITING_UPLOADS` wait for a slot; beyond them, 503 with `Retry-After` at once, connection closed.
- **A bound per waiting connection.** Until its body is read, a connection holds what uvicorn buffers: it stops
  reading the socket past 64 KiB (its flow control), so a waiting sender holds that plus one socket read
  (256 KiB at most), whatever it sends.

Worst case this leaves, with the defaults: the slots' bodies (2 x 32 MiB, twice over while the app joins the
chunks), about 320 KiB per waiting upload (8), and each connection's JSON body (256 KiB) for at most the deadline.
"""

from __future__ import annotations

import asyncio
from typing import Any

from litestar.exceptions import ClientException, ServiceUnavailableException

__all__ = ["CLOSE", "BodyGuard", "Scope"]

CLOSE = {"connection": "close"}
Scope = dict[str, Any]


class BodyGuard:
    """ASGI wrapper: body deadlines and the cap on large bodies (module docstring)."""

    def __init__(
        self,
        app: Any,
        *,
        body_timeout: float,
        slack_body_timeout: float,
        large_body_bytes: int,
        max_uploads: int,
        max_waiting: int,
    ) -> None:
        self.app = app
        self._body_timeout = body_timeout
        self._slack_body_timeout = slack_body_timeout
        self._large = large_body_bytes
        self._max_uploads = max_uploads
        self._max_waiting = max_waiting
        self._uploads: asyncio.Semaphore | None = None  # made on the server's loop, at the first large body
        self._waiting = 0

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        slack = scope["path"].startswith("/slack/")
        setting = "WORTHIT_SLACK_BODY_TIMEOUT_SECONDS" if slack else "WORTHIT_BODY_TIMEOUT_SECONDS"
        body = _Body(
            self,
            receive,
            self._slack_body_timeout if slack else self._body_timeout,
            setting,
            large=self._is_large(scope),
        )
        try:
            await self.app(scope, body.receive, send)
        finally:
            if body.holding:
                body.holding = False
                self._semaphore().release()

    def _is_large(self, scope: Scope) -> bool:
        length: bytes | None = None
        chunked = False
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = value
            elif name == b"transfer-encoding":
                chunked = True
        if length is None:
            return chunked
        try:
            return int(length) > self._large
        except ValueError:
            return True  # uvicorn refuses a malformed length before the app sees it; count it large regardless

    def _semaphore(self) -> asyncio.Semaphore:
        if self._uploads is None:
            self._uploads = asyncio.Semaphore(self._max_uploads)
        return self._uploads

    async def admit(self) -> None:
        """Wait for an upload slot; 503 at once when `max_waiting` already wait."""
        semaphore = self._semaphore()
        if semaphore.locked() and self._waiting >= self._max_waiting:
            raise ServiceUnavailableException(
                f"Expected at most {self._max_uploads} large uploads at once and {self._max_waiting} waiting "
                "(WORTHIT_MAX_CONCURRENT_UPLOADS, WORTHIT_MAX_WAITING_UPLOADS), got more; retry shortly",
                headers={"Retry-After": "5", **CLOSE},
            )
        self._waiting += 1
        try:
            await semaphore.acquire()
        finally:
            self._waiting -= 1


class _Body:
    """One request's `receive`, with the deadline and, for a large body, the slot."""

    def __init__(self, guard: BodyGuard, receive: Any, timeout: float, setting: str, *, large: bool) -> None:
        self._guard = guard
        self._receive = receive
        self._timeout = timeout
        self._setting = setting
        self._large = large
        self._deadline: float | None = None
        self._complete = False
        self.holding = False

    async def receive(self) -> Any:
        if self._complete:
            return await self._receive()  # after the body only a disconnect comes: no deadline for it
        if self._large and not self.holding:
            await self._guard.admit()
            self.holding = True
        loop = asyncio.get_running_loop()
        if self._deadline is None:
            self._deadline = loop.time() + self._timeout
        try:
            async with asyncio.timeout_at(self._deadline):
                message = await self._receive()
        except TimeoutError:
            raise ClientException(
                status_code=408,
                detail=f"Expected the whole request body within {self._timeout:g} s ({self._setting}), got part of it",
                headers=CLOSE,
            ) from None
        if message["type"] != "http.request" or not message.get("more_body", False):
            self._complete = True
        return message
