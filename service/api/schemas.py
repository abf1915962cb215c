"""Response shapes of the API beyond the engine's own (rules.model.Evaluation)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

from rules.model import Evaluation, Proposal

Source = Literal["api", "slack", "cli", "gate"]


class Decision(Evaluation, kw_only=True):
    """A stored evaluation: what was asked, what was answered, when, under which policy, from where."""

    id: str
    created_at: datetime
    source: Source = "api"
    source_detail: dict[str, str] | None = None
    """Where it came from beyond the surface: the Slack user and team ids, the pull request, …"""
    proposal: Proposal


class DecisionPage(msgspec.Struct, kw_only=True):
    """One page of decisions, newest first; pass `next_cursor` as `cursor` for the next page."""

    items: list[Decision]
    next_cursor: str | None = None


class Health(msgspec.Struct, kw_only=True):
    status: Literal["ok"]


class Ready(msgspec.Struct, kw_only=True):
    status: Literal["ready"]
    database: str
    schema_revision: str | None


class RuleDoc(msgspec.Struct, kw_only=True):
    id: str
    explanation: str
