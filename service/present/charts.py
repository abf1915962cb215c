"""Charts as plain SVG text: no JavaScript, no dependencies, the same drawing for the page and the CLI.

Two drawings share one renderer of horizontal stacked bars (horizontal, so labels fit a phone's width):
- `decision_chart`: the scope's time before and after the proposed speedup, one segment per phase, the target
  highlighted and the ceiling (the time with the target at zero) marked across both bars;
- `history_chart`: a workload's successive breakdowns, one bar per decision, its bottleneck outlined.

Every name drawn comes from a user (titles, targets, phase names are untrusted): all text and attribute values go
through `_esc`, so a name such as `<script>` is drawn as text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from worthit.rules.model import AmdahlFigures, Phase, Proposal, Range
from worthit.rules.text import label, ms, pct, times

__all__ = [
    "BAR_HEIGHT",
    "BAR_WIDTH",
    "LEFT",
    "LEGEND_ROW",
    "OUTLINE",
    "PALETTE",
    "REST",
    "ROW",
    "TARGET_FILL",
    "TOP",
    "UNLISTED",
    "WIDTH",
    "Bar",
    "HistoryStep",
    "Marker",
    "Segment",
    "decision_bars",
    "decision_chart",
    "history_chart",
    "stacked_bars",
]

WIDTH = 480
LEFT = 60
"""Where bars start: the column to their left holds each bar's label."""
BAR_WIDTH = 300
"""Width of the longest bar; the rest of the row, on the right, holds its caption (about 17 characters).
Small on purpose: the drawing is scaled to a phone's width, and its text with it."""
BAR_HEIGHT = 34
ROW = 56
TOP = 40
LEGEND_ROW = 20

TARGET_FILL = "#d9480f"
OUTLINE = "#212529"
PALETTE = ("#4c6ef5", "#74b816", "#7048e8", "#1098ad", "#f59f00", "#e64980", "#495057", "#37b24d", "#3bc9db")

REST = "rest of the step"
UNLISTED = "unlisted"


@dataclass(frozen=True, slots=True)
class Segment:
    """One phase's time in one bar."""

    phase: str
    value: float
    highlight: bool = False


@dataclass(frozen=True, slots=True)
class Bar:
    """One stacked bar: a state (before/after) or one step of a workload's history."""

    label: str
    segments: tuple[Segment, ...]
    caption: str = ""
    """Short text to the right of the bar; its total when empty."""

    @property
    def total(self) -> float:
        return sum(segment.value for segment in self.segments)


@dataclass(frozen=True, slots=True)
class Marker:
    """A vertical dashed line across every bar at `value`, labelled (the ceiling)."""

    value: float
    label: str
    css_class: str = "ceiling"


def _esc(text: str) -> str:
    return escape(text, quote=True)


