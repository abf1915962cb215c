"""Inputs of memory attacks, built in memory: small on the wire, large once read.

Public on purpose (like `tests/harness.py`): the e2e tests send them, and a measurement script can too.
"""

from __future__ import annotations

import gzip
import zlib


def deflated(chunks: list[bytes] | tuple[bytes, ...], repeat: int = 1) -> bytes:
    """One gzip member of `chunks` written `repeat` times, streamed (never built whole)."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = []
    for _ in range(repeat):
        parts += [deflater.compress(chunk) for chunk in chunks]
    parts.append(deflater.flush())
    return b"".join(parts)


def tiny_events_gzip(inflated: int = 63 * 1024**2) -> bytes:
    """A gzip of a Chrome trace of `inflated` bytes of `{"ph":"i"}` events: ten bytes each, ~100 once a struct."""
    event = b'{"ph":"i"},'
    block = event * (65536 // len(event))
    body = deflated([block], inflated // len(block))
    head = deflated([b'{"traceEvents":['])
    tail = deflated([b'{"ph":"i"}]}'])
    return head + body + tail  # three gzip members: one stream to every reader


def tiny_events(inflated: int) -> bytes:
    """The same trace, plain."""
    event = b'{"ph":"i"},'
    return b'{"traceEvents":[' + event * (inflated // len(event)) + b'{"ph":"i"}]}'


def distinct_kernels_csv(count: int = 1_500_000) -> bytes:
    """A rocprofv3 kernel trace of `count` kernels, each of its own name: 19 bytes a row, one name each."""
    rows = [b'"Kernel_Name","Start_Timestamp","End_Timestamp"\n']
    rows += [b"kernel_%07d,1,2\n" % i for i in range(count)]
    return b"".join(rows)


def spaces_gzip(inflated: int) -> bytes:
    """A gzip of a JSON start then `inflated` bytes of spaces."""
    return deflated([b'{"traceEvents": [']) + deflated([b" " * (1 << 20)], inflated >> 20)


def nested(data: bytes, layers: int = 1) -> bytes:
    """`data` gzipped again `layers` times: each layer small, the innermost as large as it was."""
    for _ in range(layers):
        data = gzip.compress(data, 9)
    return data
