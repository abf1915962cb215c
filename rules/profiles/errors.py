"""Errors of the profile readers. They know nothing of HTTP; service/http/problems.py maps them to 4xx."""

from __future__ import annotations

from collections.abc import Sequence

from worthit.rules.errors import WorthitError


class ProfileError(WorthitError, ValueError):
    """A profiler file that cannot be read: unknown, empty, binary, truncated or inconsistent.

    `format_expected` names the format the reader was reading (None when no format could be recognised),
    `line` is the 1-based line of the first offending input (None when the problem is not tied to a line),
    `detail` says what was expected and what was got. ``str(err)`` joins the three into one sentence.
    """

    def __init__(self, detail: str, *, format_expected: str | None = None, line: int | None = None) -> None:
        self.detail = detail
        self.format_expected = format_expected
        self.line = line
        where = f" at line {line}" if line is not None else ""
        what = f"Not a readable {format_expected} file" if format_expected else "Not a recognised profile"
        super().__init__(f"{what}{where}: {detail}")


class ProfileTooLarge(ProfileError):
    """A profile bigger than the reader may build (its gzip stream inflates beyond `limit` bytes): a 413."""

    def __init__(self, detail: str, *, limit: int, format_expected: str | None = None) -> None:
        self.limit = limit
        super().__init__(detail, format_expected=format_expected)


class PhaseNotFoundError(WorthitError, ValueError):
    """A target name or pattern that matches no phase, or more than one.

    `candidates` lists up to ten phase names the caller could have meant (the matches when ambiguous,
    the largest phases otherwise), so an error message can offer them.
    """

    def __init__(
        self,
        pattern: str,
        candidates: Sequence[str],
        *,
        ambiguous: bool,
        folded: Sequence[str] = (),
        why: str | None = None,
    ) -> None:
        self.pattern = pattern
        self.candidates = list(candidates)
        self.ambiguous = ambiguous
        listed = "; ".join(self.candidates) if self.candidates else "(the profile has no phases)"
        if why is not None:  # the pattern was not tried (`why` says why)
            detail = f"Expected `{pattern}` to name a phase: {why}; candidates: {listed}"
        elif ambiguous:
            detail = f"Expected `{pattern}` to match exactly one phase, it matches several: {listed}"
        else:
            detail = f"Expected `{pattern}` to name a phase, none matches; candidates: {listed}"
            if folded:
                detail += f" (the profile keeps its largest phases by name; smaller ones are in {folded[0]})"
        self.detail = detail
        super().__init__(detail)


__all__ = ["PhaseNotFoundError", "ProfileError", "ProfileTooLarge"]