def _num(value: float) -> str:
    """A coordinate with at most 2 decimals and no trailing zeros: compact, and stable for tests."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _amount(value: float, unit: str) -> str:
    return ms(value) if unit == "ms" else pct(value)


def _ratio(before: float, after: float) -> float:
    return math.inf if after <= 0 else before / after


def stacked_bars(
    bars: Sequence[Bar],
    *,
    unit: str,
    title: str,
    markers: Sequence[Marker] = (),
    highlight_class: str = "target",
    outline: bool = False,
) -> str:
    """Horizontal stacked bars on one scale (the longest bar spans `BAR_WIDTH`), markers, and a legend.

    `unit` is `ms` (values are milliseconds) or `share` (values are shares of the scope, 0..1). Each segment is a
    `rect` with class `segment` (plus `highlight_class` when highlighted) and `data-phase`, `data-bar` and
    `data-value` attributes, so tests and stylesheets can find it. A highlighted segment is filled with the
    highlight colour, or with `outline` keeps its phase's colour and gets a heavy outline (a history's bottleneck
    moves between phases, and the colour must still say which phase it is).
    """
    longest = max((bar.total for bar in bars), default=0.0)
    scale = BAR_WIDTH / longest if longest > 0 else 0.0
    colours = _colours(bars)
    legend = _legend(bars, colours, highlight_class, outline=outline)
    legend_y = TOP + ROW * len(bars) + 12
    height = legend_y + LEGEND_ROW * len(legend) + 4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {height}" '
        f'width="100%" role="img" aria-label="{_esc(title)}" font-family="sans-serif" font-size="13">',
        f"<title>{_esc(title)}</title>",
    ]
    for index, bar in enumerate(bars):
        y = TOP + ROW * index
        text_y = _num(y + BAR_HEIGHT / 2 + 4)
        parts.append(f'<g class="bar" data-bar="{_esc(bar.label)}">')
        parts.append(f'<text x="{LEFT - 8}" y="{text_y}" text-anchor="end">{_esc(bar.label)}</text>')
        x = float(LEFT)
        for segment in bar.segments:
            width = segment.value * scale
            classes = "segment" + (f" {highlight_class}" if segment.highlight else "")
            fill = TARGET_FILL if segment.highlight and not outline else colours[segment.phase]
            stroke = f'stroke="{OUTLINE}" stroke-width="3"' if segment.highlight and outline else 'stroke="#fff"'
            parts.append(
                f'<rect class="{classes}" data-phase="{_esc(segment.phase)}" data-bar="{_esc(bar.label)}" '
                f'data-value="{segment.value:.6g}" x="{_num(x)}" y="{y}" width="{_num(width)}" '
                f'height="{BAR_HEIGHT}" fill="{fill}" {stroke}>'
                f"<title>{_esc(segment.phase)}: {_esc(_amount(segment.value, unit))}</title></rect>"
            )
            x += width
        caption = bar.caption or _amount(bar.total, unit)
        parts.append(f'<text class="total" x="{_num(x + 6)}" y="{text_y}">{_esc(caption)}</text>')
        parts.append("</g>")
    for marker in markers:
        x = LEFT + marker.value * scale
        bottom = TOP + ROW * (len(bars) - 1) + BAR_HEIGHT + 6
        label_x = min(max(x, LEFT + 70), WIDTH - 70)  # keep the label inside the drawing
        parts.append(
            f'<g class="{_esc(marker.css_class)}" data-value="{marker.value:.6g}">'
            f'<line x1="{_num(x)}" y1="{TOP - 14}" x2="{_num(x)}" y2="{bottom}" stroke="{OUTLINE}" '
            f'stroke-width="2" stroke-dasharray="5 3"/>'
            f'<text x="{_num(label_x)}" y="{TOP - 18}" text-anchor="middle">{_esc(marker.label)}</text></g>'
        )
    for index, (name, colour) in enumerate(legend):
        lx, ly = LEFT, legend_y + LEGEND_ROW * index
        parts.append(
            f'<g class="legend"><rect x="{lx}" y="{ly}" width="12" height="12" fill="{colour}" stroke="{OUTLINE}" '
            f'stroke-width="{3 if colour == "#fff" else 0}"/><text x="{lx + 18}" y="{ly + 11}">{_esc(name)}</text></g>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _colours(bars: Sequence[Bar]) -> dict[str, str]:
    """One colour per phase name, in order of first appearance, the same in every bar."""
    colours: dict[str, str] = {}
    for bar in bars:
        for segment in bar.segments:
            if segment.phase not in colours:
                colours[segment.phase] = PALETTE[len(colours) % len(PALETTE)]
    return colours


def _legend(
    bars: Sequence[Bar], colours: dict[str, str], highlight_class: str, *, outline: bool
) -> list[tuple[str, str]]:
    """One entry per phase (a filled highlight shows its own colour), and one explaining an outline."""
    filled = set() if outline else {s.phase for bar in bars for s in bar.segments if s.highlight}
    entries = [(label(phase), TARGET_FILL if phase in filled else colour) for phase, colour in colours.items()]
    if outline:
        entries.append((f"outlined: the {highlight_class}", "#fff"))
    return entries


def decision_bars(proposal: Proposal, figures: AmdahlFigures) -> tuple[list[Bar], Marker | None, str]:
    """The before and after bars of a decision, its ceiling marker, and the unit (`ms` or `share`).

    With a breakdown that names the target: one segment per phase (plus `unlisted` when `baseline_ms` exceeds the
    breakdown's sum). Otherwise two: the target (p) and the rest (1 − p), in ms when the baseline is known.
    """
    k = _k(figures)
    target = proposal.target or "target"
    phases = proposal.breakdown or []
    if any(phase.name == proposal.target for phase in phases):
        unit = "ms"
        before = [Segment(phase.name, phase.ms, phase.name == proposal.target) for phase in phases]
        gap = _unlisted(proposal, phases)
        if gap > 0:
            before.append(Segment(UNLISTED, gap))
    elif figures.baseline_ms is not None:
        unit = "ms"
        target_ms = figures.p * figures.baseline_ms
        before = [Segment(target, target_ms, True), Segment(REST, figures.baseline_ms - target_ms)]
    else:
        unit = "share"
        before = [Segment(target, figures.p, True), Segment(REST, 1.0 - figures.p)]
    after = [Segment(s.phase, s.value / k if s.highlight else s.value, s.highlight) for s in before]
    total = sum(s.value for s in before)
    new_total = sum(s.value for s in after)
    floor = total - sum(s.value for s in before if s.highlight)
    acted = _acted(proposal, figures, unit, total)
    if acted is not None:
        # The decision's (p, k) is not the target's own (a barrier's next-slowest rank, a collective's wait, several
        # targets): its saving comes off the target, so the after bar is the decision's new time, and the ceiling its.
        saving, ceiling = acted
        after = [Segment(s.phase, max(s.value - saving, 0.0) if s.highlight else s.value, s.highlight) for s in before]
        new_total = sum(s.value for s in after)
        floor = total / ceiling if ceiling else 0.0
    bars = [
        Bar("before", tuple(before), caption=_amount(total, unit)),
        Bar("after", tuple(after), caption=f"{_amount(new_total, unit)} ({times(_ratio(total, new_total))})"),
    ]
    marker = Marker(floor, f"ceiling {_amount(floor, unit)} ({times(_ratio(total, floor))})") if total > 0 else None
    return bars, marker, unit


def _acted(proposal: Proposal, figures: AmdahlFigures, unit: str, total: float) -> tuple[float, float | None] | None:
    """The decision's saving (in the chart's unit) and ceiling when its figures are of the change as one (p, k) other
    than the target's own (`Context.acted`: their p is not the proposal's); None otherwise."""
    if not _of_the_change(proposal, figures):
        return None
    if unit == "ms" and figures.saving_ms is not None:
        if not math.isclose(total, figures.baseline_ms or total, rel_tol=1e-9):
            return None  # a breakdown of another scope than the figures': drawn as given
        return figures.saving_ms, figures.ceiling_speedup
    if unit == "share":
        return figures.saving_fraction, figures.ceiling_speedup
    return None


def _of_the_change(proposal: Proposal, figures: AmdahlFigures) -> bool:
    """Whether the figures are of the change as one (p, k) rather than the target's own: their p is not the
    proposal's (a barrier's cap, a collective's transfer, several targets)."""
    p = proposal.p
    point = (p.low + p.high) / 2 if isinstance(p, Range) else p
    return point is not None and not math.isclose(figures.p, point, rel_tol=1e-9)


