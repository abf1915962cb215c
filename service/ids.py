"""Identifiers: UUIDv7 (time-ordered), so the primary key orders decisions by creation for cursor pagination."""

from __future__ import annotations

import hashlib
import os
import time
import uuid

__all__ = ["new_id", "scoped_key"]


def new_id() -> str:
    """A UUIDv7 string: 48 bits of Unix milliseconds, then random bits (RFC 9562)."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76 | ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62 | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def scoped_key(idempotency_key: str | None, token_id: str | None) -> str | None:
    """The key an `Idempotency-Key` is stored under: its caller's own. Keys were global, so another token reusing
    one got the first caller's answer (or 409); scoped by token, it gets its own. Without a token (auth off, Slack's
    signature keys) the key is stored as given. A digest, so that the stored key fits the column whatever its length."""
    if idempotency_key is None or token_id is None:
        return idempotency_key
    return "t:" + hashlib.sha256(f"{token_id}\0{idempotency_key}".encode()).hexdigest()
