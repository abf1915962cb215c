"""Per-rank summaries: what the combined run needs of one rank, small enough to travel (KB to a few MB).

A summary is made where the trace lives (``worthit profile --summary rank-7.json.gz -o rank-7.summary.json``, one
job per rank) and the run is combined from the summaries alone (``worthit profile run/*.summary.json``,
``POST /v1/profiles``): the same figures as reading the raw traces together, since both go through
`distributed.run_of` with the same per-rank part (`RankPart`).

The format is versioned: ``format`` is always ``"worthit-rank-summary"`` and ``version`` the layout's number
(`VERSION`). A summary of another version is refused with a sentence saying which versions are read, never
half-read. Version 1 holds the rank's identity (``distributedInfo`` rank and world size, the file it was read
from), its time span (to check that ranks are one run), the steps selected (``steps``: a range, or null for all
but the last), the rank's breakdown over them (phases, device activity by kind, notes) and every selected step's
figures (device work by kind, per-phase unions, host duration; collectives are kind ``comm``, so each step's
collective time is its ``activity.comm_ns``). Version 2 adds the optional ``what_if``: the rank replayed alone with
the targets of ``--what-if`` faster, each selected step's arrival at each collective before and after
(`whatif_ranks.RankWhatIf`, with its own layout number), which `combine_what_if` joins across the ranks; a version 1
summary reads as one without it.
"""

from __future__ import annotations

import re
from typing import Final, Literal

import msgspec

from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.distributed import RankPart, rank_part, run_of
from worthit.rules.profiles.kineto.parse import Parsed
from worthit.rules.profiles.kineto.steps import StepRange
from worthit.rules.profiles.kineto.whatif import WhatIf
from worthit.rules.profiles.kineto.whatif_ranks import RankOf, RankWhatIf, combine_what_if
from worthit.rules.profiles.model import Breakdown, StepFigures

SUMMARY_FORMAT: Final = "worthit-rank-summary"
VERSION = 2
#: Versions this reader reads.
READS = (1, 2)
#: At most this many summaries combined at once: ranks of one run.
MAX_SUMMARY_RANKS = 4096
#: At most this many step figures in one summary (a trace's selected steps).
MAX_SUMMARY_STEPS = 4096
#: At most this many phases in one summary's breakdown, and in each of its steps (a real rank has a few hundred).
MAX_SUMMARY_PHASES = 16_384
_SNIFF = re.compile(rb'"format"\s*:\s*"worthit-rank-summary"')


