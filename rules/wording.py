"""Every sentence a finding prints, written once from its check's template and figures: the one place a check's
numbers become words.

A check returns a `Draft`: its effect, verdict, figures and the template it owns (a module-level constant in
`str.format` syntax, or a tuple of them said one after another), with `words` for what is no number (a target's
name, a scope's noun). Each replacement field names a figure or a word; a number is always a figure, printed by
the formatter its format spec names (`{saving:pct}`, `{cost_weeks:weeks}`, `{end_to_end_saving:-pct}` for its
negation, `{baseline_ms:before(new_ms,saving_ms)}` for one that reads other figures). The engine writes the
sentence only for the findings it prints (`Draft.written`); the verdict function reads a draft's verdict alone.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from worthit.rules.model import Effect, Figure, Finding, Stage, Verdict
from worthit.rules.text import (
    STATEMENT_CHARS,
    a,
    break_even_weeks,
    count,
    gpu_equivalents,
    join,
    k_text,
    label,
    metric,
    ms,
    ms_saved,
    num,
    pct,
    saves,
    sentence,
    span,
    the_share,
    times,
    usd,
    weeks,
)

if TYPE_CHECKING:
    from worthit.rules.context import Context

__all__ = [
    "FORMATS",
    "Draft",
    "Template",
    "carried",
    "clause",
    "fields",
    "listed",
    "names",
    "opposed",
    "prints_as_after",
    "same_printed",
    "write",
]

Template = str | tuple[str, ...]
"""A sentence, or the parts of one said in order (a check picks which clauses hold)."""

FORMATS: dict[str, Callable[..., str]] = {
    "pct": pct,
    "ms": ms,
    "times": times,
    "k": lambda k: k_text(math.inf if k is None else k),  # None: unbounded, as the figures write it
    "num": num,
    "usd": usd,
    "weeks": weeks,
    "break_even_weeks": break_even_weeks,
    "label": label,
    "the_share": the_share,
    "saves": saves,
    "count": count,
    "a_ms": lambda value: a(ms(value)),
    "int": str,
    "whole": lambda value: num(value, 0),
    "g": lambda value: f"{value:g}",
    "metric": metric,
    "points": lambda value: f"{metric(value)} point" + ("" if metric(value) == "1" else "s"),
    "num2": lambda value: num(value, 2),
    "ratio": lambda value: num(value, 0 if value >= 10 else 1),
    "span_ms": lambda low, high: span(ms(low), ms(high)),
    "span_pct": lambda low, high: span(pct(low), pct(high)),
    "span_times": lambda low, high: span(times(low), times(high)),
    "span_k_times": lambda low, high: span(_k_times(low), _k_times(high)),
    "gpu_equivalents": gpu_equivalents,
    "a_pct": lambda value: a(pct(value)),
    "before": lambda before, after, saved: ms_saved(before, after, saved)[0],
    "after": lambda after, before, saved: ms_saved(before, after, saved)[1],
    "saved": lambda saved, before, after: ms_saved(before, after, saved)[2],
}
"""The formatters a template's format spec may name; the first argument is the field's own value."""


def _k_times(k: float) -> str:
    """A k as `k_text` prints its factor (`1.73×`, `150×`), for a span of two."""
    return times(k) if k >= 100 else f"{num(k, 2)}×"


def listed(items: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`: templates or words said as a list."""
    return join(items)


