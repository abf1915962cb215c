"""The token bucket: a burst up to the capacity, then the rate, and an honest Retry-After."""

from __future__ import annotations

import pytest

from worthit.service.http import ratelimit
from worthit.service.http.ratelimit import RateLimiter, parse


def test_specs_parse_to_capacity_and_rate() -> None:
    assert parse("1200/minute") == (1200.0, 20.0)
    assert parse("5 per second") == (5.0, 5.0)
    assert parse("24/days") == (24.0, 24.0 / 86400)
    for bad in ("", "fast", "10/fortnight", "0/minute", "-1/minute"):
        with pytest.raises(ValueError, match="rate limit"):
            parse(bad)


def test_burst_then_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(ratelimit.time, "monotonic", lambda: clock[0])
    limiter = RateLimiter("6/minute")  # one token every 10 s
    assert [limiter.hit("a") for _ in range(6)] == [None] * 6
    assert limiter.hit("a") == 10
    assert limiter.hit("b") is None, "keys are independent"
    clock[0] += 4
    assert limiter.hit("a") == 6
    clock[0] += 6
    assert limiter.hit("a") is None
    assert limiter.hit("a") == 10


def test_the_table_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ratelimit, "MAX_KEYS", 10)
    clock = [0.0]
    monkeypatch.setattr(ratelimit.time, "monotonic", lambda: clock[0])
    limiter = RateLimiter("100/second")
    for n in range(50):
        clock[0] += 1.0  # every earlier bucket has refilled: forgettable
        limiter.hit(f"k{n}")
    assert len(limiter._buckets) <= 10


def test_check_peeks_without_counting(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(ratelimit.time, "monotonic", lambda: clock[0])
    limiter = RateLimiter("2/minute")  # one token every 30 s
    assert limiter.check("a") is None, "an unseen key has a full bucket"
    assert [limiter.hit("a"), limiter.check("a"), limiter.hit("a")] == [None, None, None]
    assert limiter.check("a") == 30
    assert limiter.check("a") == 30, "checking counts nothing"
    clock[0] += 30
    assert limiter.check("a") is None
