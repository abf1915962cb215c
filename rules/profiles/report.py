"""A terminal table of a breakdown: the finding to act on first, then device rows before host rows, each largest
first, with both denominators side by side."""

from __future__ import annotations

import textwrap
from collections.abc import Collection

from worthit.rules.names import printable
from worthit.rules.profiles.model import KINDS, Activity, Breakdown, Kind, Phase, StepFigures, largest_first
from worthit.rules.profiles.naming import short_name

__all__ = ["DEVICE_KINDS", "headline", "render_table"]

DEVICE_KINDS: tuple[Kind, ...] = ("kernel", "comm", "copy")
"""Kinds listed first: the device's own work. CPU ops, annotations and API calls (host time, nested) follow."""

_NUMERIC = (("kind", 6), ("total ms", 12), ("calls", 9), ("% device", 9), ("% wall", 9))
_MIN_NAME = 16


def render_table(
    b: Breakdown, width: int = 100, *, top: int | None = None, kinds: Collection[Kind] | None = None
) -> str:
    """The breakdown as a fixed-width text table no wider than `width` (long names are cut with "…").

    First the line to act on (`headline`), then the figures, then the phases: the device's (kernels,
    communication, copies) before the host's (CPU ops, annotations, API calls), each largest first, `top` rows of
    each at most (None: all; the rest counted in one line), only `kinds` when given. Columns: name, kind, total ms,
    calls, % of device, % of wall ("-" where the denominator is unknown). Device rows whose shares add past 100%
    overlap (concurrent streams, ranks), and the table says so. A summed/inclusive table is marked "inclusive — do
    not sum", and so is each inclusive phase of a combined breakdown, because adding those percentages double
    counts overlapping time. A kernel summary (nsys cuda_gpu_kern_sum, rocprofv3 kernel_stats) is marked for what
    is wrong with it instead: kernels do not nest, but its shares are of summed kernel time, not of the step (as
    `inclusive_percentages` says). Control characters from the files are escaped (`rules.names.printable`).
    """
    numeric_width = sum(w + 1 for _, w in _NUMERIC)
    name_width = max(_MIN_NAME, width - numeric_width)
    lines: list[str] = []
    first = headline(b)
    if first:
        lines.extend(textwrap.wrap(first, width, subsequent_indent="  ", break_on_hyphens=False))
    title = f"{b.format}" + (f" [{b.scope}]" if b.scope else "")
    lines.append(title)
    summary = _kernel_summary(b)
    lines.append(
        "wall "
        + _ms(b.wall_ns)
        + (" ms · summed kernel time " if summary else " ms · device busy ")
        + _ms(b.device_busy_ns)
        + " ms"
        + (f" · {b.steps} step{'s' if b.steps != 1 else ''}" if b.steps else "")
    )
    if not b.device_timeline:
        lines.append("no device timeline: the recording holds no device intervals (see the note below)")
    if b.activity is not None:
        lines.append(_activity_line("device", b.activity))
    if b.barrier is not None:
        bar = b.barrier
        world = f" of {bar.world_size}" if bar.world_size else ""
        lines.append(
            f"distributed: {bar.ranks} ranks{world} · straggler rank {bar.straggler} · wait inside collectives "
            f"{_ms(bar.wait_ns)} ms = {_pct(bar.wait_fraction)} of the ranks' step time over {bar.steps} step"
            + ("s" if bar.steps != 1 else "")
        )
    if b.ranks:
        lines.append("")
        lines.append(_row(("rank", "compute ms", "comm ms", "overlap ms", "copy ms", "idle ms", "wait ms", "file")))
        for r in b.ranks:
            a = r.activity
            cells = (
                (_ms(a.compute_ns), _ms(a.comm_ns), _ms(a.overlap_ns), _ms(a.copy_ns), _ms(a.idle_ns))
                if a
                else ("-",) * 5
            )
            mark = "*" if b.barrier is not None and r.rank == b.barrier.straggler else ""
            lines.append(_row((f"{r.rank}{mark}", *cells, _ms(r.wait_ns), r.file or "")))
    if b.step_figures:
        # Input and wait columns only where they hold something: a single-process run has no collective to wait in,
        # and only a host timeline shows the input pipeline.
        waits = any(step.wait_ns is not None for step in b.step_figures)
        inputs = any(step.activity.input_ns for step in b.step_figures)
        columns: tuple[str, ...] = ("step", "rank", "step ms", "compute ms", "comm ms", "idle ms")
        columns += ("input ms",) * inputs + ("wait ms",) * waits + ("kernels",)
        lines.append("")
        lines.append(_row(columns))
        for step in b.step_figures:
            lines.append(_step_row(step, inputs=inputs, waits=waits))
        lines.append(
            "idle = the step's time with no device work"
            + ("; input = the part of it waiting on the input pipeline" if inputs else "")
        )
        if b.barrier is not None:
            lines.append("* = the step's straggler: the rank whose compute sets the step")
    if summary:
        lines.append(
            "summed kernel time, not the step: shares leave out idle time, copies and host gaps, "
            "and concurrent streams count twice"
        )
    elif b.inclusive:
        lines.append("inclusive — do not sum: totals are summed durations and the percentages overlap")
    header = "name".ljust(name_width) + "".join(" " + label.rjust(w) for label, w in _NUMERIC)
    lines.append(header)
    lines.append("-" * min(width, len(header)))
    phases = [phase for phase in b.phases if kinds is None or phase.kind in kinds]
    device = [phase for phase in phases if _on_device(phase)]
    host = [phase for phase in phases if not _on_device(phase)]
    lines.extend(_rows(device, b, name_width, top))
    overlap = sum(phase.share_of_device or 0.0 for phase in device if not phase.inclusive)
    if not b.inclusive and overlap > 1.0005:
        said = (
            f"rows overlap: their % device adds to {overlap * 100:.0f}% (work on concurrent streams or ranks at once "
            "counts in each of its rows; the device busy time counts it once)"
        )
        lines.extend(textwrap.wrap(said, width, subsequent_indent="  ", break_on_hyphens=False))
    if host:
        if device:
            lines.append("host side: CPU ops, annotations and API calls (these nest inside each other; % of wall)")
        lines.extend(_rows(host, b, name_width, top))
    if not phases and kinds is not None:
        present = ", ".join(kind for kind in KINDS if any(phase.kind == kind for phase in b.phases))
        lines.append(f"no phase of kind {', '.join(sorted(kinds))}; this profile has {present or 'none'}")
    if any(p.inclusive for p in b.phases) and not b.inclusive:
        lines.append("(inc) = inclusive summed total — do not sum with the other rows")
    lines.extend(f"note: {n}" for n in b.notes)
    # Names, files, steps, notes and even the format come from the files (a rank summary is JSON anyone can write):
    # each line is escaped whole, so none of them reaches the terminal as a control sequence or a line of its own.
    return "\n".join(map(printable, lines)) + "\n"


