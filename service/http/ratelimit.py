"""Per-token (or, without a token, per-address) rate limiting, per process, with `Retry-After`.

A token bucket per key: `N/minute` refills N tokens a minute and holds at most N, so a client may burst up to N
and then runs at the rate. Hand-written rather than the `limits` library: its in-memory storage starts a timer
thread on every hit, which measured at a sixth of the server's time per request.
"""

from __future__ import annotations

import math
import re
import time

__all__ = ["MAX_KEYS", "UNITS", "RateLimiter", "parse"]

UNITS = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0}
_SPEC = re.compile(r"^\s*(\d+)\s*(?:/|per)\s*(second|minute|hour|day)s?\s*$")
# Bound the table against a flood of made-up tokens or addresses: past this, full buckets are forgotten.
MAX_KEYS = 100_000


def parse(spec: str) -> tuple[float, float]:
    """`"1200/minute"` → (capacity 1200, refill 20 per second). ValueError names what was expected."""
    match = _SPEC.match(spec)
    if match is None:
        raise ValueError(f"Expected a rate limit like `1200/minute` (second, minute, hour, day) or `off`, got {spec!r}")
    count = float(match.group(1))
    if count <= 0:
        raise ValueError(f"Expected a positive number of requests in the rate limit, got {spec!r}")
    return count, count / UNITS[match.group(2)]


class RateLimiter:
    def __init__(self, spec: str) -> None:
        self._capacity, self._rate = parse(spec)
        self._spec = spec
        self._buckets: dict[str, tuple[float, float]] = {}

    def hit(self, key: str) -> int | None:
        """Count one request for `key`; None when allowed, else the seconds until one is allowed again."""
        now = time.monotonic()
        tokens, last = self._buckets.get(key, (self._capacity, now))
        tokens = min(self._capacity, tokens + (now - last) * self._rate)
        if tokens >= 1.0:
            if len(self._buckets) >= MAX_KEYS and key not in self._buckets:
                self._forget_full(now)
            self._buckets[key] = (tokens - 1.0, now)
            return None
        self._buckets[key] = (tokens, now)
        return max(1, math.ceil((1.0 - tokens) / self._rate))

    def check(self, key: str) -> int | None:
        """Like `hit`, without counting a request: None while `key` has a token left, else the seconds to wait."""
        if key not in self._buckets:
            return None
        tokens, last = self._buckets[key]
        tokens = min(self._capacity, tokens + (time.monotonic() - last) * self._rate)
        return None if tokens >= 1.0 else max(1, math.ceil((1.0 - tokens) / self._rate))

    def _forget_full(self, now: float) -> None:
        full = [
            key for key, (tokens, last) in self._buckets.items() if tokens + (now - last) * self._rate >= self._capacity
        ]
        for key in full:
            del self._buckets[key]

    def describe(self) -> str:
        return self._spec
