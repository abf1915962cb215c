"""Profiles read at real size on the command line: a large PyTorch trace streamed (never held), the ranks of a run
mapped to summaries over processes (`--jobs N`) and combined, summaries written for another machine to combine.

Each rank's summary is independent of the others, so mapping is a process pool over the files (each worker
streams its trace, keeps only the summary, and sends that back as JSON); the combination reads the summaries
alone (`rules.profiles.kineto.summary`). Progress (bytes or ranks done, rate, time left) shows on a terminal.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack
from functools import partial
from pathlib import Path

from worthit.rules.profiles import Breakdown, ProfileError
from worthit.rules.profiles.detect import detect
from worthit.rules.profiles.kineto import (
    FORMAT,
    SUMMARY_FORMAT,
    Builder,
    RankSummary,
    WhatIf,
    chunks_of,
    combine_summaries,
    combine_summary_what_ifs,
    decode_summary,
    encode_summary,
    parse_steps,
    parse_stream,
    parse_target,
    rank_what_if,
    read_schedule_stream,
    reduce_batch,
    summarize,
    window,
    window_breakdown,
)
from worthit.service.present.terminal import SHOW_FROM_BYTES, Progress

_SNIFF_BYTES = 1 << 16


def format_of(path: Path) -> str:
    """The detected format of a file, from its first bytes (`detect` inflates a gzip prefix itself)."""
    with path.open("rb") as handle:
        return detect(handle.read(_SNIFF_BYTES))


def summary_of(path: str, steps: str | None = None, show: bool = False, what_if: Sequence[str] = ()) -> RankSummary:
    """One rank's summary from its trace, streamed (a progress bar for a large file on a terminal); with `what_if`
    targets (``PATTERN=K``), the trace is streamed a second time into its schedule and replayed alone with them
    faster, so that the combine can join the ranks (`rank_what_if`)."""
    file = Path(path)
    size = file.stat().st_size
    chosen = parse_steps(steps) if steps is not None else None
    targets = [parse_target(text) for text in what_if]
    progress = Progress(f"reading {file.name}", size, "bytes", show and size >= SHOW_FROM_BYTES)
    with file.open("rb") as handle:
        parsed = parse_stream(chunks_of(handle), file.name, progress=progress.advance)
    progress.close()
    replayed = None
    if targets:
        with file.open("rb") as handle:
            schedule = read_schedule_stream(chunks_of(handle), file.name)
        replayed = rank_what_if(schedule, targets, chosen)
        del schedule
    return summarize(parsed, file.name, chosen, replayed)


def _map_one(task: tuple[str, str | None, tuple[str, ...]]) -> tuple[bytes | None, str | None]:
    """In a worker: the summary as JSON, or the error's sentence (sent back as text: it names the file)."""
    path, steps, what_if = task
    try:
        return encode_summary(summary_of(path, steps, what_if=what_if)), None
    except (ProfileError, OSError) as exc:
        return None, str(exc) if isinstance(exc, ProfileError) else f"cannot read {path}: {exc.strerror}"


def map_summaries(
    paths: Sequence[str], steps: str | None, jobs: int, show: bool = True, what_if: Sequence[str] = ()
) -> list[RankSummary]:
    """Each trace's summary (with the `what_if` targets replayed on it), `jobs` traces at a time in as many
    processes (one: in this process)."""
    progress = Progress("ranks", len(paths), "ranks", show and len(paths) > 1)
    out: list[RankSummary] = []
    tasks = [(path, steps, tuple(what_if)) for path in paths]
    if jobs <= 1 or len(paths) == 1:
        for path in paths:
            out.append(summary_of(path, steps, show and len(paths) == 1, what_if))
            progress.advance()
    else:
        with multiprocessing.get_context("spawn").Pool(min(jobs, len(paths))) as pool:
            for path, (data, error) in zip(paths, pool.imap(_map_one, tasks, chunksize=1), strict=True):
                if error is not None or data is None:
                    raise ProfileError(error or f"no summary of {path}")
                out.append(decode_summary(data, Path(path).name))
                progress.advance()
    progress.close()
    return out


def read_summaries(paths: Sequence[str]) -> list[RankSummary]:
    return [decode_summary(Path(path).read_bytes(), Path(path).name) for path in paths]


