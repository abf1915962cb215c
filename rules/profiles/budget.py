"""What a reader may hold while it reads: events and distinct names, counted against one budget per parse.

A reader's memory grows with what it keeps, not with the bytes it was given (ten bytes of ``{"ph":"i"}`` become a
hundred-byte struct; a 19-byte CSV row can name a kernel of its own), so the limits are counts of those things:
events (rows of a CSV, JSON objects of a trace) and distinct phase names. One `Budget` covers every file of one
parse (a multipart upload shares it). Readers report through `held_events` and `held_names`; outside `counting`
nothing is counted (the engine's own callers, tests), so the figures of every reader are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from worthit.rules.profiles.errors import ProfileTooLarge

__all__ = ["MAX_EVENTS", "MAX_NAMES", "Budget", "counting", "held_events", "held_names", "json_objects"]

#: Defaults the service overrides from its settings (WORTHIT_MAX_PROFILE_EVENTS, WORTHIT_MAX_PROFILE_NAMES).
MAX_EVENTS = 2_000_000
MAX_NAMES = 100_000


@dataclass(slots=True)
class Budget:
    """The counts one parse may reach, and what it has reached so far."""

    max_events: int = MAX_EVENTS
    max_names: int = MAX_NAMES
    events: int = 0
    names: int = 0

    def add_events(self, count: int, fmt: str | None) -> None:
        self.events += count
        if self.events > self.max_events:
            raise ProfileTooLarge(
                f"it holds more than the limit of {self.max_events:,} events (rows of a CSV, JSON objects of a trace) "
                "(WORTHIT_MAX_PROFILE_EVENTS); expected a profile of at most that many, or a shorter recording",
                limit=self.max_events,
                format_expected=fmt,
            )

    def add_names(self, count: int, fmt: str | None) -> None:
        self.names += count
        if self.names > self.max_names:
            raise ProfileTooLarge(
                f"it names more than the limit of {self.max_names:,} distinct phases (kernels, operators, API calls) "
                "(WORTHIT_MAX_PROFILE_NAMES); expected a profile of at most that many names",
                limit=self.max_names,
                format_expected=fmt,
            )


_current: ContextVar[Budget | None] = ContextVar("worthit_profile_budget", default=None)


@contextmanager
def counting(budget: Budget) -> Iterator[Budget]:
    """Count what the readers hold against `budget` within the block (ProfileTooLarge beyond it)."""
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)


def held_events(count: int, fmt: str | None = None) -> None:
    """A reader holds `count` more events (ProfileTooLarge beyond the budget; nothing outside `counting`)."""
    budget = _current.get()
    if budget is not None:
        budget.add_events(count, fmt)


def held_names(count: int, fmt: str | None = None) -> None:
    """A reader holds `count` more distinct names (ProfileTooLarge beyond the budget; nothing outside `counting`)."""
    budget = _current.get()
    if budget is not None:
        budget.add_names(count, fmt)


def json_objects(data: bytes, fmt: str | None = None) -> None:
    """Count a JSON trace's objects before it is decoded: every event is at least one `{` (a brace cannot be
    escaped), so this bounds what the decoder would build, in one pass at memchr speed, before it builds it."""
    if _current.get() is not None:
        held_events(data.count(b"{"), fmt)
