"""Errors the domain services raise; `service.http.problems` maps each to an RFC 9457 problem."""

from __future__ import annotations

from worthit.rules.errors import WorthitError

__all__ = ["Conflict", "Forbidden", "NotFound", "Unavailable", "Unreadable", "Unstorable"]


class Conflict(WorthitError):
    """The request conflicts with what is stored (e.g. an idempotency key reused with another body)."""


class Forbidden(WorthitError):
    """The caller may not do this to this resource (e.g. record the outcome of another token's decision)."""


class NotFound(WorthitError):
    """No such resource."""


class Unavailable(WorthitError):
    """A dependency (the database) does not answer; retry later."""


class Unstorable(WorthitError):
    """A value the boundary accepted that the database cannot hold: the client's input, not an outage."""


class Unreadable(WorthitError):
    """A stored document this version cannot read back as its type: the service's fault, never the reader's."""
