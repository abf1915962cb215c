"""Per-token (or, without a token, per-address) rate limiting, per process, with `Retry-After`."""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter


class RateLimiter:
    """A moving window from the `limits` library (e.g. "600/minute")."""

    def __init__(self, spec: str) -> None:
        self._item: RateLimitItem = parse(spec)
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._spec = spec

    def hit(self, key: str) -> int | None:
        """Count one request for `key`; None when allowed, else the seconds until one is allowed again."""
        if self._limiter.hit(self._item, key):
            return None
        reset_at = self._limiter.get_window_stats(self._item, key).reset_time
        return max(1, math.ceil(reset_at - time.time()))

    def describe(self) -> str:
        return self._spec
