"""A terminal table of a breakdown: largest first, with both denominators side by side."""

from __future__ import annotations

from worthit.rules.profiles.model import Breakdown, largest_first

_NUMERIC = (("kind", 6), ("total ms", 12), ("calls", 9), ("% device", 9), ("% wall", 9))
_MIN_NAME = 16


def render_table(b: Breakdown, width: int = 100) -> str:
    """The breakdown as a fixed-width text table no wider than `width` (long names are cut with "…").

    Columns: name, kind, total ms, calls, % of device, % of wall ("-" where the denominator is unknown).
    A summed/inclusive table is marked "inclusive — do not sum", and so is each inclusive phase of a
    combined breakdown, because adding those percentages double counts overlapping time.
    """
    numeric_width = sum(w + 1 for _, w in _NUMERIC)
    name_width = max(_MIN_NAME, width - numeric_width)
    lines: list[str] = []
    title = f"{b.format}" + (f" [{b.scope}]" if b.scope else "")
    lines.append(title)
    lines.append(
        "wall "
        + _ms(b.wall_ns)
        + " ms · device busy "
        + _ms(b.device_busy_ns)
        + " ms"
        + (f" · {b.steps} step{'s' if b.steps != 1 else ''}" if b.steps else "")
    )
    if b.inclusive:
        lines.append("inclusive — do not sum: totals are summed durations and the percentages overlap")
    header = "name".ljust(name_width) + "".join(" " + label.rjust(w) for label, w in _NUMERIC)
    lines.append(header)
    lines.append("-" * min(width, len(header)))
    for phase in largest_first(b.phases):
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
    if any(p.inclusive for p in b.phases) and not b.inclusive:
        lines.append("(inc) = inclusive summed total — do not sum with the other rows")
    lines.extend(f"note: {n}" for n in b.notes)
    return "\n".join(lines) + "\n"


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
    if len(text) <= width:
        return text.ljust(width)
    return text[: width - 1] + "…"
