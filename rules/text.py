"""How figures are written in statements: few digits, the units a reviewer says out loud.

A figure is rounded as a reviewer rounds it by hand: half away from zero (84.25 ms → 84.3 ms; `format` rounds an
exact double half to even, 84.2), and on the figure as the decision settles it (rules.precision: 15 significant
digits), so a sentence written from a full double prints what its settled figure prints in every table, page, gate
summary and Slack field (1.3499999999999999 and 1.35 both read 1.4 ms, not 1.3 in the sentence and 1.4 beside
it). Every function here that writes digits rounds so (`rounded`, `_fixed`, `significant`).

Every function here that writes digits refuses a NaN or an infinity (`NonFiniteFigure`), but `times` and `k_text`,
for which ∞ is a figure (`∞`, `removed entirely`): such a number in a sentence is an upstream arithmetic bug, and a
sentence reading "nan%" or "$infB" would be a wrong answer given with confidence.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import NoReturn

from worthit.rules.precision import settle

__all__ = [
    "LABEL_CHARS",
    "STATEMENT_CHARS",
    "NonFiniteFigure",
    "a",
    "at_least",
    "break_even_weeks",
    "count",
    "gpu_count",
    "gpu_equivalents",
    "gpu_figure",
    "join",
    "k_text",
    "label",
    "metric",
    "months",
    "ms",
    "ms_change",
    "ms_saved",
    "num",
    "pct",
    "rounded",
    "saves",
    "sentence",
    "share_bounds",
    "significant",
    "significant_bounds",
    "span",
    "the_share",
    "times",
    "usd",
    "weeks",
]


class NonFiniteFigure(ValueError):
    """A NaN or an infinity reached a function that writes digits: a bug in the arithmetic upstream, never input."""


def _refuse(value: float) -> NoReturn:
    raise NonFiniteFigure(f"expected a finite figure to write, got {value!r}")


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


_POW10 = tuple(10.0**n for n in range(16))
_NEAR = 1e-6
"""How near a half-way point a scaled double must be for its settled decimal to decide the rounding: settling moves
a figure by under 5e-15 of itself, so below 10⁸ (scaled) a double farther off than this rounds as its decimal does;
beyond, every figure takes the exact path."""


def _tie(value: float, decimals: int) -> bool:
    """Whether `value` may settle onto a half-way point at `decimals` places (the exact path then decides)."""
    scaled = value * 10.0**decimals
    return 0.5 - _NEAR < scaled % 1.0 < 0.5 + _NEAR or not -1e8 < scaled < 1e8


def _half_away(value: float, decimals: int) -> float:
    """`value`'s settled decimal to `decimals` places (negative: tens, hundreds…), a tie away from zero."""
    step = Decimal(1).scaleb(-decimals)
    return float(Decimal(repr(settle(value))).quantize(step, rounding=ROUND_HALF_UP))


def rounded(value: float, decimals: int) -> float:
    """`value` to `decimals` places as a reviewer rounds it: half away from zero, on its settled decimal (84.25 →
    84.3, 1.3499999999999999 → 1.4). Infinities, NaN and doubles past 10¹⁵ are left as they are."""
    if not math.isfinite(value) or abs(value) >= 1e15:
        return value
    return _half_away(value, decimals) if _tie(value, decimals) else round(value, decimals)


_PLAIN = tuple(f".{n}f" for n in range(16))
_GROUPED = tuple(f",.{n}f" for n in range(16))


def _fixed(value: float, decimals: int, grouped: bool = False) -> str:
    """`format(value, ".{decimals}f")` (with thousands separators when `grouped`) rounded as `rounded` rounds. The
    hot path of every sentence: the tie test is `_tie` inlined, only a near tie takes the exact path, and the format
    specs are made once."""
    scaled = value * _POW10[decimals]
    if 0.5 - _NEAR < scaled % 1.0 < 0.5 + _NEAR or not -1e8 < scaled < 1e8:  # NaN and ±∞ land here too
        if abs(value) < 1e15:
            value = _half_away(value, decimals)
        elif not math.isfinite(value):
            _refuse(value)
    return format(value, (_GROUPED if grouped else _PLAIN)[decimals])


def significant(value: float, digits: int = 3) -> str:
    """`format(value, f".{digits}g")` rounded as `rounded` rounds: `1.67` for a break-even of 1.665. Off the hot
    path (huge and tiny figures, break-evens), so always on the settled decimal."""
    if not math.isfinite(value):
        _refuse(value)
    if value == 0:
        return format(value, f".{digits}g")
    exact = Decimal(repr(settle(float(value))))
    step = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    figure = float(exact.quantize(step, rounding=ROUND_HALF_UP))
    return format(figure if math.isfinite(figure) else value, f".{digits}g")  # the largest doubles round past it