def summaries_what_if(paths: Sequence[str], format: str | None) -> WhatIf | None:
    """The run's what-if joined from rank summaries made with ``--what-if`` (None: the files are not summaries, or
    none carries a what-if)."""
    if format not in (None, SUMMARY_FORMAT):
        return None
    if any(format_of(Path(path)) != SUMMARY_FORMAT for path in paths):
        return None
    return combine_summary_what_ifs(read_summaries(paths))


def load_run(
    paths: Sequence[str], format: str | None, steps: str | None, *, jobs: int = 1, show: bool = True
) -> Breakdown | None:
    """The breakdown of PyTorch traces (streamed; several are mapped to summaries, `jobs` at a time, and combined)
    or of rank summaries; None when the files are of another format (the caller reads them as bytes)."""
    if format is not None and format not in (FORMAT, SUMMARY_FORMAT):
        return None
    formats = {format or format_of(Path(path)) for path in paths}
    if formats == {SUMMARY_FORMAT}:
        return combine_summaries(read_summaries(paths), parse_steps(steps) if steps is not None else None)
    if formats != {FORMAT}:
        return None
    if len(paths) == 1:
        file = Path(paths[0])
        size = file.stat().st_size
        progress = Progress(f"reading {file.name}", size, "bytes", show and size >= SHOW_FROM_BYTES)
        chosen = parse_steps(steps) if steps is not None else None
        with file.open("rb") as handle, ExitStack() as stack:
            submit = None
            if jobs > 1:  # batches of the one trace decoded and reduced in `jobs` processes, merged here in order
                pool = stack.enter_context(ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")))
                submit = partial(_reduce_in, pool)
            parsed = parse_stream(
                chunks_of(handle), file.name, progress=progress.advance, submit=submit, depth=2 * jobs
            )
        progress.close()
        return window_breakdown(parsed, window(parsed, chosen, file.name))
    return combine_summaries(map_summaries(paths, steps, jobs, show))


def _reduce_in(pool: ProcessPoolExecutor, events: bytes) -> Future[Builder | None]:
    return pool.submit(reduce_batch, events)


def write_summaries(
    paths: Sequence[str],
    output: str | None,
    steps: str | None,
    *,
    jobs: int = 1,
    show: bool = True,
    what_if: Sequence[str] = (),
) -> list[Path]:
    """Each trace's summary written: to `output` (a file) for one trace, into `output` (a folder) for several, as
    ``NAME.summary.json`` (NAME the trace's name less ``.json``/``.json.gz``/``.pt.trace.json``); with the
    `what_if` targets (``PATTERN=K``) each rank is replayed alone with them faster."""
    if output is None:
        raise ProfileError("expected -o/--output: the summary's file (one trace) or folder (several)")
    out = Path(output)
    if len(paths) > 1 or out.is_dir():
        out.mkdir(parents=True, exist_ok=True)
        targets = [out / f"{_stem(Path(p).name)}.summary.json" for p in paths]
    else:
        targets = [out]
    if len(set(targets)) != len(targets):
        raise ProfileError("two traces have the same name: their summaries would overwrite each other")
    for target, summary in zip(targets, map_summaries(paths, steps, jobs, show, what_if), strict=True):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(encode_summary(summary))
    return targets


def _stem(name: str) -> str:
    for suffix in (".gz", ".json", ".pt.trace"):
        name = name.removesuffix(suffix)
    return name


def upload_summaries(paths: Sequence[str], url: str, token: str | None, name: str | None = None) -> str:
    """POST the summaries (checked here first: format and version) to ``URL/v1/profiles/summaries``; the stored
    profile's address (its `Location`). ProfileError with the server's answer when it refuses them."""
    import httpx
    import msgspec

    summaries = read_summaries(paths)
    endpoint = url.rstrip("/") + "/v1/profiles/summaries"
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    response = httpx.post(
        endpoint,
        content=msgspec.json.encode(summaries),
        headers=headers,
        params={"name": name} if name else None,
        timeout=120,
    )
    if response.status_code != 201:
        raise ProfileError(f"{endpoint} refused the summaries ({response.status_code}: {response.text[:300]})")
    location: str = response.headers.get("location", "")
    return url.rstrip("/") + location


__all__ = [
    "format_of",
    "load_run",
    "map_summaries",
    "read_summaries",
    "summaries_what_if",
    "summary_of",
    "upload_summaries",
    "write_summaries",
]
