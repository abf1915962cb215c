"""uvicorn's httptools protocol with a bound on request header size (httptools itself has none).

httptools buffers an unfinished header line in memory for as long as the client keeps sending it: forty
connections with 16 MB of unfinished headers held 763 MB. Here the bytes received before a request's headers
end are counted after each read; past `WORTHIT_MAX_HEADER_BYTES` the server answers 431 and closes. What one
connection can make the parser hold is then the limit plus one read (asyncio reads at most 256 KiB).

A chunked body ends in trailers, header lines again, which httptools parses and uvicorn appended to the request's
headers, unbounded and uncounted (neither header nor body): eight connections without a token sending 120 MB of
trailers each took the server to 1 GB. After the headers, what a read brings beyond its body bytes and the framing
of its chunks (trailers, chunk extensions) is counted against the same limit, and trailers are dropped: no route
reads them, and the headers the app already read are not appended to.
"""

from __future__ import annotations

import functools
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from worthit.service.http.timeouts import HeaderDeadline
from worthit.service.settings import Settings

STATUS_431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
CHUNK_FRAMING = 32
"""Bytes a chunk's own framing may take (its size in hex, CRLF, and the CRLF after its data: 8 for a 4 KiB chunk)."""


@functools.cache
def max_header_bytes() -> int:
    """The limit, read once per process (workers are processes: each reads the same environment)."""
    return Settings.from_env().max_header_bytes


class HeaderLimitedProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limit = max_header_bytes()
        self._header_bytes = 0
        self._in_headers = True
        self._in_body = False
        self._read_body = 0  # body bytes of the current read
        self._read_chunks = 0  # chunk headers of the current read
        self._began = False  # a request began in the current read
        self._headers_ended = False  # a request's headers ended in the current read
        self._body_after = 0  # body bytes of the current read since the last headers ended in it
        self._chunks_after = 0  # chunk headers of the current read since the last headers ended in it

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._in_headers = True
        self._began = True

    def on_headers_complete(self) -> None:
        self._in_headers = False
        self._in_body = True
        self._headers_ended = True
        self._body_after = self._chunks_after = 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_body = False
        super().on_message_complete()

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._in_headers:  # after them, a trailer: dropped (counted in `data_received`)
            super().on_header(name, value)

    def on_body(self, body: bytes) -> None:
        self._read_body += len(body)
        self._body_after += len(body)
        super().on_body(body)

    def on_chunk_header(self) -> None:
        self._read_chunks += 1
        self._chunks_after += 1

    def data_received(self, data: bytes) -> None:
        self._read_body = self._read_chunks = self._body_after = self._chunks_after = 0
        self._began = self._headers_ended = False
        super().data_received(data)
        if self.transport.is_closing():
            return
        # Only the current request's bytes count: a read of pipelined requests (600 small POSTs in one 220 KB burst)
        # holds the earlier ones whole, and counting the whole read as the last one's headers answered it 431.
        if self._in_headers:
            if self._began:  # it began in this read: its bytes are those after the previous request's end
                self._header_bytes = len(data) - min(len(data), self._previous_end(data))
            else:
                self._header_bytes += len(data)
        elif self._in_body:  # the body's framing and trailers; a read's credit for small chunks is not carried over
            if self._headers_ended:  # its headers ended in this read: what follows them
                framing = len(data) - _after_blank_line(data) - self._body_after - CHUNK_FRAMING * self._chunks_after
                self._header_bytes = max(0, framing)
            else:
                framing = len(data) - self._read_body - CHUNK_FRAMING * self._read_chunks
                self._header_bytes = max(0, self._header_bytes + framing)
        else:  # between requests: the parser holds nothing of one
            self._header_bytes = 0
        if self._header_bytes > self._limit:
            self._send_431()

    def _previous_end(self, data: bytes) -> int:
        """Where in `data` the request before the current one ended, or a little later (chunk framing is counted at
        its most): an under-count of at most one read, which the next read of the same headers counts whole."""
        if self._headers_ended:  # the previous request's headers ended here too: after them, its body
            return _after_blank_line(data) + self._body_after + CHUNK_FRAMING * self._chunks_after
        return self._read_body + CHUNK_FRAMING * self._read_chunks

    def _send_431(self) -> None:
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # what the app sends from now on is dropped, as after a disconnect
            self.cycle.message_event.set()
            if self.cycle.response_started:  # too late for a status: close only
                self.transport.close()
                return
        detail = (
            f'{{"type":"https://worthit.dev/problems/too-large","title":"Request Header Fields Too Large",'
            f'"status":431,"detail":"Expected request headers of at most {self._limit} bytes '
            f'(WORTHIT_MAX_HEADER_BYTES), got more"}}'
        ).encode()
        head = [STATUS_431]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: application/problem+json\r\n",
            b"content-length: " + str(len(detail)).encode() + b"\r\n",
            b"connection: close\r\n\r\n",
            detail,
        ]
        self.transport.write(b"".join(head))
        self.transport.close()


def _after_blank_line(data: bytes) -> int:
    """Where the last blank line of `data` (the end of a request's headers) ends; 0 when there is none. The current
    request's unfinished headers hold none, so it is at or before their start."""
    crlf, lf = data.rfind(b"\r\n\r\n"), data.rfind(b"\n\n")
    return max(crlf + 4 if crlf >= 0 else 0, lf + 2 if lf >= 0 else 0)


class GuardedProtocol(HeaderDeadline, HeaderLimitedProtocol):
    """The protocol `worthit serve` runs: httptools with a bound on header size (431) and a deadline for headers."""


def guarded(header_timeout: float) -> Any:
    """What uvicorn's `http` option takes: a partial of a module-level class, so that it pickles for spawned
    workers."""
    return functools.partial(GuardedProtocol, header_timeout=header_timeout)


__all__ = ["GuardedProtocol", "HeaderLimitedProtocol", "guarded", "max_header_bytes"]
