"""Domain errors. They know nothing of HTTP; service/http/problems.py maps each to a status in one table."""

from __future__ import annotations

__all__ = ["InvalidInput", "PolicyError", "WorthitError"]


class WorthitError(Exception):
    """Base of every error the engine raises on purpose."""


class InvalidInput(WorthitError, ValueError):
    """Input that decoded but cannot be evaluated, with a pointer to the offending field.

    `pointer` is a JSON pointer (RFC 6901) such as ``/p``; `detail` says what was expected and what was got.
    """

    def __init__(self, detail: str, pointer: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        self.pointer = pointer


class PolicyError(WorthitError, ValueError):
    """A policy file that is malformed, naming the key."""

    def __init__(self, detail: str, key: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        self.key = key
