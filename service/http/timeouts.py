"""A deadline for a request's headers, as a mixin over uvicorn's HTTP protocols (uvicorn has none of its own).

uvicorn times out a connection that stays idle after a response (`timeout_keep_alive`), but nothing else: a socket
that connects and sends nothing, or half a request line and then nothing, holds its connection (and a file
descriptor) for good, and a few thousand of them exhaust the server. Here a timer starts when a connection opens and
when the first bytes of a further request arrive; when it fires before that request's headers are complete (uvicorn
then starts a new request cycle), the connection is closed. Kept to this one concern, so that other subclasses of
the protocol (limits on header size) compose with it as further mixins.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderDeadline:
    """Mixin for uvicorn's `H11Protocol` or `HttpToolsProtocol`: close a connection whose request headers are not
    complete within `header_timeout` seconds of its start (or of the first byte of a further request)."""

    cycle: Any
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    def __init__(self, *args: Any, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout = header_timeout
        self._header_timer: asyncio.TimerHandle | None = None
        self._armed_for: Any = None  # the request cycle current when the timer was started

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        between_requests = self.cycle is None or self.cycle.response_complete
        if between_requests and (self._header_timer is None or self._armed_for is not self.cycle):
            self._arm_header_timer()  # the first bytes of a further request on a kept-alive connection
        super().data_received(data)  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().connection_lost(exc)  # type: ignore[misc]

    def _arm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._armed_for = self.cycle
        self._header_timer = self.loop.call_later(self._header_timeout, self._header_deadline)

    def _header_deadline(self) -> None:
        self._header_timer = None
        # A new cycle means the headers arrived in time; the same one means they did not.
        if self.cycle is self._armed_for and not self.transport.is_closing():
            self.transport.close()


HeaderDeadlineHttpTools: type | None
try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools is a dependency; h11 is uvicorn's own fallback
    HeaderDeadlineHttpTools = None
else:

    class HeaderDeadlineHttpTools(HeaderDeadline, HttpToolsProtocol):  # type: ignore[no-redef]
        """uvicorn's httptools protocol with the header deadline."""


class HeaderDeadlineH11(HeaderDeadline, H11Protocol):
    """uvicorn's h11 protocol with the header deadline."""


def protocol(header_timeout: float) -> Any:
    """What uvicorn's `http` option takes: the protocol uvicorn would pick ("auto": httptools when installed), with
    the header deadline. A partial of a module-level class, so that it pickles for spawned workers."""
    chosen: type = HeaderDeadlineH11 if HeaderDeadlineHttpTools is None else HeaderDeadlineHttpTools
    return functools.partial(chosen, header_timeout=header_timeout)