def headline(b: Breakdown) -> str | None:
    """The one finding to look at first, the largest of: time waiting on the input pipeline, other device idle time,
    waiting in collectives for a straggler, and the largest device phase; None when the profile has no phase."""
    found: list[tuple[int, str]] = []
    a = b.activity
    steps_ns = sum(step.wall_ns for step in b.step_figures)
    if a is not None:
        of = f"of the steps' {_ms_short(steps_ns)} ms" if steps_ns else f"of the device span {_ms_short(a.span_ns)} ms"
        whole = steps_ns or a.span_ns
        if a.input_ns:
            found.append(
                (a.input_ns, f"waiting on the input pipeline {_ms_short(a.input_ns)} ms {of}" + _of(a.input_ns, whole))
            )
        other_idle = a.idle_ns - a.input_ns
        if other_idle > 0:
            found.append(
                (
                    other_idle,
                    f"the device idle for {_ms_short(other_idle)} ms of its {_ms_short(a.span_ns)} ms span"
                    + _of(other_idle, a.span_ns)
                    + (" besides the input pipeline" if a.input_ns else "")
                    + ", waiting on the host, launches or synchronisation",
                )
            )
    if b.barrier is not None and b.barrier.wait_ns:
        bar = b.barrier
        found.append(
            (
                bar.wait_ns,
                f"waiting in collectives for the straggler, rank {bar.straggler}: {_ms_short(bar.wait_ns)} ms "
                f"({_pct(bar.wait_fraction)} of the ranks' step time)",
            )
        )
    device = largest_first([phase for phase in b.phases if _on_device(phase)]) or largest_first(b.phases)
    if device:
        top = device[0]
        share = top.share_of_device if top.share_of_device is not None else top.share_of_wall
        of_what = "of device time" if top.share_of_device is not None else "of wall time"
        found.append(
            (
                top.total_ns,
                f"the largest {'phase' if top.kind not in DEVICE_KINDS else top.kind}, "
                f"{short_name(top.name, 60)}: {_ms_short(top.total_ns)} ms"
                + (f" ({_pct(share)} {of_what})" if share is not None else ""),
            )
        )
    if not found:
        return None
    return max(found, key=lambda item: item[0])[1] + ": look here first"


