"""The stored profile document (its breakdown is the readers' rules.profiles.model.Breakdown)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from msgspec import Meta

from worthit.rules.profiles.kineto import MAX_K, MAX_TARGETS, Target
from worthit.rules.profiles.model import Breakdown
from worthit.rules.step_grammar import STEPS_MAX_LENGTH, STEPS_PATTERN

__all__ = ["ProfileDoc", "ProfilePage", "ProfileSummary", "WhatIfRequest", "WhatIfTarget"]


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


class WhatIfTarget(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What to make faster: a glob over device phase names (`*cudnn*`, case-insensitive) or `kind:KIND`
    (`kind:comm`, `kind:copy`), and how many times faster."""

    pattern: Annotated[str, Meta(min_length=1, max_length=1000)]
    k: Annotated[float, Meta(ge=1, le=MAX_K)]

    def target(self) -> Target:
        return Target(pattern=self.pattern, k=self.k)


class WhatIfRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A what-if on a stored profile: the targets, each with its own k, and the steps to replay (by ProfilerStep#N
    number, `2:5` or `all`; by default the steps the profile was read over)."""

    targets: Annotated[list[WhatIfTarget], Meta(min_length=1, max_length=MAX_TARGETS)]
    steps: Annotated[str, Meta(max_length=STEPS_MAX_LENGTH, pattern=STEPS_PATTERN)] | None = None
