"""What the CLI shows while it works: a progress bar for reading large files, a ticking line while parsing."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO, TypeVar

from worthit.rules.names import printable

__all__ = ["CHUNK", "SHOW_FROM_BYTES", "Progress", "read_with_progress", "ticking", "timed"]

T = TypeVar("T")
CHUNK = 8 * 1024 * 1024
# Below this, reading and parsing take well under a second: no bar.
SHOW_FROM_BYTES = 24 * 1024 * 1024


def _bar(done: int, total: int, width: int = 30) -> str:
    filled = width * done // total if total else width
    return "[" + "#" * filled + "." * (width - filled) + f"] {done / 1e6:6.0f}/{total / 1e6:.0f} MB"


def read_with_progress(path: Path, stream: TextIO | None = None) -> bytes:
    """The file's bytes; a progress bar on `stream` (stderr) when the file is large and stream is a terminal."""
    stream = stream or sys.stderr
    size = path.stat().st_size
    if size < SHOW_FROM_BYTES or not stream.isatty():
        return path.read_bytes()
    chunks = bytearray()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            chunks += chunk
            stream.write(f"\rreading {printable(path.name)} {_bar(len(chunks), size)}")
            stream.flush()
    stream.write("\n")
    return bytes(chunks)


@contextmanager
def ticking(label: str, show: bool, stream: TextIO | None = None) -> Iterator[None]:
    """A line that counts seconds while the block runs (parsing has no natural progress to report)."""
    stream = stream or sys.stderr
    if not show or not stream.isatty():
        yield
        return
    stop = threading.Event()
    started = time.monotonic()

    def tick() -> None:
        while not stop.wait(0.2):
            stream.write(f"\r{label} {time.monotonic() - started:5.1f} s")
            stream.flush()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        stream.write(f"\r{label} {time.monotonic() - started:5.1f} s, done\n")


def timed(label: str, size: int, work: Callable[[], T]) -> T:
    with ticking(label, size >= SHOW_FROM_BYTES):
        return work()


class Progress:
    """Long work measured as it goes (bytes read, ranks done): a bar with the rate and the time left, on a terminal.

    Silent when `show` is False (``--json``) or `stream` is not a terminal; redrawn at most five times a second.
    """

    def __init__(self, label: str, total: int, unit: str, show: bool = True, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.label, self.total, self.unit = printable(label), total, unit  # labels name files: `reading NAME`
        self.show = show and self.stream.isatty()
        self.done = 0
        self.started = time.monotonic()
        self._drawn = 0.0

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.show and (now - self._drawn >= 0.2 or self.done >= self.total):
            self._drawn = now
            self.stream.write("\r" + self.line(now))
            self.stream.flush()

    def line(self, now: float) -> str:
        """``label [####....] done/total unit, rate unit/s, time left``."""
        elapsed = max(now - self.started, 1e-9)
        scale, shown = (1e6, "MB") if self.unit == "bytes" else (1, self.unit)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        width = 30
        filled = width * min(self.done, self.total) // self.total if self.total else width
        eta = f"{left:4.0f} s left" if left != float("inf") else "  ? s left"
        return (
            f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done / scale:,.0f}/{self.total / scale:,.0f} "
            f"{shown}, {rate / scale:,.1f} {shown}/s, {eta}"
        )

    def close(self) -> None:
        if self.show:
            self.stream.write(f"\r{self.line(time.monotonic())}, done in {time.monotonic() - self.started:.1f} s\n")
            self.stream.flush()