def _of(part: int, whole: int) -> str:
    return f" ({part / whole * 100:.1f}%)" if whole else ""


def _ms_short(ns: int) -> str:
    """Milliseconds to one decimal for a sentence (`306.7`), three below a tenth of a millisecond."""
    return f"{ns / 1e6:,.1f}" if ns >= 100_000 else f"{ns / 1e6:.3f}"


def _on_device(phase: Phase) -> bool:
    """A phase of the device's own work: a kernel or collective, or a copy timed on the device (a copy call's host
    time, from an API table, has no device share)."""
    return phase.kind in ("kernel", "comm") or (phase.kind == "copy" and phase.share_of_device is not None)


def _rows(phases: list[Phase], b: Breakdown, name_width: int, top: int | None) -> list[str]:
    """Rows of `phases`, largest first, `top` at most and one line for the rest."""
    ordered = largest_first(phases)
    shown = ordered if top is None else ordered[:top]
    lines = []
    for phase in shown:
        name = phase.name + (" (inc)" if phase.inclusive and not b.inclusive else "")
        cells = (
            phase.kind,
            _ms(phase.total_ns),
            str(phase.calls),
            _pct(phase.share_of_device),
            _pct(phase.share_of_wall),
        )
        lines.append(
            _cut(name, name_width) + "".join(" " + c.rjust(w) for c, (_, w) in zip(cells, _NUMERIC, strict=True))
        )
    rest = ordered[len(shown) :]
    if rest:
        lines.append(f"… {len(rest)} more (--top 0 shows them all)")
    return lines


def _kernel_summary(b: Breakdown) -> bool:
    """A summed table of kernels only, without timestamps: its shares are of summed kernel time."""
    return b.inclusive and b.wall_ns is None and bool(b.phases) and all(p.kind in ("kernel", "comm") for p in b.phases)


def _activity_line(label: str, a: Activity) -> str:
    return (
        f"{label}: compute {_ms(a.compute_ns)} ms · communication {_ms(a.comm_ns)} ms · overlap "
        f"{_ms(a.overlap_ns)} ms · copies {_ms(a.copy_ns)} ms · idle {_ms(a.idle_ns)} ms of span "
        f"{_ms(a.span_ns)} ms · {a.kernels} kernels"
        + (f" · waiting on the input pipeline {_ms(a.input_ns)} ms" if a.input_ns else "")
    )


def _row(cells: tuple[str, ...]) -> str:
    return " ".join(c.rjust(11) if i else c.ljust(18) for i, c in enumerate(cells)).rstrip()


def _step_row(step: StepFigures, *, inputs: bool, waits: bool) -> str:
    """One step: its idle time is of the step's own time (work launched in it may run on past its end), not of the
    device span alone, which leaves out the wait before the step's first kernel."""
    a = step.activity
    rank = "-" if step.rank is None else f"{step.rank}{'*' if step.straggler else ''}"
    cells: tuple[str, ...] = (
        step.name,
        rank,
        _ms(step.wall_ns),
        _ms(a.compute_ns),
        _ms(a.comm_ns),
        _ms(max(step.wall_ns - a.busy_ns, 0)),
    )
    cells += (_ms(a.input_ns),) * inputs
    cells += ("-" if step.wait_ns is None else _ms(step.wait_ns),) * waits
    return _row((*cells, str(a.kernels)))


def _ms(ns: int | None) -> str:
    if ns is None:
        return "-"
    return f"{ns / 1e6:,.3f}"


def _pct(value: float | None) -> str:
    if value is None:
        return "-"
    if 0 < value < 0.0001:
        return "<0.01%"
    return f"{value * 100:.2f}%"


def _cut(text: str, width: int) -> str:
    # Cut names carry a digest of the whole, so two kernels that differ only at the end stay apart.
    return short_name(text, width).ljust(width)
