"""A Kineto trace read in one pass from chunks of bytes (plain or gzip), never holding the document.

msgspec has no incremental JSON parser, so the ``traceEvents`` array is cut here into batches of whole events and
each batch is decoded by msgspec as an array of its own (``[`` + events + ``]``). A cut is taken at the last
``}`` , ``{`` of the buffer (Kineto writes ``},\\n  {`` between events) and trusted only once its batch decodes:
a cut inside a string leaves that string open and a cut inside an event leaves a bracket open, so either way the
batch is not a JSON array and fails to decode. Then (and at the end of the array) an exact scan of strings and
brackets (`_scan`) finds the cut. The document around the array (``distributedInfo``, ``deviceProperties``) is
decoded last, with the array left empty. Memory: one batch of bytes and its events, plus what `parse.Builder`
keeps (columns of the device events and CPU ops, not the document).

With `submit` (the service's process pool), batches are cut at the last boundary without decoding, decoded and
reduced elsewhere (`reduce_batch`) and merged here in order (`Builder.merge`); the first batch that does not decode
(a cut inside a string) and everything after it is read here instead, so the figures never depend on the cut.

Pure: the caller opens the file and passes its chunks (`chunks_of` reads a binary stream); no process is started here.
"""

from __future__ import annotations

import re
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import BinaryIO, NoReturn

import msgspec

from worthit.rules.profiles._text import UTF8_BOM
from worthit.rules.profiles.compression import is_gzip
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.parse import (
    DECODER,
    FORMAT,
    TOO_DEEP,
    Builder,
    DistributedInfo,
    Event,
    Parsed,
    Trace,
    error_text,
)

#: Bytes of events decoded at once: large enough that msgspec's speed is reached, small beside the file.
BATCH_BYTES = 4 << 20
#: How far into the file ``"traceEvents": [`` may be (what comes before it is metadata: a few KB).
MAX_HEAD_BYTES = 64 << 20
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_START = re.compile(rb"\s*(\[|\{)")
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|"|[\[\]{},]')
_WHITESPACE = b" \t\r\n"
_BOUNDARY = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")
_CLOSE = re.compile(rb"\}[ \t\r\n]*\]")
_TAIL_BYTES = 1 << 16  # where the last boundaries are looked for: the end of the buffer
_BATCH = msgspec.json.Decoder(list[Event])

Progress = Callable[[int], None]


def chunks_of(stream: BinaryIO, size: int = 1 << 20) -> Iterator[bytes]:
    """A binary stream's bytes, `size` at a time."""
    while chunk := stream.read(size):
        yield chunk


def inflated(chunks: Iterable[bytes], progress: Progress | None = None) -> Iterator[bytes]:
    """The chunks as plain bytes: gzip (several members allowed) is inflated as it comes, `progress(n)` told of
    each input chunk's size (the file's bytes, compressed or not)."""
    it = iter(chunks)
    first = b""
    for chunk in it:  # gzip's magic is two bytes: a first chunk of one says nothing yet
        first += chunk
        if progress is not None and chunk:
            progress(len(chunk))
        if len(first) >= 2:
            break
    if not is_gzip(first):
        if first:
            yield first
        for chunk in it:
            if progress is not None:
                progress(len(chunk))
            yield chunk
        return
    inflater = zlib.decompressobj(wbits=31)
    fed = False  # whether the current member's inflater has taken any input
    pending = first
    try:
        while True:
            while pending:
                fed = True
                out = inflater.decompress(pending, 1 << 22)
                if out:
                    yield out
                pending = inflater.unconsumed_tail
                if inflater.eof:
                    rest = inflater.unused_data.lstrip(b"\x00")
                    if len(rest) >= 2 and not is_gzip(rest):
                        return  # trailing garbage after a complete member: ignored, as gzip(1) does
                    inflater, fed, pending = zlib.decompressobj(wbits=31), False, rest
            following = next(it, None)
            if following is None:
                break
            if progress is not None:
                progress(len(following))
            pending = following
    except zlib.error as exc:
        raise ProfileError(f"corrupt gzip stream ({exc})", format_expected=FORMAT) from None
    if fed and not inflater.eof:
        raise ProfileError("the gzip stream is truncated (it ends before its last block)", format_expected=FORMAT)


