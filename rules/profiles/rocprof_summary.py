"""rocprofv3 ``--summary`` text tables (``ROCPROFV3 <DOMAIN> SUMMARY:`` sections of ``| … |`` rows).

PERCENT (INC) is inclusive: a hipMemcpy's time contains the HSA calls and the device copy it triggers,
so the percentages of different domains overlap and do not sum to 100. Totals are kept, marked inclusive.
When the file has per-domain sections and the all-domain ``ROCPROFV3 SUMMARY`` section, the per-domain
ones are used (the all-domain one repeats the same rows).
"""

from __future__ import annotations

import re

from worthit.rules.profiles._text import check_bytes, head_text, norm, text_stream, to_count
from worthit.rules.profiles.budget import held_events
from worthit.rules.profiles.collect import summed_breakdown
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.model import Breakdown, Kind
from worthit.rules.profiles.naming import api_kind, copy_name

FORMAT = "rocprofv3_summary"
_SECTION = re.compile(r"^\s*ROCPROFV3\s+(?:(\S+)\s+)?SUMMARY\s*:?\s*$")


def looks_like(data: bytes) -> bool:
    """True when the text has a ``ROCPROFV3 … SUMMARY`` banner followed by a ``| NAME |`` table."""
    head = head_text(data)
    return bool(re.search(r"ROCPROFV3\s+(?:\S+\s+)?SUMMARY", head)) and "|" in head


def read(data: bytes) -> Breakdown:
    """Read a rocprofv3 summary; one phase per (domain, name) row of the per-domain sections."""
    check_bytes(data, FORMAT)
    sections: dict[str, list[tuple[str, str, int, int, int]]] = {}
    order: list[str] = []
    current: str | None = None
    columns: list[str] | None = None
    for number, line in enumerate(_lines(data), start=1):
        stripped = line.strip()
        found = _SECTION.match(stripped)
        if found:
            current = found.group(1) or "ALL"
            columns = None
            if current not in sections:
                sections[current] = []
                order.append(current)
            continue
        if not stripped.startswith("|"):
            continue
        cells = [c.strip() for c in stripped.strip("|").split("|")]
        if current is None:
            raise ProfileError("a table row before any ROCPROFV3 … SUMMARY banner", format_expected=FORMAT, line=number)
        if columns is None:
            columns = [norm(c) for c in cells]
            if not {"name", "calls", "duration(nsec)"} <= set(columns):
                raise ProfileError(
                    f"expected a header with NAME, CALLS, DURATION (nsec), got {stripped[:120]!r}",
                    format_expected=FORMAT,
                    line=number,
                )
            continue
        if set(stripped) <= set("|-+ "):
            continue  # the ruler under the header
        if len(cells) != len(columns):
            raise ProfileError(
                f"expected {len(columns)} cells, got {len(cells)} (truncated or damaged row)",
                format_expected=FORMAT,
                line=number,
            )
        name = cells[columns.index("name")]
        domain = cells[columns.index("domain")] if "domain" in columns else current
        calls = to_count(cells[columns.index("calls")], fmt=FORMAT, line=number, column="CALLS")
        total = to_count(cells[columns.index("duration(nsec)")], fmt=FORMAT, line=number, column="DURATION (nsec)")
        held_events(1, FORMAT)
        sections[current].append((name, domain, calls, total, number))
    per_domain = [s for s in order if s != "ALL" and sections[s]]
    used = per_domain or (["ALL"] if sections.get("ALL") else [])
    if not used:
        raise ProfileError("no ROCPROFV3 … SUMMARY table with rows found", format_expected=FORMAT, line=None)
    rows: list[tuple[str, Kind, int, int]] = []
    for section in used:
        for name, domain, calls, total, _ in sections[section]:
            label, kind = _classify(name, domain)
            rows.append((label, kind, total, calls))
    notes = [
        "PERCENT (INC) is inclusive: an API call's time contains the calls and device work it triggers, so "
        "shares overlap across domains and do not sum to 100. share_of_sum is of the summed durations of "
        f"all rows read ({', '.join(used)}). Re-measure with traces for shares of device or wall time."
    ]
    return summed_breakdown(FORMAT, rows, notes=notes, device_table=False)


def _lines(data: bytes) -> list[str]:
    try:
        return text_stream(data).read().splitlines()
    except UnicodeDecodeError as exc:
        raise ProfileError(f"the file is not UTF-8 text ({exc.reason})", format_expected=FORMAT) from None


def _classify(name: str, domain: str) -> tuple[str, Kind]:
    domain = domain.upper()
    if domain == "KERNEL_DISPATCH":
        return name, "kernel"
    if domain == "MEMORY_COPY":
        return copy_name(name), "copy"
    if domain in ("MEMORY_ALLOCATION", "SCRATCH_MEMORY"):
        return name, "alloc"
    if domain.endswith("_API"):
        return name, api_kind(name)
    return name, "other"