class RankSummary(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One rank of a distributed PyTorch run, summarised (format ``worthit-rank-summary``, version 2).

    `file`: the trace it was made from. `rank`, `world_size`: the trace's ``distributedInfo`` (null when it had
    none: the rank is then the summary's place among those combined). `start_ns`, `end_ns`: first start and last
    end of everything recorded. `steps`: the ``ProfilerStep#N`` range selected (``2:5``; null: all but the last,
    incomplete step). `note`: why steps were left out, when they were. `breakdown`: the rank's breakdown over the
    selected steps. `step_figures`: every selected step's figures (device activity by kind — compute, comm,
    overlap, copies, idle — per-phase unions and host duration). `what_if`: with ``--what-if``, the rank replayed
    alone with the targets faster and its arrivals at each collective (null without).
    """

    format: Literal["worthit-rank-summary"] = SUMMARY_FORMAT
    version: int = VERSION
    """The layout's version: 2 (1 has no `what_if`). Readers refuse a version they do not read (`READS`), saying
    which they read."""
    file: str
    rank: int | None
    world_size: int | None
    start_ns: int
    end_ns: int
    steps: str | None
    note: str | None
    breakdown: Breakdown
    step_figures: list[StepFigures]
    what_if: RankWhatIf | None = None


class _Header(msgspec.Struct):
    format: str = ""
    version: int | None = None


def looks_like_summary(data: bytes) -> bool:
    """True when the bytes start like a rank summary (its ``format`` near the start)."""
    return _SNIFF.search(data[:4096]) is not None


def summarize(
    parsed: Parsed, file: str, steps: StepRange | None = None, what_if: RankWhatIf | None = None
) -> RankSummary:
    """The summary of one rank's parsed trace over `steps` (None: all but the last step), with the rank's
    `what_if` (`whatif_ranks.rank_what_if`) when one was asked for."""
    part = rank_part(parsed, file, steps)
    return RankSummary(
        file=part.file,
        rank=part.rank,
        world_size=part.world_size,
        start_ns=part.start_ns,
        end_ns=part.end_ns,
        steps=None if steps is None else str(steps),
        note=part.note,
        breakdown=part.breakdown,
        step_figures=part.steps,
        what_if=what_if,
    )


def encode_summary(summary: RankSummary) -> bytes:
    return msgspec.json.encode(summary)


def decode_summary(data: bytes, name: str | None = None) -> RankSummary:
    """A summary from its JSON; ProfileError naming `name` for another format or version, or a damaged file."""
    where = f" {name}" if name else ""
    try:
        header = msgspec.json.decode(data, type=_Header)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ProfileError(
            f"the rank summary{where} is not valid JSON: {exc}", format_expected=SUMMARY_FORMAT
        ) from None
    except RecursionError:  # msgspec's depth limit; a summary is a few levels deep
        raise ProfileError(
            f"the rank summary{where} is JSON nested too deeply: expected a {SUMMARY_FORMAT} object a few levels deep",
            format_expected=SUMMARY_FORMAT,
        ) from None
    if header.format != SUMMARY_FORMAT:
        raise ProfileError(
            f"expected{where} to be a {SUMMARY_FORMAT}, got format {header.format!r}", format_expected=SUMMARY_FORMAT
        )
    check_version(header.version, name)
    try:
        return msgspec.json.decode(data, type=RankSummary)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ProfileError(
            f"the rank summary{where} (version {header.version}) is damaged: {exc}", format_expected=SUMMARY_FORMAT
        ) from None
    except RecursionError:
        raise ProfileError(
            f"the rank summary{where} is JSON nested too deeply: expected a {SUMMARY_FORMAT} object a few levels deep",
            format_expected=SUMMARY_FORMAT,
        ) from None


def check_version(version: int | None, name: str | None = None) -> None:
    """ProfileError unless this reader reads summaries of `version`."""
    if version not in READS:
        where = f" {name}" if name else ""
        raise ProfileError(
            f"the rank summary{where} is version {version}; this worthit reads version "
            f"{', '.join(map(str, READS))} only: make the summary again from its trace with this worthit "
            "(worthit profile --summary TRACE -o SUMMARY)",
            format_expected=SUMMARY_FORMAT,
        )


def combine_summaries(summaries: list[RankSummary], steps: StepRange | None = None) -> Breakdown:
    """The run read from its ranks' summaries: the figures reading their raw traces together gives.

    `steps`, when given, must be the range the summaries were made for (steps are chosen where the trace is)."""
    if not summaries:
        raise ProfileError("no rank summaries given", format_expected=SUMMARY_FORMAT)
    for s in summaries:
        check_version(s.version, s.file)
    if steps is not None and any(s.steps != str(steps) for s in summaries):
        made = ", ".join(sorted({"default" if s.steps is None else s.steps for s in summaries}))
        raise ProfileError(
            f"steps {steps} were asked for, but the summaries were made for steps {made}: steps are chosen when "
            "a summary is made (worthit profile --summary --steps)",
            format_expected=SUMMARY_FORMAT,
        )
    chosen = {s.steps for s in summaries}
    if len(chosen) > 1:
        listed = ", ".join(sorted("default" if c is None else c for c in chosen))
        raise ProfileError(
            f"the summaries select different steps ({listed}): expected summaries made with the same --steps",
            format_expected=SUMMARY_FORMAT,
        )
    if len(summaries) == 1:
        return summaries[0].breakdown
    return run_of([_part(s) for s in summaries])


def combine_summary_what_ifs(summaries: list[RankSummary]) -> WhatIf | None:
    """The run's what-if joined from its summaries' (`whatif_ranks.combine_what_if`); None when no summary carries
    one, ProfileError when only some do or they were made for different targets or steps."""
    if all(s.what_if is None for s in summaries):
        return None
    return combine_what_if(
        [RankOf(who=f"rank {s.rank}" if s.rank is not None else s.file, what_if=s.what_if) for s in summaries]
    )


def _part(s: RankSummary) -> RankPart:
    return RankPart(
        file=s.file,
        rank=s.rank,
        world_size=s.world_size,
        start_ns=s.start_ns,
        end_ns=s.end_ns,
        breakdown=s.breakdown,
        steps=s.step_figures,
        note=s.note,
    )


__all__ = [
    "MAX_SUMMARY_PHASES",
    "MAX_SUMMARY_RANKS",
    "MAX_SUMMARY_STEPS",
    "READS",
    "SUMMARY_FORMAT",
    "VERSION",
    "RankSummary",
    "check_version",
    "combine_summaries",
    "combine_summary_what_ifs",
    "decode_summary",
    "encode_summary",
    "looks_like_summary",
    "summarize",
]
