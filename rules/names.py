"""The names users choose, one pattern per kind, checked at every surface (HTTP paths, queries and bodies, TOML,
the command line, Slack, the gate): a name that one surface stores, every other surface can read, list and delete.

Python's `$` also matches before a final newline, so `^[a-z]+$` took `x\\n`: a policy stored that way broke every
later `GET /v1/policies`. Each pattern ends in `$(?!\\n)`, which means "the end" in Python and in the ECMAScript
dialect OpenAPI clients use alike.
"""

from __future__ import annotations

import re

__all__ = ["LABEL_PATTERN", "NAME_PATTERN", "NAME_RULE", "is_name"]

NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$(?!\n)"
"""What a user names to refer to it again (policies, tokens): it goes into URLs and command lines."""
NAME_RULE = "lowercase letters, digits, `_`, `.` and `-`, at most 64, starting with a letter or a digit"
LABEL_PATTERN = r"^[^\x00-\x1f\x7f]*$(?!\n)"
"""What a profiler or a person calls the thing measured (targets): one line of text without control characters
(a kernel's name is a C++ signature, spaces, brackets and all)."""

_NAME = re.compile(NAME_PATTERN)


def is_name(text: str) -> bool:
    """Whether `text` is a valid name of a policy or a token."""
    return _NAME.search(text) is not None
