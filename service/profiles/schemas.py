"""The stored profile document (its breakdown is the readers' rules.profiles.model.Breakdown)."""

from __future__ import annotations

from datetime import datetime

import msgspec

from worthit.rules.profiles.model import Breakdown

__all__ = ["ProfileDoc", "ProfilePage", "ProfileSummary"]


class ProfileDoc(msgspec.Struct, kw_only=True):
    """A stored profile: its breakdown with honest denominators (the raw file is not kept)."""

    id: str
    created_at: datetime
    name: str | None
    size_bytes: int
    breakdown: Breakdown


class ProfileSummary(msgspec.Struct, kw_only=True):
    """A stored profile as a list shows it: what names it, without its breakdown (`GET /v1/profiles/{id}` has it)."""

    id: str
    created_at: datetime
    name: str | None
    format: str
    """The format it was read as (`kineto`, `rocprofv3-kernel-trace`, …)."""
    size_bytes: int


class ProfilePage(msgspec.Struct, kw_only=True):
    """One page of profiles, newest first; pass `next_cursor` as `cursor` for the next page."""

    items: list[ProfileSummary]
    next_cursor: str | None = None
