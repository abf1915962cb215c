"""Shared plumbing of the text readers: byte checks, streaming CSV, header location, numbers.

Everything streams: the bytes are wrapped, never decoded or split into lines as a whole, so a 150 MB
trace does not get a second 150 MB copy as text.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from typing import Any

from worthit.rules.profiles.budget import held_events
from worthit.rules.profiles.errors import ProfileError

__all__ = [
    "MAX_PREAMBLE_LINES",
    "UTF8_BOM",
    "CsvRows",
    "check_bytes",
    "find_column",
    "head_text",
    "is_blank",
    "norm",
    "off_the_clock",
    "row_error",
    "text_stream",
    "to_count",
    "to_int",
]

#: How many lines of preamble (``nsys stats`` progress lines, banners, blank lines) may precede a header.
MAX_PREAMBLE_LINES = 64
#: Rows a reader reads between two reports to the parse's budget (`budget.held_events`).
_COUNT_BATCH = 4096
_SNIFF_BYTES = 65536


UTF8_BOM = b"\xef\xbb\xbf"
"""The byte-order mark Windows tools write before UTF-8 text (Notepad, PowerShell's Out-File): not part of the JSON."""


def check_bytes(data: bytes, fmt: str | None) -> None:
    """Refuse empty and binary input before any parsing, so the error says what is wrong."""
    # isspace() stops at the first other byte; strip() would copy a 150 MB file to answer the same question.
    if not data or data.isspace():
        raise ProfileError("the file is empty", format_expected=fmt, line=None)
    head = data[:_SNIFF_BYTES]
    if b"\x00" in head:
        raise ProfileError("the file is binary (it contains NUL bytes), expected text", format_expected=fmt)


def is_blank(data: bytes) -> bool:
    """True for empty or whitespace-only bytes, without copying them."""
    return not data or data.isspace()


def head_text(data: bytes, limit: int = _SNIFF_BYTES) -> str:
    """The first `limit` bytes as text, for sniffing; undecodable bytes become U+FFFD."""
    return data[:limit].decode("utf-8", errors="replace").lstrip("\ufeff")


def text_stream(data: bytes) -> io.TextIOWrapper:
    """A lazily decoding text view of `data` (utf-8, BOM skipped, newlines kept for the csv module)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")


def norm(column: str) -> str:
    """A column name reduced for matching: lower case, no spaces, quotes or BOM."""
    return column.strip().strip('"').replace(" ", "").replace("\ufeff", "").lower()


class CsvRows:
    """Rows of a CSV held in bytes, with the physical line number of the last row read.

    A decoding error mid-file (a binary tail, a cut multi-byte character) becomes a ProfileError at the
    line where it happened, not a UnicodeDecodeError.
    """

    def __init__(self, data: bytes, fmt: str) -> None:
        self.fmt = fmt
        self._reader = csv.reader(text_stream(data), strict=False)
        self.raw_header: list[str] = []
        self._uncounted = 0

    @property
    def line(self) -> int:
        """1-based physical line number of the row last returned."""
        return int(self._reader.line_num)

    def __iter__(self) -> Iterator[list[str]]:
        return self

    def __next__(self) -> list[str]:
        # Rows are counted against the parse's budget in batches: one call per row would cost the hot loop.
        self._uncounted += 1
        if self._uncounted == _COUNT_BATCH:
            held_events(self._uncounted, self.fmt)
            self._uncounted = 0
        try:
            return next(self._reader)
        except StopIteration:
            held_events(self._uncounted, self.fmt)  # the last, partial batch
            self._uncounted = 0
            raise
        except UnicodeDecodeError as exc:
            raise ProfileError(
                f"the file is not UTF-8 text ({exc.reason}); is it binary or cut short?",
                format_expected=self.fmt,
                line=self.line + 1,
            ) from None
        except csv.Error as exc:
            raise ProfileError(f"malformed CSV: {exc}", format_expected=self.fmt, line=self.line) from None

    def records(self, width: int) -> Iterator[list[str]]:
        """The data rows after the header: blank lines skipped, a row of any other width is an error at its line."""
        for row in self:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != width:
                raise row_error(self.fmt, self.line, row, width)
            yield row

    def header(self, accept: Callable[[list[str]], bool], expected: str) -> list[str]:
        """Skip preamble lines up to the first row `accept` takes; return it with names normalised.

        Raises ProfileError naming the expected columns and quoting the first non-blank line otherwise.
        """
        first: tuple[int, str] | None = None
        for row in self:
            if not any(cell.strip() for cell in row):
                continue
            if first is None:
                first = (self.line, ",".join(row)[:120])
            names = [norm(cell) for cell in row]
            if accept(names):
                self.raw_header = [cell.strip().lstrip("\ufeff") for cell in row]
                return names
            if self.line >= MAX_PREAMBLE_LINES:
                break
        line, text = first if first is not None else (1, "")
        raise ProfileError(f"expected a header with {expected}, got {text!r}", format_expected=self.fmt, line=line)


def find_column(names: list[str], *candidates: str) -> int | None:
    """Index of the first of `candidates` (normalised names) present in the header, else None."""
    for candidate in candidates:
        if candidate in names:
            return names.index(candidate)
    return None


def to_int(text: str, *, fmt: str, line: int, column: str) -> int:
    """An integer field; accepts ``1,234`` and ``1.5e3`` spellings, rejects anything else by name and line."""
    cleaned = text.strip().replace(",", "")
    try:
        return int(cleaned)
    except ValueError:
        pass
    try:
        value = float(cleaned)
    except ValueError:
        raise ProfileError(
            f"expected a number in column {column}, got {text!r}", format_expected=fmt, line=line
        ) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ProfileError(f"expected a finite number in column {column}, got {text!r}", format_expected=fmt, line=line)
    return round(value)


def to_count(text: str, *, fmt: str, line: int, column: str) -> int:
    """A total or a count (summed durations, calls): `to_int`, never negative and below 2^63 (a 1e308 ns total is
    a damaged file, and its shares would overflow a float)."""
    value = to_int(text, fmt=fmt, line=line, column=column)
    if value >= 2**63:
        raise ProfileError(
            f"expected a number below 2^63 in column {column}, got {text!r}", format_expected=fmt, line=line
        )
    if value < 0:
        raise ProfileError(
            f"expected a non-negative number in column {column}, got {text!r}", format_expected=fmt, line=line
        )
    return value


def off_the_clock(fmt: str, line: int, start: int, end: int) -> ProfileError:
    """The error for an interval whose timestamps do not fit the signed 64-bit nanosecond clock intervals are kept
    in (about 292 years either side of its zero): a damaged or mis-scaled file, never a real recording."""
    return ProfileError(
        f"timestamps {start} to {end} ns do not fit a 64-bit nanosecond clock (below 2^63)",
        format_expected=fmt,
        line=line,
    )


def row_error(fmt: str, line: int, row: list[str], width: int, exc: Any = None) -> ProfileError:
    """The error for a row that could not be parsed: too short (truncated) or a bad field."""
    if len(row) != width:
        return ProfileError(
            f"expected {width} columns, got {len(row)} (truncated or damaged row)", format_expected=fmt, line=line
        )
    return ProfileError(f"unreadable row: {exc}", format_expected=fmt, line=line)
