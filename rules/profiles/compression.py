"""Transparent gzip: profilers and users gzip traces (``trace.json.gz``); readers see plain bytes."""

from __future__ import annotations

import zlib

from worthit.rules.profiles.errors import ProfileError

GZIP_MAGIC = b"\x1f\x8b"
#: Refuse to inflate beyond this: a small upload must not become gigabytes in memory (a zip bomb).
MAX_INFLATED_BYTES = 4 * 1024**3


def is_gzip(data: bytes) -> bool:
    """True when `data` starts with the gzip magic number."""
    return data[:2] == GZIP_MAGIC


def gunzip(data: bytes, fmt: str | None = None, limit: int = MAX_INFLATED_BYTES) -> bytes:
    """Inflate gzip bytes (several members allowed); a truncated or corrupt stream is a ProfileError."""
    out: list[bytes] = []
    size = 0
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        try:
            while rest:
                chunk = inflater.decompress(rest, limit + 1 - size)
                size += len(chunk)
                out.append(chunk)
                if size > limit:
                    raise ProfileError(f"the gzip stream inflates beyond {limit} bytes", format_expected=fmt, line=None)
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
    return b"".join(out)
