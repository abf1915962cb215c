"""Response shapes that only the HTTP layer has: probes and rule explanations."""

from __future__ import annotations

from typing import Literal

import msgspec


class Health(msgspec.Struct, kw_only=True):
    status: Literal["ok"]


class Ready(msgspec.Struct, kw_only=True):
    status: Literal["ready"]
    database: str
    schema_revision: str | None


class RuleDoc(msgspec.Struct, kw_only=True):
    id: str
    explanation: str
