"""`signed`: Slack's SDK decides, and whatever a forger sends is a plain "no", never an exception (no 5xx)."""

from __future__ import annotations

import time

import pytest
from slack_sdk.signature import SignatureVerifier

from worthit.service.api.slack import signed

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BODY = b"command=%2Fworthit&text=p%3D21%25+k%3D10"


def stamp(age_s: int = 0) -> str:
    return str(int(time.time()) - age_s)


def signature(body: bytes, timestamp: str, secret: str = SECRET) -> str:
    value = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    assert value is not None
    return value


def test_a_fresh_signature_by_the_secret_is_valid() -> None:
    now = stamp()
    assert signed(SECRET, BODY, now, signature(BODY, now))
    four_minutes_ago = stamp(4 * 60)
    assert signed(SECRET, BODY, four_minutes_ago, signature(BODY, four_minutes_ago))


# Timestamps are made when the test runs, not when it is collected: a long suite would otherwise age "six minutes
# ahead" into "now".
CASES: dict[str, tuple[bytes, object, object]] = {
    "wrong secret": (BODY, 0, ("sign", 0, "another-secret")),
    "altered body": (BODY + b"x", 0, ("sign", 0, SECRET)),
    "six minutes old": (BODY, 6 * 60, ("sign", 6 * 60, SECRET)),
    "six minutes ahead": (BODY, -6 * 60, ("sign", -6 * 60, SECRET)),
    "no timestamp": (BODY, None, ("sign", 0, SECRET)),
    "no signature": (BODY, 0, None),
    "neither": (BODY, None, None),
    "timestamp not a number": (BODY, "yesterday", "v0=00"),
    "timestamp too large for a float": (BODY, "9" * 400, "v0=00"),
    "signature not ascii": (BODY, 0, "v0=\u00e9\u00e9"),
    "body not utf-8": (b"\xff\xfe", 0, "v0=00"),
    "empty signature": (BODY, 0, ""),
}


def _at(age: object) -> str | None:
    return stamp(age) if isinstance(age, int) else age  # type: ignore[return-value]


@pytest.mark.parametrize("case", list(CASES))
def test_anything_else_is_not_signed(case: str) -> None:
    body, age, how = CASES[case]
    sig = signature(BODY, stamp(how[1]), how[2]) if isinstance(how, tuple) else how
    assert signed(SECRET, body, _at(age), sig) is False  # type: ignore[arg-type]
