"""The policy documents the API returns beside the policy itself (rules.policy.Policy)."""

from __future__ import annotations

import msgspec

__all__ = ["PolicySummary"]


class PolicySummary(msgspec.Struct, kw_only=True):
    name: str
    version: int