def a(spoken: str) -> str:
    """`spoken` after its indefinite article as it is read out: `a 40 ms`, `an 11.2%`, `an 8×`, `an 18,000`."""
    return f"{'an' if _vowel_sound(spoken) else 'a'} {spoken}"


def _vowel_sound(text: str) -> bool:
    """Whether a figure as written is said starting with a vowel: eight…, eleven…, eighteen… (by thousands)."""
    if text.startswith("-"):
        return False  # minus …
    digits = ""
    for char in text:
        if char.isdigit():
            digits += char
        elif char != ",":
            break
    if not digits:
        return text[:1].lower() in ("a", "e", "i", "o", "u")  # `an estimate`, `an under 1% win`; `a $5k`, `a ∞`
    lead = digits[: len(digits) % 3 or 3]  # the group said first: 11 of 11,000; 1 of 1800 (one thousand …)
    return lead.startswith("8") or lead in ("11", "18")


def ms(value: float, decimals: int = 1) -> str:
    """A time given in ms: `81.1 ms`, `2.1 ms`, `39.8 µs`, `1.2 s` (`decimals` more digits where a change needs them:
    `ms_change`)."""
    if value < 0:
        return "-" + ms(-value, decimals)
    if value >= 1e9:
        return f"{significant(value / 1000)} s"
    if value >= 10_000:
        return f"{_trim(_fixed(value / 1000, decimals))} s"
    if value >= 1 or value == 0:
        return f"{_trim(_fixed(value, decimals))} ms"
    if value >= 0.001:
        return f"{_trim(_fixed(value * 1000, decimals))} µs"
    return f"{_trim(_fixed(value * 1e6, 0))} ns"


def ms_change(before: float, after: float) -> tuple[str, str]:
    """Two times written with the digits that show they differ: 3.607 ms and 3.567 ms, where `ms` writes both
    `3.6 ms` (a 1% change on a 3.6 ms step); equal times, and times that differ only past six decimals, stay alike."""
    decimals = 1
    first, second = ms(before), ms(after)
    while first == second and before != after and decimals < 6:
        decimals += 1
        first, second = ms(before, decimals), ms(after, decimals)
    return first, second


def _adds_up(before: str, after: str, saved: str) -> bool:
    """Whether three times as `ms` prints them add up, printed before less printed after being the printed saving
    (either way), where all three are in one unit; in different units the finer one carries more digits, so
    nothing printed is contradicted."""
    parts = [text.rsplit(" ", 1) for text in (before, after, saved)]
    if len({unit for _, unit in parts}) != 1:
        return True
    first, second, third = (Decimal(number) for number, _ in parts)
    return abs(first - second) == third


def ms_saved(before: float, after: float, saved: float | None = None) -> tuple[str, str, str]:
    """`ms_change`'s two times and the time between them (`saved`, the figure that holds it, else the difference),
    with the digits at which the printed figures add up: 81.1 ms → 80.05 ms saving 1.05 ms, where one decimal
    prints 81.1 → 80.1 saving 1.1 (both halves round up)."""
    between = abs(before - after if saved is None else saved)
    decimals = 1
    while True:
        first, second = ms(before, decimals), ms(after, decimals)
        said = ms(between, decimals)
        if said.rsplit(" ", 1)[-1] != first.rsplit(" ", 1)[-1]:
            said = ms(between)  # in a finer unit: its own digits (39.8 µs of 3.61 → 3.57 ms)
        distinct = first != second or before == after
        if decimals >= 6 or (distinct and _adds_up(first, second, said)):
            return first, second, said
        decimals += 1


def pct(share: float) -> str:
    """A share as a percentage with the digits that matter: `18.9%`, `90%`, `1.2%`, `0.014%`."""
    if not math.isfinite(share):
        _refuse(share)
    value = share * 100
    if value == 0:
        return "0%"
    if abs(value) < 0.001:
        return "under 0.001%" if value > 0 else "-0.001% or less"
    if abs(value) >= 1e15:
        return "over 10¹⁵%"
    if abs(value) >= 1:
        return f"{_trim(_fixed(value, 1, grouped=True))}%"
    digits = 1 - math.floor(math.log10(abs(value)))  # two significant figures below 1%
    return f"{_trim(_fixed(value, digits))}%"


