"""Parse uploaded files into one breakdown: every gzip layer inflated from one allowance, then the readers.

No database and no HTTP here: the parse worker (`worker.py`) imports this alone, so a child starts in a fraction of
a second.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from worthit.rules.errors import InvalidInput
from worthit.rules.profiles import Breakdown, ProfileError, combine, read_any
from worthit.rules.profiles.budget import MAX_EVENTS, MAX_NAMES, Budget, counting
from worthit.rules.profiles.compression import MAX_INFLATED_BYTES, Stopped, inflate
from worthit.rules.profiles.detect import detect
from worthit.rules.profiles.kineto import FORMAT as KINETO_FORMAT
from worthit.rules.profiles.kineto import (
    MAX_STORED_OPS,
    MAX_SUMMARY_PHASES,
    MAX_SUMMARY_RANKS,
    MAX_SUMMARY_STEPS,
    RankSummary,
    Schedule,
    combine_summaries,
    parse_steps,
    read_schedule,
    storable,
)
from worthit.service.validation import decode_json, validation_problem

__all__ = ["check_summary_limits", "combine_summary_array", "parse", "parse_with_schedules"]

_summaries = msgspec.json.Decoder(list[RankSummary])


def combine_summary_array(body: bytes) -> Breakdown:
    """The run of `POST /v1/profiles/summaries`: `body`, a JSON array of rank summaries, decoded once and strictly
    (as every JSON body of the API), held to the summaries' caps (`check_summary_limits`), then combined.

    InvalidInput naming the field when the array does not decode as summaries (the body is decoded again, untyped,
    only then, to show the value got); msgspec.DecodeError when it is not JSON."""
    try:
        summaries = _summaries.decode(body)
    except msgspec.ValidationError as exc:
        detail, pointer = validation_problem(str(exc), decode_json(body))
        raise InvalidInput(detail, pointer) from None
    check_summary_limits(summaries)
    return combine_summaries(summaries)


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
    return _parse(_inflated(files, format, max_inflated_bytes, stop), format, steps, names, stop)


def parse_with_schedules(
    files: Sequence[bytes],
    format: str | None = None,
    steps: str | None = None,
    names: Sequence[str] | None = None,
    *,
    max_inflated_bytes: int = MAX_INFLATED_BYTES,
    max_events: int = MAX_EVENTS,
    max_names: int = MAX_NAMES,
    max_ops: int = MAX_STORED_OPS,
) -> tuple[Breakdown, list[Schedule] | None, str | None]:
    """`parse`, and for PyTorch traces with a device timeline the schedule of each file (one per rank), which a
    what-if or a proposal naming the profile replays; the files are inflated once for both.

    The schedules are None, with a note saying why, where the trace cannot be replayed or a schedule holds more
    than `max_ops` device ops (at most `MAX_STORED_OPS`, what a stored one may); None without a note for other
    formats. The parse and the
    schedules each count what they hold against a budget of `max_events` and `max_names` of their own: the schedule
    reads the same objects again, and must not be refused for the parse's count."""
    plain = _inflated(files, format, max_inflated_bytes, None)
    with counting(Budget(max_events=max_events, max_names=max_names)):
        breakdown = _parse(plain, format, steps, names, None)
    if breakdown.format != KINETO_FORMAT or not breakdown.device_timeline:
        return breakdown, None, None
    if max_ops <= 0 or (format is None and any(detect(data) != KINETO_FORMAT for data in plain)):
        return breakdown, None, None  # rank summaries read as a run: their traces, and schedules, stayed with them
    schedules: list[Schedule] = []
    for i, data in enumerate(plain):
        label = names[i] if names is not None and i < len(names) else ""
        try:
            with counting(Budget(max_events=max_events, max_names=max_names)):
                schedule = read_schedule(data, label)
        except ProfileError as exc:
            return breakdown, None, f"A what-if cannot replay this profile: {exc.detail}"
        if not storable(schedule) or len(schedule.op_start) > max_ops:
            return (
                breakdown,
                None,
                f"A what-if cannot replay this profile from the store: {label or 'its trace'} has "
                f"{len(schedule.op_start):,} device ops, more than a stored schedule holds "
                f"({min(max_ops, MAX_STORED_OPS):,}); "
                "`worthit profile TRACE --what-if` replays the trace itself.",
            )
        schedules.append(schedule)
    return breakdown, schedules, None


def _parse(
    files: list[bytes],
    format: str | None,
    steps: str | None,
    names: Sequence[str] | None,
    stop: Callable[[], bool] | None,
) -> Breakdown:
    chosen = parse_steps(steps) if steps is not None else None
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


def check_summary_limits(summaries: list[RankSummary]) -> None:
    """InvalidInput naming the field and its cap when `summaries` (a JSON array of them) holds more ranks than
    `MAX_SUMMARY_RANKS`, a summary more steps than `MAX_SUMMARY_STEPS`, or a breakdown or a step more phases than
    `MAX_SUMMARY_PHASES`: what a summary made by `worthit profile --summary` holds, with room to spare."""
    if len(summaries) > MAX_SUMMARY_RANKS:
        raise InvalidInput(
            f"Expected at most {MAX_SUMMARY_RANKS:,} rank summaries (ranks of one run), got {len(summaries):,}", ""
        )
    for i, s in enumerate(summaries):
        if len(s.breakdown.phases) > MAX_SUMMARY_PHASES:
            raise InvalidInput(
                f"Expected `phases` of at most {MAX_SUMMARY_PHASES:,} phases per summary, got "
                f"{len(s.breakdown.phases):,} - at `$[{i}].breakdown.phases`",
                f"/{i}/breakdown/phases",
            )
        for path, steps in (("step_figures", s.step_figures), ("breakdown.step_figures", s.breakdown.step_figures)):
            pointer = f"/{i}/" + path.replace(".", "/")
            if len(steps) > MAX_SUMMARY_STEPS:
                raise InvalidInput(
                    f"Expected `step_figures` of at most {MAX_SUMMARY_STEPS:,} steps per summary, got "
                    f"{len(steps):,} - at `$[{i}].{path}`",
                    pointer,
                )
            for j, step in enumerate(steps):
                if len(step.phases) > MAX_SUMMARY_PHASES:
                    raise InvalidInput(
                        f"Expected `phases` of at most {MAX_SUMMARY_PHASES:,} phases per step, got "
                        f"{len(step.phases):,} - at `$[{i}].{path}[{j}].phases`",
                        f"{pointer}/{j}/phases",
                    )
