"""Bearer tokens with scopes (read ⊂ write ⊂ admin): made here, stored as SHA-256 digests (service.db.tokens).

Tokens are 256 random bits, so a fast digest is enough: there is nothing to brute-force, and a lookup by digest
costs one indexed read.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Literal

__all__ = ["GRANTS", "PUBLIC", "SCOPES", "TOKEN_PREFIX", "Principal", "Scope", "digest", "new_token"]

Scope = Literal["read", "write", "admin", "slack"]
SCOPES: tuple[Scope, ...] = ("read", "write", "admin", "slack")
PUBLIC = "public"
GRANTS: dict[str, frozenset[str]] = {
    "read": frozenset({"read"}),
    "write": frozenset({"read", "write"}),
    "admin": frozenset({"read", "write", "admin"}),
    # The Slack bot's: a writer that may say which Slack user it speaks for (`Worthit-Source: slack; user_id=…`),
    # who then owns the decision. No other token may, so no API client can pass for a Slack user.
    "slack": frozenset({"read", "write", "slack"}),
}
TOKEN_PREFIX = "wt_"  # noqa: S105 - a prefix that makes leaked tokens greppable, not a secret


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Principal:
    id: str
    name: str
    scopes: frozenset[str]
