"""The names users choose, one pattern per kind, checked at every surface (HTTP paths, queries and bodies, TOML,
the command line, Slack, the gate): a name that one surface stores, every other surface can read, list and delete.

Python's `$` also matches before a final newline, so `^[a-z]+$` took `x\\n`: a policy stored that way broke every
later `GET /v1/policies`. Each pattern ends in `$(?!\\n)`, which means "the end" in Python and in the ECMAScript
dialect OpenAPI clients use alike.
"""

from __future__ import annotations

import re

__all__ = ["LABEL_PATTERN", "NAME_PATTERN", "NAME_RULE", "is_name", "printable"]

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


# C0 controls (ESC among them, which starts every terminal escape sequence), DEL and the C1 controls (U+009B is a
# CSI of its own to a terminal that reads 8-bit controls), each as Python writes it in a string literal.
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))} | {
    0x09: "\\t",
    0x0A: "\\n",
    0x0D: "\\r",
}
_CONTROLS_BUT_LINES = {code: text for code, text in _CONTROLS.items() if code != 0x0A}
# In JSON text the encoder has escaped C0 already; DEL and C1 are left raw by it, and `\u00XX` reads back the same.
_JSON_CONTROLS = {code: f"\\u{code:04x}" for code in (0x7F, *range(0x80, 0xA0))}


def printable(text: str, *, lines: bool = False, json: bool = False) -> str:
    """`text` as a terminal may show it: every control character escaped (`\\x1b`, `\\r`, `\\n`), so a name, a file
    name or a message taken from a file cannot set the title, clear the screen, move the cursor or start a line of
    its own. `lines` keeps the newlines of a text the program wrote line by line; `json` escapes what a JSON encoder
    leaves raw (DEL and C1) as `\\u00XX`, which decodes to the same document."""
    if json:
        return text.translate(_JSON_CONTROLS)
    return text.translate(_CONTROLS_BUT_LINES if lines else _CONTROLS)