def names(each: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`: phases or models named in a sentence, each as a label."""
    return join([label(name) for name in each])


# an effect that argues one verdict only: its finding's verdict follows from it (a `remeasure` finding argues
# `remeasure`, a condition `fund_if`), so a check states the verdict only where the effect leaves it open
_EFFECT_VERDICT: dict[str, Verdict] = {"remeasure": "remeasure", "condition": "fund_if"}


_Piece = tuple[str, str | None, Callable[..., str] | None, bool, tuple[str, ...]]
"""One step of a compiled template: literal text, then a field's name, its formatter, whether negated, its args."""


@cache
def _compiled(template: Template) -> tuple[_Piece, ...]:
    """A template parsed once (`str.format` syntax; a tuple's parts one after another): each literal and the field
    after it, its formatter looked up."""
    pieces: list[_Piece] = []
    parsed = (piece for part in ((template,) if isinstance(template, str) else template) for piece in _PARSE(part))
    for literal, name, spec, _ in parsed:
        if not name:
            pieces.append((literal, None, None, False, ()))
            continue
        kind, args = _spec(spec or "")
        formatter = FORMATS[kind.removeprefix("-")] if kind else None
        pieces.append((literal, name, formatter, kind.startswith("-"), args))
    return tuple(pieces)


_PARSE = string.Formatter().parse


def _written(template: Template, values: Mapping[str, Any]) -> str:
    out: list[str] = []
    for literal, name, formatter, negate, args in _compiled(template):
        if literal:
            out.append(literal)
        if name is None:
            continue
        value = values[name]
        if formatter is None:
            if not isinstance(value, str):
                raise TypeError(f"Expected a format spec naming how to print the figure {value!r}, got none")
            out.append(value)
        else:
            out.append(formatter(-value if negate else value, *(values[arg] for arg in args)))
    return "".join(out)


def _spec(format_spec: str) -> tuple[str, tuple[str, ...]]:
    """`before(new_ms,saving_ms)` → ("before", ("new_ms", "saving_ms"))."""
    name, _, rest = format_spec.partition("(")
    return name, tuple(arg.strip() for arg in rest.rstrip(")").split(",") if arg.strip())


def same_printed(spec: str, first: float, second: float) -> bool:
    """Whether two figures print the same under a formatter: a range whose ends print alike is said as one."""
    return FORMATS[spec](first) == FORMATS[spec](second)


def prints_as_after(value: float, before: float, after: float, saved: float) -> bool:
    """Whether `value` prints as the new time of `before → after, saving saved` does (`text.ms_saved`)."""
    return ms(value) == ms_saved(before, after, saved)[1]


def fields(template: Template) -> Iterator[tuple[str, str]]:
    """Every (name, format spec) a template reads, its specs' arguments among them (spec `()` for those)."""
    for part in (template,) if isinstance(template, str) else template:
        for _, name, spec, _ in string.Formatter().parse(part):
            if name is None:
                continue
            yield name, spec or ""
            for arg in _spec(spec or "")[1]:
                yield arg, "()"


def write(
    template: Template,
    figures: Mapping[str, Figure],
    words: Mapping[str, str],
    fallbacks: Sequence[Template] = (),
) -> str:
    """The sentence of `template` over `figures` and `words`, ending in a period and at most `STATEMENT_CHARS` long:
    the first of `template` and its `fallbacks` (shorter forms) that fits, else the last one cut to fit."""
    values = {**figures, **words}
    message = ""
    for each in (template, *fallbacks):
        message = clause(each, values)
        if not message.endswith("."):
            message += "."
        if len(message) <= STATEMENT_CHARS:
            return message
    return sentence(message)


def clause(template: Template, values: Mapping[str, object]) -> str:
    """`template` written over `values` as it stands: a part of a sentence, or a figure that is words (a fix)."""
    return _written(template, values)


@dataclass(slots=True)
class Draft:
    """A finding before its sentence is written: what the verdict function and the engine's decision read."""

    rule: str
    effect: Effect
    template: Template
    figures: dict[str, Figure]
    words: dict[str, str] = field(default_factory=dict)
    verdict: Verdict | None = None
    stage: Stage | None = None
    overridden_by: str | None = None
    fallbacks: tuple[Template, ...] = ()
    """Shorter forms of the sentence, in order, for when `template` written out is too long for one."""

    def __post_init__(self) -> None:
        if self.verdict is None:
            self.verdict = _EFFECT_VERDICT.get(self.effect)

    def written(self) -> Finding:
        """The finding as printed: its sentence written from the template."""
        return Finding(
            rule=self.rule,
            effect=self.effect,
            message=write(self.template, self.figures, self.words, self.fallbacks),
            figures=self.figures,
            verdict=self.verdict,
            stage=self.stage,
            overridden_by=self.overridden_by,
        )


ALTERNATIVE_GROUPED = "the {alternative_share:pct} that is {alternative}{alternative_fix}"
ALTERNATIVE_PHASE = "{alternative} at {alternative_share:pct} ({alternative_ms:ms}){alternative_fix}"
"""Where the effort belongs instead (`rules.findings.Alternative`), as a redirect names it."""


def opposed(
    ctx: Context,
    rule: str,
    head: Template,
    figures: dict[str, Figure],
    words: dict[str, str],
    *,
    then: str = "is where the effort belongs",
    alone: Template | None = None,
) -> Draft:
    """`rules.findings.opposition` as a draft: a redirect naming where the effort belongs when the breakdown knows
    (`<head>; <alternative> <then>.`), else a plain decline (`alone`, or `<head>.`)."""
    alternative = ctx.alternative
    head = (head,) if isinstance(head, str) else head
    if alternative is None:
        return Draft(rule, "opposes", head if alone is None else alone, figures, words, verdict="decline")
    figures |= alternative.figures()
    words |= {"alternative_fix": f" ({alternative.fix})" if alternative.fix else "", "then": then}
    phrase = ALTERNATIVE_GROUPED if alternative.grouped else ALTERNATIVE_PHASE
    return Draft(rule, "opposes", (*head, "; ", phrase, " {then}."), figures, words, verdict="redirect")


def carried(ctx: Context, rule: str, template: Template, figures: dict[str, Figure], words: dict[str, str]) -> Draft:
    """`rules.findings.carried` as a draft: a per-run objection the value of the work answers, an `info` naming
    the rule whose figure carries it."""
    return Draft(rule, "info", template, figures, words, overridden_by=ctx.worth.carried_by)
