"""The gate's two failures: it cannot run (exit 2), or the author's block is malformed (exit 1), and its constants."""

from __future__ import annotations

from typing import Literal

from worthit.service.offline import CannotRun

__all__ = ["LANGUAGE", "MISSING_CHOICES", "TEMPLATE_HINT", "BlockError", "Level", "UsageError"]

LANGUAGE = "worthit"
MISSING_CHOICES = ("skip", "fail")
TEMPLATE_HINT = "see .github/pull_request_template.md"

Level = Literal["notice", "warning", "error"]


UsageError = CannotRun  # the gate cannot run: exit 2. Not the author's block, but the job's setup (or the server)


class BlockError(Exception):
    """A malformed worthit block: exit 1, naming the line of the PR description and the field."""

    def __init__(self, detail: str, line: int, field: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        self.line = line
        self.field = field

    def __str__(self) -> str:
        # Line 0 is before a whole file's first line: a field left out of a `worthit review` file has no line.
        where = [f"line {self.line}"] if self.line > 0 else []
        where += [f"field `{self.field}`"] if self.field else []
        return f"{', '.join(where)}: {self.detail}" if where else self.detail