def _unlisted(proposal: Proposal, phases: Sequence[Phase]) -> float:
    """Time of the measured scope the breakdown does not list (only when both divide the same scope)."""
    if proposal.baseline_ms is None or proposal.breakdown_scope != "measured":
        return 0.0
    gap = proposal.baseline_ms - sum(phase.ms for phase in phases)
    return gap if gap > proposal.baseline_ms * 1e-6 else 0.0


def _k(figures: AmdahlFigures) -> float:
    return math.inf if figures.k == "inf" else float(figures.k)


def decision_chart(proposal: Proposal, figures: AmdahlFigures) -> str:
    """The SVG of a decision: the breakdown before and after, the target highlighted, the ceiling marked."""
    bars, marker, unit = decision_bars(proposal, figures)
    name = label(proposal.target) if proposal.target else "the target"
    k = _k(figures)
    if _of_the_change(proposal, figures) and isinstance(proposal.k, float | int | str):
        k = math.inf if proposal.k == "inf" else float(proposal.k)  # the title says the target's own k
    change = "removing" if math.isinf(k) else f"making {name} {times(k)} faster"
    title = f"Time before and after {change}" + (f" {name}" if math.isinf(k) else "")
    return stacked_bars(bars, unit=unit, title=title, markers=[marker] if marker else [])


@dataclass(frozen=True, slots=True)
class HistoryStep:
    """One decision in a workload's history: its label, its breakdown as (phase, ms), and its largest phase."""

    label: str
    phases: tuple[tuple[str, float], ...]
    bottleneck: str


def history_chart(workload: str, steps: Sequence[HistoryStep]) -> str:
    """The SVG of a workload's successive breakdowns, one bar per step, the bottleneck of each outlined."""
    bars = [
        Bar(step.label, tuple(Segment(name, value, name == step.bottleneck) for name, value in step.phases))
        for step in steps
    ]
    title = f"Successive breakdowns of {label(workload)}"
    return stacked_bars(bars, unit="ms", title=title, highlight_class="bottleneck", outline=True)
