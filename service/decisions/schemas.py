"""The decision documents the service returns and stores, beyond the engine's own (rules.model.Evaluation)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

from worthit.rules.model import Evaluation, Proposal

__all__ = ["Change", "Decision", "DecisionPage", "Reevaluation", "Source"]

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


class Change(msgspec.Struct, kw_only=True):
    """One figure or conclusion that differs between two evaluations."""

    field: str
    before: str | float | None
    after: str | float | None


class Reevaluation(msgspec.Struct, kw_only=True):
    """A stored decision evaluated again under another policy."""

    decision_id: str
    before: Evaluation
    """The stored decision's evaluation, as it was made (its `policy` says under which version)."""
    after: Evaluation
    changed: bool
    changes: list[Change]
    rules_fired: list[str]
    """Rules whose findings appear under the new policy only."""
    rules_silent: list[str]
    """Rules whose findings appear under the old policy only."""