def times(factor: float | None) -> str:
    """A speedup factor: `1.233×`, `1.98×`, `10×`, `∞` (also for `None`: the figures' way of saying unbounded)."""
    if factor is None or factor == math.inf:
        return "∞"
    if factor >= 1e12:
        return "over 10¹²×"
    if factor >= 100:
        return f"{_fixed(factor, 0, grouped=True)}×"
    return f"{_trim(_fixed(factor, 3))}×"


def span(low: str, high: str) -> str:
    """`81.1–85 ms`, `1.2–1.5×`: a range as said, its unit once, and one value when both ends print the same."""
    if low == high:
        return low
    for unit in (" ms", " µs", " ns", " s", "%", "×"):
        if low.endswith(unit) and high.endswith(unit):
            return f"{low.removesuffix(unit)}–{high}"
    return f"{low}–{high}"


def k_text(k: float) -> str:
    """A proposed speedup of the target: `10× faster`, `0.9× as fast (slower)`, or `removed entirely` for k = ∞."""
    if k == math.inf:
        return "removed entirely"
    if k >= 100:
        return f"{times(k)} faster"
    factor = _trim(_fixed(k, 2))
    if factor == "1":
        return "no faster"
    return f"{factor}× as fast (slower)" if k < 1 else f"{factor}× faster"


def num(value: float, digits: int = 1) -> str:
    """A plain number with thousands separators: `1,000`, `21.9`."""
    if abs(value) >= 1e15:
        return significant(value)
    if float(value).is_integer():
        return f"{int(value):,}"
    return _trim(_fixed(value, digits, grouped=True))


def metric(value: float) -> str:
    """A quality metric (or a difference of two) in its own unit, with the digits it was given in, up to six
    significant: `0.812`, `75.1`, `5.86`, `0.003` (two decimals would print an AUC of 0.812 → 0.809 as 0.81 → 0.81)."""
    if value == 0:
        return "0"
    if not 1e-4 <= abs(value) < 1e6:
        return significant(value)
    return f"{value:,.6g}"


def usd(value: float) -> str:
    """Money, rounded the way a planning meeting rounds it: `$2.6B`, `$21.9M`, `$15k`, `$820`."""
    if abs(value) >= 1e12:
        return f"${significant(value / 1e9)}B"
    if round(abs(value) / 1e6, 1) >= 1000:  # $999.96M prints $1B, not $1000M
        return f"${_trim(_fixed(value / 1e9, 1))}B"
    if abs(value) >= 1e6:
        return f"${_trim(_fixed(value / 1e6, 1))}M"
    if abs(value) >= 1e4:
        return f"${_fixed(value / 1e3, 0)}k"
    return f"${_fixed(value, 0, grouped=True)}"


def weeks(value: float, digits: int = 1) -> str:
    """Engineering effort: `3 engineer-weeks`, `1 engineer-week`, `157.7 engineer-weeks`."""
    w = num(value, digits)
    return f"{w} engineer-week" + ("" if w == "1" else "s")


def at_least(value: float, digits: int = 0) -> float:
    """A lower bound as a condition states it: rounded up at the digits printed, so that meeting the printed figure
    meets the bound (a break-even of 1,052.4 GPUs is "at least 1,053", never "at least 1,052", which fails). Float
    noise past nine decimals is not rounded up (12.000000000001 days is 12)."""
    scale = 10.0**digits
    return math.ceil(round(value * scale, 9)) / scale


def share_bounds(share: float) -> tuple[float, float]:
    """A positive share rounded down and up at the digits `pct` prints it with (4.304% → 4.3% and 4.4%): the two
    printed figures a break-even share can be stated as."""
    if not math.isfinite(share):
        _refuse(share)
    value = share * 100
    digits = 1 if value >= 1 else 1 - math.floor(math.log10(value))
    scale = 10.0**digits
    down = math.floor(round(value * scale, 9)) / scale
    return down / 100, at_least(value, digits) / 100


def significant_bounds(value: float, digits: int = 3) -> tuple[float, float]:
    """A positive figure rounded down and up at the significant digits `significant` prints it with (a break-even k
    of 2.2313 → 2.23 and 2.24): the two printed figures a break-even k can be stated as."""
    if not math.isfinite(value):
        _refuse(value)
    exponent = math.floor(math.log10(value))
    scale = 10.0 ** (digits - 1 - exponent)
    scaled = round(value * scale, 9)  # float noise past nine decimals is not a digit (2.2300000000000004 is 2.23)
    return math.floor(scaled) / scale, math.ceil(scaled) / scale


