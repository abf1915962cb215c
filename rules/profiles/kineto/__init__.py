"""PyTorch profiler (Kineto) Chrome trace JSON: ``{"traceEvents": [{"ph": "X", "ts": µs, "dur": µs, …}]}``.

One entry point for callers, as HolisticTraceAnalysis' thin ``TraceAnalysis`` over its parser and analyzers:
`parse` turns bytes into flat columns (`Parsed`) and knows nothing of what is measured, `stream` does the same in
one pass over chunks of a file too large to hold (`read_stream`); `steps` holds the one
step-range grammar (`parse_steps`) and the window of work a range selects; `breakdown` measures a window (phases,
device activity, input wait, per-step figures); `distributed` reads the ranks of one run together (`read_run`,
the straggler, `barrier_of`). Each analysis reads a `Parsed`, never the bytes.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from worthit.rules.profiles.kineto.breakdown import MAX_STEP_FIGURES, window_breakdown
from worthit.rules.profiles.kineto.distributed import barrier_of, check_same_run, read_run
from worthit.rules.profiles.kineto.parse import FORMAT, STEP_PREFIX, Builder, looks_like, parse_trace
from worthit.rules.profiles.kineto.schedule import Schedule, read_schedule, read_schedule_stream
from worthit.rules.profiles.kineto.steps import StepRange, Window, parse_steps, window
from worthit.rules.profiles.kineto.stored_schedule import MAX_STORED_OPS, decode_schedule, encode_schedule, storable
from worthit.rules.profiles.kineto.stream import Progress, chunks_of, parse_stream, reduce_batch
from worthit.rules.profiles.kineto.summary import (
    MAX_SUMMARY_PHASES,
    MAX_SUMMARY_RANKS,
    MAX_SUMMARY_STEPS,
    SUMMARY_FORMAT,
    RankSummary,
    combine_summaries,
    combine_summary_what_ifs,
    decode_summary,
    encode_summary,
    summarize,
)
from worthit.rules.profiles.kineto.whatif import (
    MAX_K,
    MAX_TARGETS,
    Prepared,
    Target,
    WhatIf,
    WhatIfError,
    check_target,
    parse_target,
    prepare,
    render_what_if,
    what_if,
)
from worthit.rules.profiles.kineto.whatif_ranks import RankWhatIf, combine_what_if, rank_what_if
from worthit.rules.profiles.model import Breakdown, share


def read(data: bytes, steps: StepRange | None = None) -> Breakdown:
    """Read a PyTorch profiler trace (plain or gzipped) into one breakdown of the selected steps.

    Without `steps`, the whole recording less the last step when it marks two or more (see `kineto.steps`).
    """
    parsed = parse_trace(data)
    return window_breakdown(parsed, window(parsed, steps, None))


def read_stream(
    chunks: Iterable[bytes], steps: StepRange | None = None, file: str | None = None, progress: Progress | None = None
) -> Breakdown:
    """`read` of a trace given as chunks of bytes (plain or gzip; `chunks_of(handle)` reads an open file), in one
    pass that never holds the document: the same breakdown for the same bytes, in memory bounded by the device
    events' columns rather than the file's size. `progress(n)` is told of each chunk's size as it is read."""
    parsed = parse_stream(chunks, file, progress=progress)
    return window_breakdown(parsed, window(parsed, steps, file))


def read_steps(data: bytes) -> list[Breakdown]:
    """One breakdown per ``ProfilerStep#N`` (all of them, the last included): the work launched in the step.

    `wall_ns` is the step's host duration and `scope` its name. Empty when the trace marks no steps.
    """
    parsed = parse_trace(data)
    out = []
    for step in parsed.steps:
        b = window_breakdown(parsed, Window(step.start, step.end, [step], step.name, None))
        b.wall_ns = step.end - step.start
        b.phases = [msgspec.structs.replace(p, share_of_wall=share(p.total_ns, b.wall_ns)) for p in b.phases]
        out.append(b)
    return out


__all__ = [
    "FORMAT",
    "MAX_K",
    "MAX_STEP_FIGURES",
    "MAX_STORED_OPS",
    "MAX_SUMMARY_PHASES",
    "MAX_SUMMARY_RANKS",
    "MAX_SUMMARY_STEPS",
    "MAX_TARGETS",
    "STEP_PREFIX",
    "SUMMARY_FORMAT",
    "Builder",
    "Prepared",
    "RankSummary",
    "RankWhatIf",
    "Schedule",
    "StepRange",
    "Target",
    "WhatIf",
    "WhatIfError",
    "barrier_of",
    "check_same_run",
    "check_target",
    "chunks_of",
    "combine_summaries",
    "combine_summary_what_ifs",
    "combine_what_if",
    "decode_schedule",
    "decode_summary",
    "encode_schedule",
    "encode_summary",
    "looks_like",
    "parse_steps",
    "parse_stream",
    "parse_target",
    "prepare",
    "rank_what_if",
    "read",
    "read_run",
    "read_schedule",
    "read_schedule_stream",
    "read_steps",
    "read_stream",
    "reduce_batch",
    "render_what_if",
    "storable",
    "summarize",
    "what_if",
    "window",
    "window_breakdown",
]
