"""Charts as plain SVG text: no JavaScript, no dependencies, the same drawing for the page and the CLI.

Two drawings share one renderer of horizontal stacked bars (horizontal, so labels fit a phone's width):
- `decision_chart`: the scope's time before and after the proposed speedup, the target outlined and the ceiling (the
  time with the target at zero) marked across both bars;
- `history_chart`: a workload's successive breakdowns, one bar per decision, its bottleneck outlined.

A real profile's breakdown has some sixty phases, most of them hair-thin: drawn one by one, colours repeat, borders
paint the thin ones white and the legend runs to sixty lines. So `fold` keeps apart only what a reader can tell
apart: the target, the kinds of time every reader looks for (idle or host, input, communication, copies: each in a
colour of its own that nothing else takes), the largest others while the legend has room (LEGEND_MAX), and the
rest as one segment.

Every name drawn comes from a user (titles, targets, phase names are untrusted): all text and attribute values go
through `_esc`, so a name such as `<script>` is drawn as text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from html import escape

from worthit.rules.model import AmdahlFigures, Phase, Proposal, Range
from worthit.rules.profiles.fold import REST_PREFIX
from worthit.rules.text import label, ms, pct, times

__all__ = [
    "BAR_HEIGHT",
    "BAR_WIDTH",
    "CATEGORIES",
    "FONT",
    "LEFT",
    "LEGEND_MAX",
    "LEGEND_ROW",
    "MAX_WIDTH",
    "OUTLINE",
    "PALETTE",
    "REST",
    "REST_FILL",
    "ROW",
    "SIGNATURE_NAME",
    "TARGET_FILL",
    "THIN",
    "TOP",
    "UNLISTED",
    "UNLISTED_FILL",
    "WIDTH",
    "Bar",
    "HistoryStep",
    "Marker",
    "Segment",
    "decision_bars",
    "decision_chart",
    "fold",
    "history_chart",
    "short_name",
    "stacked_bars",
]

WIDTH = 360
"""The drawing's width in its own units. Small on purpose: on a phone (about 340 px of page) it is drawn near its own
size, so FONT stays about 13 px; the page caps its width on a wide screen (base.html's `.chart`)."""
FONT = 14
MAX_WIDTH = "30rem"
"""The widest the drawing is shown (about 19 px text at FONT): wider, its text would shout."""
LEFT = 8
"""Where bars start: each bar's label and caption stand on a line above it, so the bar has the full width."""
BAR_WIDTH = WIDTH - 2 * LEFT
"""Width of the longest bar."""
BAR_HEIGHT = 30
CAPTION = 20
"""The line above a bar that holds its label and caption."""
ROW = CAPTION + BAR_HEIGHT + 14
TOP = 8
LEGEND_ROW = 22
LEGEND_MAX = 10
"""Legend entries at most: the phases beyond it are drawn as one segment, "the rest"."""
THIN = 4.0
"""Segments narrower than this (in drawing units) get no white border: a border would paint them white."""
LEGEND_CHARS = 40
"""Characters of a legend line (name and amount) that fit WIDTH at FONT."""

TARGET_FILL = "#d9480f"
OUTLINE = "#212529"
REST_FILL = "#ced4da"
UNLISTED_FILL = "#fff"
CATEGORIES: dict[str, tuple[str, str, frozenset[str]]] = {
    "host": ("host or idle", "#495057", frozenset({"host", "cpu"})),
    "input": ("input pipeline", "#fab005", frozenset({"input", "io"})),
    "comm": ("communication", "#9c36b5", frozenset({"comm"})),
    "copy": ("copies", "#087f5b", frozenset({"copy", "alloc"})),
}
"""The kinds of time every reader looks for first, each in a colour of its own that no other phase takes:
(what the legend calls such time, its colour, the phase kinds that belong)."""
_SAYS_ITS_KIND = {"host": ("idle", "host"), "input": ("input",), "comm": (), "copy": ("copy", "memcpy")}
"""Words that, in a phase's name, already say its category (the legend then leaves out the category's name)."""
PALETTE = ("#4c6ef5", "#82c91e", "#e64980", "#22b8cf", "#5f3dc4")
"""The largest other phases, in order of size; none of these is a category's, the target's or the rest's colour."""

REST = "rest of the step"
UNLISTED = "unlisted"
_KIND_CATEGORY = {kind: key for key, (_, _, kinds) in CATEGORIES.items() for kind in kinds}


@dataclass(frozen=True, slots=True)
class Segment:
    """One phase's time in one bar (or several phases' drawn as one: `members` of them)."""

    phase: str
    value: float
    highlight: bool = False
    category: str = ""
    """A key of CATEGORIES, `rest`, `unlisted`, or empty for a phase coloured by size."""
    members: int = 1


@dataclass(frozen=True, slots=True)
class Bar:
    """One stacked bar: a state (before/after) or one step of a workload's history."""

    label: str
    segments: tuple[Segment, ...]
    caption: str = ""
    """Short text to the right of the bar's label; its total when empty."""

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


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(chars - 1, 1)].rstrip() + "…"


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
    `data-value` attributes, so tests and stylesheets can find it. A highlighted segment gets a heavy outline, drawn
    over its neighbours; it is filled with the target's colour, or with `outline` keeps its phase's colour (a history's
    bottleneck moves between phases, and the colour must still say which phase it is). The legend lists each colour
    once, with the phase's time in the first bar when there is one bar to read it from (a decision's "before").
    """
    longest = max((bar.total for bar in bars), default=0.0)
    scale = BAR_WIDTH / longest if longest > 0 else 0.0
    colours = _colours(bars, outline=outline)
    legend = _legend(bars, colours, highlight_class, unit=unit, outline=outline)
    bottom = TOP + ROW * len(bars) - 14
    legend_y = bottom + (2 * LEGEND_ROW if markers else LEGEND_ROW)
    height = legend_y + LEGEND_ROW * len(legend)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {height}" '
        f'width="100%" style="max-width:{MAX_WIDTH}" role="img" aria-label="{_esc(title)}" '
        f'font-family="sans-serif" font-size="{FONT}">',
        f"<title>{_esc(title)}</title>",
    ]
    for index, bar in enumerate(bars):
        y = TOP + ROW * index + CAPTION
        caption = bar.caption or _amount(bar.total, unit)
        parts.append(f'<g class="bar" data-bar="{_esc(bar.label)}">')
        parts.append(f'<text x="{LEFT}" y="{y - 6}" font-weight="600">{_esc(bar.label)}</text>')
        parts.append(f'<text class="total" x="{LEFT + BAR_WIDTH}" y="{y - 6}" text-anchor="end">{_esc(caption)}</text>')
        x = float(LEFT)
        highlighted: list[str] = []
        for segment in bar.segments:
            width = segment.value * scale
            classes = "segment" + (f" {highlight_class}" if segment.highlight else "")
            fill = TARGET_FILL if segment.highlight and not outline else colours[segment.phase]
            stroke = 'stroke="#fff" stroke-width="1"' if width >= THIN else 'stroke="none"'
            if segment.category == UNLISTED:
                stroke = 'stroke="#868e96" stroke-width="1" stroke-dasharray="3 2"'
            parts.append(
                f'<rect class="{classes}" data-phase="{_esc(segment.phase)}" data-bar="{_esc(bar.label)}" '
                f'data-category="{segment.category or "phase"}" '
                f'data-value="{segment.value:.6g}" x="{_num(x)}" y="{y}" width="{_num(width)}" '
                f'height="{BAR_HEIGHT}" fill="{fill}" {stroke}>'
                f"<title>{_esc(segment.phase)}: {_esc(_amount(segment.value, unit))}</title></rect>"
            )
            if segment.highlight:
                # Drawn again on top, unfilled: a neighbour drawn later would cover half of the outline.
                highlighted.append(
                    f'<rect class="outline" x="{_num(x)}" y="{y}" width="{_num(width)}" height="{BAR_HEIGHT}" '
                    f'fill="none" stroke="{OUTLINE}" stroke-width="3"/>'
                )
            x += width
        parts.extend(highlighted)
        parts.append("</g>")
    for marker in markers:
        x = LEFT + marker.value * scale
        label_x = min(max(x, LEFT + 90), WIDTH - 90)  # keep the label inside the drawing
        # One dash across each bar, none across the captions above them: a line through "593.5 ms" reads badly.
        lines = "".join(
            f'<line x1="{_num(x)}" y1="{TOP + ROW * index + CAPTION - 4}" x2="{_num(x)}" '
            f'y2="{TOP + ROW * index + CAPTION + BAR_HEIGHT + 4}" stroke="{OUTLINE}" stroke-width="2" '
            f'stroke-dasharray="5 3"/>'
            for index in range(len(bars))
        )
        parts.append(
            f'<g class="{_esc(marker.css_class)}" data-value="{marker.value:.6g}">{lines}'
            f'<text x="{_num(label_x)}" y="{bottom + 20}" text-anchor="middle">{_esc(marker.label)}</text></g>'
        )
    for index, (name, colour, full, amount) in enumerate(legend):
        lx, ly = LEFT, legend_y + LEGEND_ROW * index
        swatch = (
            f'stroke="{OUTLINE}" stroke-width="3"'
            if colour == "outline"
            else ('stroke="#868e96" stroke-dasharray="3 2"' if colour == UNLISTED_FILL else 'stroke="none"')
        )
        fill = "#fff" if colour == "outline" else colour
        text = name + (f"  {amount}" if amount else "")
        parts.append(
            f'<g class="legend"><title>{_esc(full)}</title><rect x="{lx + 1}" y="{ly - 12}" width="14" height="14" '
            f'fill="{fill}" {swatch}/><text x="{lx + 22}" y="{ly}" xml:space="preserve">{_esc(text)}</text></g>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _colours(bars: Sequence[Bar], *, outline: bool) -> dict[str, str]:
    """One colour per phase name, the same in every bar: a category's own, the rest's, else the palette's in order
    of first appearance (a highlighted phase, filled with the target's colour, takes none of the palette)."""
    colours: dict[str, str] = {}
    drawn_highlighted = set() if outline else {s.phase for bar in bars for s in bar.segments if s.highlight}
    for bar in bars:
        for segment in bar.segments:
            if segment.phase in colours:
                continue
            if segment.category in CATEGORIES:
                colours[segment.phase] = CATEGORIES[segment.category][1]
            elif segment.category in ("rest", REST):
                colours[segment.phase] = REST_FILL
            elif segment.category == UNLISTED:
                colours[segment.phase] = UNLISTED_FILL
            elif segment.phase in drawn_highlighted:
                colours[segment.phase] = TARGET_FILL
            else:
                used = sum(1 for colour in colours.values() if colour in PALETTE)
                colours[segment.phase] = PALETTE[used % len(PALETTE)]
    return colours


def _legend(
    bars: Sequence[Bar], colours: dict[str, str], highlight_class: str, *, unit: str, outline: bool
) -> list[tuple[str, str, str, str]]:
    """One entry per phase drawn (name, colour, full name, amount), in order of first appearance; with `outline`, one
    more explaining it. A filled highlight says it is the target."""
    amounts = {s.phase: s.value for s in bars[0].segments} if bars and len(bars) == 2 and not outline else {}
    entries = []
    for phase, colour in colours.items():
        amount = _amount(amounts[phase], unit) if phase in amounts else ""
        room = LEGEND_CHARS - (len(amount) + 2 if amount else 0)
        entries.append(
            (_legend_name(phase, colour, highlight_class, outline=outline, chars=room), colour, phase, amount)
        )
    if outline:
        entries.append((f"outlined: the {highlight_class}", "outline", f"outlined: the {highlight_class}", ""))
    return entries


def _legend_name(phase: str, colour: str, highlight_class: str, *, outline: bool, chars: int) -> str:
    """The phase's name as the legend shows it in `chars` characters, after what its colour stands for when the name
    does not say it."""
    prefix = ""
    if colour == TARGET_FILL and not outline:
        prefix = f"{highlight_class}: "
    for key, (name, fill, _) in CATEGORIES.items():
        if colour == fill and not phase.startswith(name) and not any(w in phase.lower() for w in _SAYS_ITS_KIND[key]):
            prefix = f"{name}: "
    return prefix + short_name(phase, max(chars - len(prefix), 8))


SIGNATURE_NAME = 16
"""A kernel's own name at least this long tells kernels apart without its template arguments."""


def short_name(name: str, chars: int) -> str:
    """A phase's name in at most `chars` characters, keeping what tells kernels apart.

    A kernel signature loses its return type (`void `) and its parameter list; then its template arguments when its
    own name is long enough to tell it apart (`split_embedding_backward_…_kernel_cta_per_row_1<c10::Half, …>`), else
    it keeps them (`cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x6_nt_align1>`: the tile is in them).
    What is still too long loses its middle, not its end: the suffix (`_warp_per_row_1`, `_nt_align1>`) is what
    differs between instantiations.
    """
    text = " ".join(name.split()).removeprefix("void ")
    depth = 0
    for index, char in enumerate(text):
        depth += (char == "<") - (char == ">")
        if char == "(" and depth == 0 and index > 0 and (text[index - 1].isalnum() or text[index - 1] in "_>"):
            text = text[:index]
            break
    head, sep, _ = text.partition("<")
    if sep and len(head) >= SIGNATURE_NAME:
        text = head
    if len(text) <= chars:
        return text
    back = (chars - 1) // 2
    return text[: chars - 1 - back].rstrip() + "…" + text[len(text) - back :].lstrip()


def fold(segments: Sequence[Segment], *, limit: int = LEGEND_MAX) -> list[Segment]:
    """The segments a reader can tell apart: each highlighted one, one per category (its phases summed), the largest
    others while the legend has room, and the others as one segment, "the rest". Order is the first appearance of
    each in `segments`, the rest before `unlisted` at the end; totals are kept exactly.

    A category of one phase keeps its phase's name; several are named after the category and their count.
    """
    groups: dict[str, list[Segment]] = {}
    plain: list[Segment] = []
    folded: list[Segment] = []
    for segment in segments:
        if segment.highlight or segment.category == UNLISTED:
            groups[f"\0{len(groups)}"] = [segment]
        elif segment.category in CATEGORIES:
            groups.setdefault(segment.category, []).append(segment)
        elif segment.category == "rest":
            folded.append(segment)  # already many phases (a profile's own fold): never one to name
        else:
            plain.append(segment)
    fixed = len(groups)
    room = min(len(PALETTE), max(limit - fixed, 0))
    if len(plain) > room or folded:  # the rest takes an entry of its own
        room = min(room, max(limit - fixed - 1, 0))
    ranked = sorted(plain, key=lambda s: -s.value)
    keep = {id(s) for s in ranked[:room]}
    rest = [s for s in plain if id(s) not in keep] + folded
    out: list[Segment] = []
    placed: set[str] = set()
    for segment in segments:
        if id(segment) in keep:
            out.append(segment)
            continue
        key = next((k for k, members in groups.items() if any(m is segment for m in members)), None)
        if key is None or key in placed:
            continue
        placed.add(key)
        members = groups[key]
        if members[0].category == UNLISTED:
            continue
        out.append(members[0] if len(members) == 1 else _merged(members, CATEGORIES[key][0], key))
    if rest:
        out.append(replace(rest[0], category="rest") if len(rest) == 1 else _merged(rest, "the rest", "rest"))
    out.extend(s for s in segments if s.category == UNLISTED)
    return out


def _merged(members: Sequence[Segment], name: str, category: str) -> Segment:
    count = sum(member.members for member in members)
    return Segment(f"{name}: {count} phases", sum(m.value for m in members), False, category, count)


def decision_bars(proposal: Proposal, figures: AmdahlFigures) -> tuple[list[Bar], Marker | None, str]:
    """The before and after bars of a decision, its ceiling marker, and the unit (`ms` or `share`).

    With a breakdown that names the target: its phases as `fold` keeps them apart (the target, one per category of
    time, the largest others, the rest; plus `unlisted` when `baseline_ms` exceeds the breakdown's sum). Otherwise
    two: the target (p) and the rest (1 − p), in ms when the baseline is known.
    """
    k = _k(figures)
    target = proposal.target or "target"
    phases = proposal.breakdown or []
    if any(phase.name == proposal.target for phase in phases):
        unit = "ms"
        before = [_segment(phase, phase.name == proposal.target) for phase in phases]
        gap = _unlisted(proposal, phases)
        if gap > 0:
            before.append(Segment(UNLISTED, gap, category=UNLISTED))
        before = fold(before)
    elif figures.baseline_ms is not None:
        unit = "ms"
        target_ms = figures.p * figures.baseline_ms
        before = [Segment(target, target_ms, True), Segment(REST, figures.baseline_ms - target_ms, category="rest")]
    else:
        unit = "share"
        before = [Segment(target, figures.p, True), Segment(REST, 1.0 - figures.p, category="rest")]
    after = [replace(s, value=s.value / k) if s.highlight else s for s in before]
    total = sum(s.value for s in before)
    new_total = sum(s.value for s in after)
    floor = total - sum(s.value for s in before if s.highlight)
    acted = _acted(proposal, figures, unit, total)
    if acted is not None:
        # The decision's (p, k) is not the target's own (a barrier's next-slowest rank, a collective's wait, several
        # targets): its saving comes off the target, so the after bar is the decision's new time, and the ceiling its.
        saving, ceiling = acted
        after = [replace(s, value=max(s.value - saving, 0.0)) if s.highlight else s for s in before]
        new_total = sum(s.value for s in after)
        floor = total / ceiling if ceiling else 0.0
    bars = [
        Bar("before", tuple(before), caption=_amount(total, unit)),
        Bar("after", tuple(after), caption=f"{_amount(new_total, unit)} ({times(_ratio(total, new_total))})"),
    ]
    marker = Marker(floor, f"ceiling {_amount(floor, unit)} ({times(_ratio(total, floor))})") if total > 0 else None
    return bars, marker, unit


def _segment(phase: Phase, target: bool) -> Segment:
    """A phase as a segment: its category of time, or the rest when it already sums many phases (a profile's fold,
    "(the rest: 126 kernel phases)", counted as the phases it holds)."""
    if not target and phase.name.startswith(REST_PREFIX):
        count = phase.name.removeprefix(REST_PREFIX).split(" ", 1)[0].replace(",", "")
        return Segment(phase.name, phase.ms, category="rest", members=int(count) if count.isdigit() else 1)
    return Segment(phase.name, phase.ms, target, _KIND_CATEGORY.get(phase.kind, ""))


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
    # The same phases kept apart in every bar: each step's bottleneck, then the largest others while colours last.
    bottlenecks = list(dict.fromkeys(step.bottleneck for step in steps))
    largest: dict[str, float] = {}
    for step in steps:
        for name, value in step.phases:
            largest[name] = max(largest.get(name, 0.0), value)
    ranked = sorted((name for name in largest if name not in bottlenecks), key=lambda name: -largest[name])
    kept = set(bottlenecks) | set(ranked[: max(len(PALETTE) - len(bottlenecks), 0)])
    bars = []
    for step in steps:
        shown = [Segment(name, value, name == step.bottleneck) for name, value in step.phases if name in kept]
        others = [value for name, value in step.phases if name not in kept]
        if others:
            shown.append(
                Segment(f"the rest: {len(ranked) + len(bottlenecks) - len(kept)} phases", sum(others), category="rest")
            )
        bars.append(Bar(step.label, tuple(shown)))
    title = f"Successive breakdowns of {label(workload)}"
    return stacked_bars(bars, unit="ms", title=title, highlight_class="bottleneck", outline=True)