def _without_bom(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks with a UTF-8 byte-order mark before the first one's JSON dropped (Windows tools write one)."""
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= len(UTF8_BOM) or not UTF8_BOM.startswith(head):
            break
    yield head.removeprefix(UTF8_BOM)
    yield from chunks


#: Hands a batch of event bytes to `reduce_batch` elsewhere (a process pool) and returns a handle whose
#: ``result()`` is what it returned: the service's parallel reader; the rules themselves start no process.
Submit = Callable[[bytes], "Future[Builder | None]"]


def parse_stream(
    chunks: Iterable[bytes],
    file: str | None = None,
    *,
    progress: Progress | None = None,
    batch: int = BATCH_BYTES,
    submit: Submit | None = None,
    depth: int = 4,
) -> Parsed:
    """A PyTorch profiler trace given as chunks of bytes (plain or gzip), read in one pass → the columns
    `parse.parse_trace` gives for the same bytes; ProfileError (naming `file`) when it cannot be read.

    With `submit`, batches are reduced elsewhere (`reduce_batch`, up to `depth` at once) and merged here in order;
    a batch whose cut turns out wrong (it does not decode) sends the rest of the file through this process."""
    reader = _Reader(_without_bom(inflated(chunks, progress)), file, batch)
    reader.submit, reader.depth = submit, depth
    return reader.read()


def reduce_batch(events: bytes) -> Builder | None:
    """The events of one batch (whole events, comma-separated) reduced on their own; None when they do not decode
    or cannot be read (the caller reads them again in order, for the error that names the event and the line)."""
    batch = _decoded(events)
    if batch is None:
        return None
    builder = Builder()
    try:
        builder.add(batch, 0)
    except ProfileError:
        return None
    builder.events = len(batch)
    return builder


class _Reader:
    def __init__(self, chunks: Iterable[bytes], file: str | None, batch: int) -> None:
        self.chunks = iter(chunks)
        self.file = file
        self.batch = batch
        self.builder = Builder(file)
        self.buf = b""
        self.eof = False
        self.offset = 0  # bytes of the document before `buf`
        self.lines = 0  # newlines before `buf`
        self.events = 0  # events decoded so far
        self.submit: Submit | None = None
        self.depth = 4

    def _more(self) -> bool:
        chunk = next(self.chunks, None)
        if chunk is None:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def _drop(self, n: int) -> None:
        self.lines += self.buf.count(b"\n", 0, n)
        self.offset += n
        self.buf = self.buf[n:]

    def read(self) -> Parsed:
        head = self._head()
        inflight: deque[tuple[bytes, int, int, Future[Builder | None]]] = deque()
        while True:
            while not self.eof and len(self.buf) < self.batch:
                self._more()
            if self.eof:
                break
            if self.submit is not None:
                self._submit(inflight)
                continue
            cut, batch = self._cut()
            if cut is None:  # one event larger than a batch: read on
                self._more()
                continue
            if batch is None:
                self._decode_batch(self.buf[:cut])
            else:
                self._add(batch)
            self._drop(self._next_event(cut))
        while inflight and self.submit is not None:
            self._settle(inflight)
        return self._finish(head)

    def _submit(self, inflight: deque[tuple[bytes, int, int, Future[Builder | None]]]) -> None:
        """Cut at the last boundary without decoding, hand the batch over; settle the oldest when enough wait."""
        assert self.submit is not None  # noqa: S101 - only called with one
        buf = self.buf
        ends = [m.start() + 1 for m in _BOUNDARY.finditer(buf, max(0, len(buf) - _TAIL_BYTES))]
        if not ends:
            self._more()
            return
        cut = ends[-1]
        following = self._next_event(cut)
        inflight.append((buf[:following], self.offset, self.lines, self.submit(buf[:cut])))
        self._drop(following)
        while len(inflight) >= self.depth and self.submit is not None:
            self._settle(inflight)

    def _settle(self, inflight: deque[tuple[bytes, int, int, Future[Builder | None]]]) -> None:
        """Merge the oldest batch's result; when it did not decode, take every waiting batch back into `buf`."""
        _, offset, lines, future = inflight[0]
        part = future.result()
        if part is not None:
            inflight.popleft()
            self.builder.merge(part)
            self.events += part.events
            return
        self.buf = b"".join(s for s, _, _, _ in inflight) + self.buf
        self.offset, self.lines = offset, lines
        for _, _, _, waiting in inflight:
            waiting.cancel()
        inflight.clear()
        self.submit = None  # the rest in order, here

    def _finish(self, head: bytes) -> Parsed:
        return self.builder.finish(self._outer_info(head))

    def _outer_info(self, head: bytes) -> DistributedInfo | None:
        end = self._close()
        if end is None:
            self._malformed("the traceEvents array is not closed", len(self.buf))
        events = self.buf[:end]
        if events.strip(_WHITESPACE):
            self._decode_batch(events)
        outer = self._outer(head + self.buf[end:], len(head), end)
        return outer.distributedInfo if isinstance(outer, Trace) else None

    def _head(self) -> bytes:
        """Read up to the first event; the bytes before it (``{…"traceEvents": [`` or ``[``)."""
        while True:
            start = _START.match(self.buf)
            if start is not None and start.group(1) == b"[":
                head = self.buf[: start.end()]
                break
            found = _KEY.search(self.buf) if start is not None else None
            if found is not None:
                head = self.buf[: found.end()]
                break
            if self.eof or len(self.buf) > MAX_HEAD_BYTES or (self.buf.strip(_WHITESPACE) and start is None):
                # Not a trace whose events we can find: decode what there is for the whole reader's own error.
                while not self.eof and len(self.buf) <= MAX_HEAD_BYTES:
                    self._more()
                self._outer(self.buf, None, 0)
                raise ProfileError("JSON, but not a Chrome trace: no traceEvents array", format_expected=FORMAT)
            self._more()
        self._drop(len(head))
        return head

    def _cut(self) -> tuple[int | None, list[Event] | None]:
        """The end of the last whole event in `buf`, and the events before it when they were decoded to find it."""
        buf = self.buf
        ends = [m.start() + 1 for m in _BOUNDARY.finditer(buf, max(0, len(buf) - _TAIL_BYTES))]
        for end in ends[-1:-5:-1]:  # a few candidates, last first: one inside a string fails to decode
            batch = _decoded(buf[:end])
            if batch is not None:
                return end, batch
        return _scan(buf, False), None

    def _close(self) -> int | None:
        """Where the traceEvents array closes in `buf` (its ``]``), all of the rest of the file being in `buf`."""
        buf = self.buf
        empty = re.match(rb"[ \t\r\n]*\]", buf)
        if empty is not None:
            return empty.end() - 1
        closes = [m.end() - 1 for m in _CLOSE.finditer(buf, max(0, len(buf) - _TAIL_BYTES))]
        for end in closes[-1:-5:-1]:
            # Events that decode end outside any string and bracket: the ] after them closes their array.
            if _decoded(buf[: buf.rfind(b"}", 0, end) + 1]) is not None:
                return end
        return _scan(buf, True)

    def _next_event(self, cut: int) -> int:
        """From the end of a batch, past the comma and the whitespace to the next event."""
        buf = self.buf
        j = cut
        while j < len(buf) and (buf[j] in _WHITESPACE or buf[j] == 0x2C):
            j += 1
        return j

    def _decode_batch(self, events: bytes) -> None:
        try:
            batch = _BATCH.decode(b"[" + events + b"]")
        except msgspec.ValidationError as exc:
            message = re.sub(
                r"\$\[(\d+)\]", lambda m: f"$.traceEvents[{self.events + int(m.group(1))}]", error_text(exc)
            )
            raise ProfileError(f"JSON, but not a Chrome trace: {message}", format_expected=FORMAT) from None
        except RecursionError:
            raise ProfileError(TOO_DEEP, format_expected=FORMAT) from None
        except msgspec.DecodeError as exc:
            self._malformed(error_text(exc), _byte_of(exc, -1))
        self._add(batch)

    def _add(self, batch: list[Event]) -> None:
        self.builder.add(batch, self.events)
        self.events += len(batch)

    def _outer(self, document: bytes, head: int | None, tail_at: int) -> Trace | list[Event]:
        """Decode the document around the events (`head` bytes of it before them, None when `document` is all of
        `buf`); `tail_at` is where what follows the events starts in `buf`."""
        try:
            return DECODER.decode(document)
        except msgspec.ValidationError as exc:
            raise ProfileError(f"JSON, but not a Chrome trace: {error_text(exc)}", format_expected=FORMAT) from None
        except RecursionError:
            raise ProfileError(TOO_DEEP, format_expected=FORMAT) from None
        except msgspec.DecodeError as exc:
            at = _byte_of(exc, 0)
            if head is None or at is None:
                self._malformed(error_text(exc), at)
            if at < head:  # before the events: in the file's first bytes
                raise ProfileError(
                    f"malformed JSON: {error_text(exc)}", format_expected=FORMAT, line=document.count(b"\n", 0, at) + 1
                ) from None
            self._malformed(error_text(exc), tail_at + at - head)

    def _malformed(self, message: str, at: int | None) -> NoReturn:
        line = self.lines + self.buf.count(b"\n", 0, max(0, at)) + 1 if at is not None else None
        where = f" in {self.file}" if self.file else ""
        raise ProfileError(f"malformed JSON{where}: {message}", format_expected=FORMAT, line=line)


def _decoded(events: bytes) -> list[Event] | None:
    try:
        return _BATCH.decode(b"[" + events + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _scan(buf: bytes, closing: bool) -> int | None:
    """Exactly, through strings and brackets: with `closing`, where the array `buf` is in closes (its ``]``);
    without, the position of the last comma between two of its elements. None when there is none in `buf`."""
    depth = 0
    last = None
    for token in _TOKEN.finditer(buf):
        t = token.group()
        c = t[0]
        if c == 0x22:  # '"'
            if len(t) == 1:  # a string left open: the rest of it is not in `buf` yet
                return None if closing else last
            continue
        if c in b"[{":
            depth += 1
        elif c in b"]}":
            depth -= 1
            if depth < 0:
                return token.start() if closing else last
        elif depth == 0:
            last = token.start()
    return None if closing else last


def _byte_of(exc: Exception, shift: int) -> int | None:
    found = re.search(r"\(byte (\d+)\)", str(exc))
    return int(found.group(1)) + shift if found is not None else None


__all__ = ["BATCH_BYTES", "Submit", "chunks_of", "inflated", "parse_stream", "reduce_batch"]
