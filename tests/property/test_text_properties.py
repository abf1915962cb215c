"""How figures are read out: the indefinite article before a number follows the number's first spoken word, and a
figure is rounded as a reviewer rounds it by hand, the same from its full double as from its settled figure."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from tests.strategies import EXTREMES
from worthit.rules.precision import settle
from worthit.rules.text import (
    NonFiniteFigure,
    a,
    break_even_weeks,
    gpu_count,
    gpu_equivalents,
    k_text,
    metric,
    months,
    ms,
    ms_change,
    ms_saved,
    num,
    pct,
    rounded,
    saves,
    share_bounds,
    significant,
    significant_bounds,
    the_share,
    times,
    usd,
    weeks,
)

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def first_word(n: int) -> str:
    """The first word of `n` spelled out in English, by thousands (1,800 is "one thousand eight hundred")."""
    while n >= 1000:
        n //= 1000
    if n >= 100:
        return ONES[n // 100]
    if n >= 20:
        return TENS[n // 10]
    if n >= 10:
        return TEENS[n - 10]
    return ONES[n]


def article(n: int) -> str:
    """By sound, not spelling: "one" starts with a w."""
    word = first_word(n)
    return "an" if word[0] in "aeiou" and word != "one" else "a"


@given(st.integers(min_value=0, max_value=10**15))
def test_the_article_before_a_whole_number_follows_its_first_spoken_word(n: int) -> None:
    assert a(num(n)) == f"{article(n)} {num(n)}"


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=9))
def test_decimals_take_the_article_of_their_whole_part(whole: int, tenth: int) -> None:
    text = f"{whole}.{tenth}%"
    assert a(text).split()[0] == article(whole)


@pytest.mark.parametrize(
    ("spoken", "expected"),
    [
        (pct(0.112), "an 11.2%"),
        (ms(8), "an 8 ms"),
        (ms(1800), "a 1800 ms"),
        (ms(40), "a 40 ms"),
        (num(18_000), "an 18,000"),
        (pct(-0.11), "a -11%"),
        ("under 0.001%", "an under 0.001%"),
        ("$708k", "a $708k"),
    ],
)
def test_articles_read_out(spoken: str, expected: str) -> None:
    assert a(spoken) == expected


@given(st.floats(min_value=1e-12, max_value=1e9, allow_nan=False))
def test_gpu_equivalents_freed_never_read_as_none_and_round_to_their_value(n: float) -> None:
    """A fleet that frees 0.004 GPU-equivalents must not read "frees 0"; the text is the figure to two
    significant digits or better."""
    figure, noun = gpu_equivalents(n).split(" ")
    assert float(figure.replace(",", "")) > 0
    assert float(figure.replace(",", "")) == pytest.approx(n, rel=0.5 if n < 0.01 else 0.01, abs=0.5)
    assert noun == ("GPU-equivalent" if figure == "1" else "GPU-equivalents")


@pytest.mark.parametrize(("k", "text"), [(1e6, "1,000,000×"), (123456.0, "123,456×"), (1e13, "over 10¹²×")])
def test_a_large_speedup_is_written_out_not_in_exponent_notation(k: float, text: str) -> None:
    assert times(k) == text


@pytest.mark.parametrize(("k", "text"), [(1e6, "1,000,000× faster"), (250.0, "250× faster"), (10.0, "10× faster")])
def test_a_large_proposed_speedup_reads_in_digits(k: float, text: str) -> None:
    assert k_text(k) == text


@given(st.floats(min_value=0.01, max_value=1e12, allow_nan=False))
def test_a_share_reads_in_digits_without_an_exponent(share: float) -> None:
    """Contradictory inputs can make a share 30,000% of the step: written out, never `3e+06%`."""
    text = pct(share)
    assert "e" not in text.removeprefix("over ")
    if share < 1e13:
        assert float(text.removesuffix("%").replace(",", "")) == pytest.approx(share * 100, rel=1e-3, abs=0.05)


@given(st.floats(min_value=1e-12, max_value=1.0))
def test_a_share_as_a_subject_never_reads_the_under(share: float) -> None:
    """`The 21% share of gemm`, and for a bound `gemm's share of under 0.001%`: never `The under 0.001% share`."""
    text = the_share(share, "gemm")
    assert "The under" not in text
    assert pct(share) in text


@given(
    st.floats(min_value=0.001, max_value=1e6, allow_nan=False, allow_infinity=False),
    st.floats(min_value=1e-5, max_value=0.5, allow_nan=False, allow_infinity=False),
)
def test_a_time_change_shows_in_its_figures(before: float, fraction: float) -> None:
    """Any saving of at least 0.001% is visible in the two times written: never `3.6 ms → 3.6 ms`."""
    after = before * (1 - fraction)
    first, second = ms_change(before, after)
    assert first != second
    assert ms_change(before, before) == (ms(before), ms(before))


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        (ms(84.25), "84.3 ms"),  # an outcome's step time: format() rounds the exact double half to even, 84.2
        (ms(-84.25), "-84.3 ms"),  # away from zero
        (ms(0.00125), "1.3 µs"),
        (ms(10_050), "10.1 s"),
        (pct(0.00125), "0.13%"),
        (times(2.0625), "2.063×"),
        (times(100.5), "101×"),
        (k_text(1.125), "1.13× faster"),
        (num(2.25), "2.3"),
        (usd(12_500), "$13k"),
        (usd(2.5), "$3"),
        (significant(1.665), "1.67"),  # a break-even k, never rounded down to one that falls short
        (gpu_equivalents(62.5), "63 GPU-equivalents"),
    ],
)
def test_a_half_way_figure_rounds_away_from_zero(printed: str, expected: str) -> None:
    assert printed == expected


BOUNDARIES = (1e-5, 1e-3, 1e-2, 1.0, 100.0, 1e4, 1e6, 1e9, 1e12, 1e13, 1e15)
"""Where a writer changes unit or form (µs to ms, `$10,000` to `$10k`): a double a hair under one can settle onto it
and be written in the other unit (0.9999999999999999 ms reads 1000 µs, its settled 1 ms), a matter of the unit
chosen, not of rounding."""


@given(st.floats(min_value=-1e15, max_value=1e15, exclude_min=True, exclude_max=True))
@example(1.3499999999999999)  # 100 · 0.018 · (1 − 1/4): a statement printed 1.3 ms, the settled 1.35 printed 1.4
@example(84.24999999999999)
@example(2.0625)
def test_a_figure_prints_alike_from_its_double_and_its_settled_value(value: float) -> None:
    """Statements are written from full doubles and every surface's rows from settled figures (rules.precision):
    each function that writes digits prints both alike, so one fact never reads two ways on one screen. (Past 10¹⁵
    a double has more digits than the 15 settled, and is printed as it is.)"""
    fixed = settle(value)
    for decimals in range(5):
        assert rounded(value, decimals) == rounded(fixed, decimals), (decimals, value, fixed)
    assert significant(value) == significant(fixed)
    assume(all(abs(abs(value) / edge - 1) > 1e-12 for edge in BOUNDARIES))
    for write in (ms, pct, times, num, usd):
        assert write(value) == write(fixed), (write.__name__, value, fixed)
    if value > 0:
        assert k_text(value) == k_text(fixed)
        assert gpu_equivalents(value) == gpu_equivalents(fixed)


@given(st.floats(min_value=1e-6, max_value=1e6))
@example(2.2313232421875)  # a diagonal break-even k, printed "2.23" though 2.23 with p 5.4% fails the bar
@example(2.23)
@example(1.0714)
def test_a_break_even_k_is_bracketed_by_two_figures_that_print_as_themselves(value: float) -> None:
    """`significant_bounds` gives the figures a break-even k can be stated as: one at or below it, one at or above,
    each printed by `significant` as itself (so the value a condition tests is the value it prints), one and the
    same only for a value that is already such a figure (up to float noise)."""
    down, up = significant_bounds(value)
    assert down <= value * (1 + 1e-9)
    assert up >= value * (1 - 1e-9)
    for bound in (down, up):
        assert float(significant(bound)) == pytest.approx(bound, rel=1e-12)
    if up == down:
        assert value == pytest.approx(down, rel=1e-9)


# Every function of rules/text.py that writes digits: a NaN or an infinity is an upstream bug, refused loudly.
WRITERS = {
    "pct": pct,
    "ms": ms,
    "ms_change": lambda value: ms_change(value, 1.0),
    "ms_saved": lambda value: ms_saved(value, 1.0),
    "num": num,
    "metric": metric,
    "usd": usd,
    "weeks": weeks,
    "months": months,
    "significant": significant,
    "gpu_equivalents": gpu_equivalents,
    "gpu_count": gpu_count,
    "break_even_weeks": break_even_weeks,
    "the_share": the_share,
    "saves": saves,
    "share_bounds": share_bounds,
    "significant_bounds": significant_bounds,
    "times": times,
    "k_text": k_text,
}
# ∞ is a figure for these two: an unbounded speedup (`∞`) and a target removed entirely.
INFINITE_FIGURES = {("times", math.inf), ("k_text", math.inf)}


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_writer_of_digits_refuses_nan_and_infinity(name: str, value: float) -> None:
    """`pct` and every other function that writes a figure raise NonFiniteFigure on NaN and ±∞ (but ∞ as a speedup)."""
    if (name, value) in INFINITE_FIGURES:
        assert WRITERS[name](value) in ("∞", "removed entirely")
        return
    with pytest.raises(NonFiniteFigure, match="expected a finite figure"):
        WRITERS[name](value)


FULL_DOMAIN = ("pct", "ms", "ms_change", "ms_saved", "num", "metric", "usd", "weeks", "months", "significant")


@given(value=st.sampled_from(EXTREMES) | st.floats(allow_nan=False, allow_infinity=False), negative=st.booleans())
def test_every_finite_double_is_written_in_digits(value: float, negative: bool) -> None:
    """Any finite double, the extremes of a double among them, is written without `nan` or `inf`."""
    value = -value if negative else value
    for name in FULL_DOMAIN:
        text = str(WRITERS[name](value))
        assert "nan" not in text, (name, value, text)
        assert "inf" not in text, (name, value, text)
