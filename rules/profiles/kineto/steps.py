"""Which steps are read: the step-range grammar (`parse_steps`) and the window of work it selects (`window`).

Device work belongs to the step whose host code launched it (the runtime call with the same ``correlation``), as in
HolisticTraceAnalysis. By default the last step is left out, as HTA does: the profiler stops inside it, so its
device work is cut short — everything launched from its start on is dropped. A chosen range of steps (`StepRange`)
reads only the work launched in those steps.

The grammar is one for every surface: `parse_steps` reads it, `StepRange.includes` decides which steps it names
(here and when stored step figures are re-read, `profiles.stored_steps`), and `rules.step_grammar.STEPS_PATTERN`
is its schema form for the boundaries that validate before parsing (a proposal's `steps`, the upload's query
parameter, the OpenAPI file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import msgspec

from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.parse import FORMAT, Parsed, Step

_RANGE_RE = re.compile(r"^\s*(\d*)\s*(?::\s*(\d*)\s*)?$")


class StepRange(msgspec.Struct, frozen=True):
    """Steps ``first``..``last`` by their number N in ``ProfilerStep#N``, both included; None = open end."""

    first: int | None
    last: int | None

    def __str__(self) -> str:
        if self.first is None and self.last is None:
            return "all"
        return f"{'' if self.first is None else self.first}:{'' if self.last is None else self.last}"

    def includes(self, number: int) -> bool:
        """Whether step ``ProfilerStep#number`` is in the range."""
        return (self.first is None or number >= self.first) and (self.last is None or number <= self.last)


def parse_steps(text: str) -> StepRange:
    """``"2:5"`` (steps 2 to 5), ``"3"``, ``"2:"`` (from step 2 to the end of the recording), ``":5"`` (from its
    start), ``"all"`` (the whole recording, last step included) → StepRange; ProfileError otherwise."""
    if text.strip().lower() == "all":
        return StepRange(None, None)
    found = _RANGE_RE.match(text)
    if found is None or not text.strip() or text.strip() == ":":
        raise ProfileError(f"expected steps as N, FIRST:LAST or all (numbers N of ProfilerStep#N), got {text!r}")
    first = int(found.group(1)) if found.group(1) else None
    last = first if ":" not in text else (int(found.group(2)) if found.group(2) else None)
    if first is not None and last is not None and last < first:
        raise ProfileError(f"expected FIRST <= LAST in steps {text!r}")
    return StepRange(first, last)


@dataclass(frozen=True, slots=True)
class Window:
    """Work launched in [lo, hi) (None = unbounded), and which steps that is."""

    lo: int | None
    hi: int | None
    steps: list[Step]
    label: str | None
    note: str | None

    def holds(self, t: int) -> bool:
        return (self.lo is None or t >= self.lo) and (self.hi is None or t < self.hi)

    def bounds(self) -> tuple[int, int]:
        """[lo, hi) with an open end as ±2⁶² ns, past every timestamp a reader keeps (`parse._MAX_US`)."""
        return (-(1 << 62) if self.lo is None else self.lo, 1 << 62 if self.hi is None else self.hi)


def window(p: Parsed, steps: StepRange | None, file: str | None) -> Window:
    """The work `steps` selects of `p` (None: all but the last step); ProfileError, naming `file`, when none."""
    if steps is None:
        if len(p.steps) >= 2:
            last = p.steps[-1]
            choose = f"choose steps to include it, e.g. {p.steps[0].number}:{last.number}"
            why = (
                "the profiler stopped inside it, so its device work is cut short"
                if cut_short(p, last)
                else "a profiler often stops inside its last step, though this one's device work is complete"
            )
            return Window(
                None, last.start, p.steps[:-1], None, f"{last.name}, the last step, is left out: {why} ({choose})."
            )
        return Window(None, None, list(p.steps), None, None)
    chosen = [s for s in p.steps if steps.includes(s.number)]
    if steps.first is None and steps.last is None:
        return Window(None, None, list(p.steps), None, None)
    if not chosen:
        where = f" in {file}" if file else ""
        have = ", ".join(str(s.number) for s in p.steps) or "none (the trace marks no ProfilerStep#N)"
        raise ProfileError(f"no steps {steps}{where}; the trace has steps {have}", format_expected=FORMAT)
    label = chosen[0].name if len(chosen) == 1 else f"{chosen[0].name}..{chosen[-1].name}"
    # An open end reaches the recording's end (or start), so "2:" keeps what runs after the last step.
    lo = None if steps.first is None else chosen[0].start
    hi = None if steps.last is None else chosen[-1].end
    return Window(lo, hi, chosen, label, None)


def cut_short(p: Parsed, step: Step) -> bool:
    """Whether the profiler stopped inside `step`: device work launched in it runs past the end of everything
    recorded on the host (the profiler's flush drops the rest of it). A step whose device work all ends before is
    complete, and no note calls it cut short."""
    host_end = max(step.end, max(p.other_end, default=step.end), max((end for _, end, _ in p.cpu), default=step.end))
    return any(launch >= step.start and end > host_end for launch, end in zip(p.dev_launch, p.dev_end, strict=True))


__all__ = ["StepRange", "Window", "cut_short", "parse_steps", "window"]
