"""Transparent gzip: profilers and users gzip traces (``trace.json.gz``); readers see plain bytes.

Inflating is streamed in bounded chunks: the output is counted as it grows, so a small upload that would inflate
to gigabytes (a gzip bomb) is refused once it passes the limit, never built, and `stop` is asked between chunks so
work for an abandoned request (its deadline passed) ends within one chunk instead of running on for minutes.

A gzip may hold another gzip (``trace.json.gz.gz``, or a bomb of a few hundred bytes whose every layer is small):
`inflate` peels every layer within the one limit, so no reader ever meets a compressed layer it must inflate with an
allowance of its own. `gunzip` is the same function under its older name.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from worthit.rules.profiles.errors import ProfileError, ProfileTooLarge

GZIP_MAGIC = b"\x1f\x8b"
#: The engine's own ceiling when a caller names none; the service passes its (much smaller) setting.
MAX_INFLATED_BYTES = 256 * 1024**2
#: Output per inflate step: small enough that one step's memory and time are negligible.
CHUNK = 1 << 20


class Stopped(Exception):
    """Raised when `stop()` answers True between chunks: nobody waits for the result any more."""


def is_gzip(data: bytes) -> bool:
    """True when `data` starts with the gzip magic number."""
    return data[:2] == GZIP_MAGIC


#: Layers of gzip inside gzip `inflate` peels before calling the file corrupt (real files have one).
MAX_LAYERS = 4


def inflate(
    data: bytes,
    fmt: str | None = None,
    limit: int = MAX_INFLATED_BYTES,
    stop: Callable[[], bool] | None = None,
) -> bytes:
    """`data` with every gzip layer inflated (plain bytes are returned as they are), no layer's output beyond `limit`
    bytes: beyond it ProfileTooLarge. The one way any reader or service inflates.

    Each layer's output is counted against `limit` while it is being built, so the peak is at most `limit` plus the
    previous layer (itself within it). A truncated or corrupt stream is a ProfileError; `stop()` answering True
    raises Stopped.
    """
    layers = 0
    while is_gzip(data):
        layers += 1
        if layers > MAX_LAYERS:
            raise ProfileError(
                f"gzip nested more than {MAX_LAYERS} layers deep; expected a profile gzipped once", format_expected=fmt
            )
        data = _inflate_layer(data, fmt, limit, stop)
    return data


def gunzip(
    data: bytes,
    fmt: str | None = None,
    limit: int = MAX_INFLATED_BYTES,
    stop: Callable[[], bool] | None = None,
) -> bytes:
    """`inflate` under its older name: every layer, one limit."""
    return inflate(data, fmt, limit, stop)


def _inflate_layer(data: bytes, fmt: str | None, limit: int, stop: Callable[[], bool] | None) -> bytes:
    """One gzip layer (several members allowed), at most `limit` bytes of output."""
    out = bytearray()
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        try:
            while rest:
                if stop is not None and stop():
                    raise Stopped
                out += inflater.decompress(rest, min(CHUNK, limit + 1 - len(out)))
                if len(out) > limit:
                    raise ProfileTooLarge(
                        f"the gzip stream inflates beyond the limit of {limit} bytes ({limit // 1024**2} MiB); "
                        "expected a profile that inflates to at most that (WORTHIT_MAX_INFLATED_BYTES)",
                        limit=limit,
                        format_expected=fmt,
                    )
                rest = inflater.unconsumed_tail
                if inflater.eof:
                    break
        except zlib.error as exc:
            raise ProfileError(f"corrupt gzip stream ({exc})", format_expected=fmt) from None
        if not inflater.eof:
            raise ProfileError("the gzip stream is truncated (it ends before its last block)", format_expected=fmt)
        rest = inflater.unused_data.lstrip(b"\x00")
        if rest and not is_gzip(rest):
            break  # trailing garbage after a complete member: ignore, as gzip(1) does with a warning
    if stop is not None and stop():
        raise Stopped
    return bytes(out)


__all__ = ["CHUNK", "GZIP_MAGIC", "MAX_INFLATED_BYTES", "Stopped", "gunzip", "inflate", "is_gzip"]
