"""Identifiers: UUIDv7 (time-ordered), so the primary key orders decisions by creation for cursor pagination."""

from __future__ import annotations

import os
import time
import uuid


def new_id() -> str:
    """A UUIDv7 string: 48 bits of Unix milliseconds, then random bits (RFC 9562)."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76 | ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62 | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))
