"""The stored profile document (its breakdown is the readers' rules.profiles.model.Breakdown)."""

from __future__ import annotations

from datetime import datetime

import msgspec

from worthit.rules.profiles.model import Breakdown

__all__ = ["ProfileDoc"]


class ProfileDoc(msgspec.Struct, kw_only=True):
    """A stored profile: its breakdown with honest denominators (the raw file is not kept)."""

    id: str
    created_at: datetime
    name: str | None
    size_bytes: int
    breakdown: Breakdown