def break_even_weeks(value: float) -> str:
    """A break-even in engineer-weeks, printed the same by every rule that states it: `157.7 engineer-weeks` (to a
    tenth, where 157.6 and 158 once stood for one $788,400 / $5,000), `163,179 engineer-weeks` past a thousand."""
    return weeks(value, 1 if value < 1000 else 0)


LABEL_CHARS = 32
"""Longest name a statement quotes; longer names are cut with an ellipsis so a sentence stays readable."""
STATEMENT_CHARS = 300


def label(name: str) -> str:
    """A phase or model name as quoted in a sentence: one line, at most `LABEL_CHARS` characters."""
    # A name ending in a period, or with ". " inside, would read as a sentence break in the statement.
    text = " ".join(name.split()).replace(". ", ".")
    text = text.rstrip(".") or text
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1].rstrip() + "…"


def sentence(message: str) -> str:
    """A statement clamped to `STATEMENT_CHARS`, cut at a clause boundary (a safety net: rules write short)."""
    if len(message) <= STATEMENT_CHARS:
        return message
    # Rules end a statement with the clause that names where the effort belongs ("…; X is where the week should
    # go"): when a statement is too long, shorten what comes before that clause, never the clause itself.
    head, sep, tail = message.rstrip(".").rpartition("; ")
    if sep and len(tail) < STATEMENT_CHARS // 2:
        room = STATEMENT_CHARS - len(tail) - len("; .")
        for mark in (", ", " "):
            cut = head.rfind(mark, 0, room)
            if cut > 0:
                return head[:cut].rstrip(",;:—- ") + "; " + tail + "."
    for mark in ("; ", ", ", " "):
        cut = message.rfind(mark, 0, STATEMENT_CHARS - 1)
        if cut > 0:
            return message[:cut].rstrip(",;:—- ") + "."
    return message[: STATEMENT_CHARS - 1] + "."


def months(value: float) -> str:
    """A payback period: `under a month`, `1 month`, `34 months`."""
    if not math.isfinite(value):
        _refuse(value)
    if value < 1:
        return "under a month"
    m = num(value)
    return f"{m} month" + ("" if m == "1" else "s")


def the_share(share: float, target: str | None = None) -> str:
    """A sentence's subject for a share: `The 21% share of gemm`, or, for a share printed as a bound,
    `gemm's share of under 0.001%` (never `The under 0.001% share`)."""
    figure = pct(share)
    if figure[0].isdigit() or figure[0] == "-":
        return f"The {figure} share" + (f" of {target}" if target else "")
    return f"{target}'s share of {figure}" if target else f"The share of {figure}"


def gpu_figure(n: float) -> float:
    """GPU-equivalents as `gpu_equivalents` prints them, rounded half up as a planner rounds (62.5 → 63, where
    `format` rounds half to even: 62): a sentence that adds or subtracts printed figures computes on these."""
    if not math.isfinite(n) or abs(n) >= 1e15 or n == 0:
        return n
    if 0 < n < 0.01:
        return float(significant(n, 1))
    return rounded(n, 2 if n < 10 else 0)


def gpu_equivalents(n: float) -> str:
    """GPU-equivalents as a planner reads them: `1,000 GPU-equivalents`, `7.5`, `1 GPU-equivalent`, `0.005` (never
    `0` for a saving that frees some), rounded half up (`gpu_figure`)."""
    figure = gpu_count(n)
    return f"{figure} GPU-equivalent" + ("" if figure == "1" else "s")


def gpu_count(n: float) -> str:
    """The figure of `gpu_equivalents` alone (`9.39`, `1,000`), for a table whose label names the unit."""
    return significant(n, 1) if 0 < n < 0.01 else num(gpu_figure(n), 2 if n < 10 else 0)


def count(n: int, noun: str) -> str:
    """`1 phase`, `3 phases`, `2 times`."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def join(items: list[str], last: str = "and") -> str:
    """`a`, `a and b`, `a, b and c`."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {last} " + items[-1]


def saves(share: float, what: str = "") -> str:
    """What a change does to the run: `saves 1.2%`, `saves nothing`, or `costs 8.1%` when it makes it slower."""
    if share > 0:
        return f"saves {pct(share)}{what}"
    if share == 0:
        return "saves nothing"
    return f"costs {pct(-share)}{what}"
