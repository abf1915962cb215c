"""Parse uploaded files into one breakdown: every gzip layer inflated from one allowance, then the readers.

No database and no HTTP here: the parse worker (`worker.py`) imports this alone, so a child starts in a fraction of
a second.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from worthit.rules.profiles import Breakdown, ProfileError, combine, read_any
from worthit.rules.profiles.compression import MAX_INFLATED_BYTES, Stopped, inflate
from worthit.rules.profiles.kineto import parse_steps

__all__ = ["parse"]


def parse(
    files: Sequence[bytes],
    format: str | None = None,
    steps: str | None = None,
    names: Sequence[str] | None = None,
    *,
    max_inflated_bytes: int = MAX_INFLATED_BYTES,
    stop: Callable[[], bool] | None = None,
) -> Breakdown:
    """One breakdown from one file, or from several files of one run combined (a trace, its copies, its stats; the
    PyTorch traces of a distributed run's ranks). `steps` ("2:5") chooses ProfilerStep#2..#5 of a PyTorch trace;
    `names` label the files in errors and per-rank figures.

    Gzip is inflated here, every layer of it, streamed, at most `max_inflated_bytes` over all files together
    (beyond it ProfileTooLarge, a 413), so the readers only ever see plain bytes; `stop()` is asked between chunks
    and before reading, and answering True ends the work with Stopped. Within `budget.counting`, every reader
    counts what it holds (the Kineto reader a trace's objects, before it decodes them).
    """
    chosen = parse_steps(steps) if steps is not None else None
    files = _inflated(files, format, max_inflated_bytes, stop)
    if stop is not None and stop():
        raise Stopped
    try:
        if len(files) == 1:
            return read_any(files[0], format, chosen)
        return combine(list(files), [format] * len(files) if format else None, names=names, steps=chosen)
    except (OverflowError, ZeroDivisionError) as exc:
        # Every reader turns numbers into times: a timestamp of 1e23 or 1e308 overflows that arithmetic, whichever
        # reader meets it. It is the file's figure, so the file's error (422), never a 500.
        raise ProfileError(
            f"expected timestamps and durations a profiler can write, got one too large to compute with ({exc})",
            format_expected=format,
        ) from exc


def _inflated(files: Sequence[bytes], format: str | None, limit: int, stop: Callable[[], bool] | None) -> list[bytes]:
    out: list[bytes] = []
    left = limit
    for data in files:
        # Every layer of every file from one allowance: a multipart upload shares it, and no reader inflates again.
        plain = inflate(data, format, left, stop)
        if plain is not data:
            left -= len(plain)
        out.append(plain)
    return out
