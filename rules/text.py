"""How figures are written in statements: few digits, the units a reviewer says out loud."""

from __future__ import annotations

import math


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def ms(value: float) -> str:
    """A time given in ms: `81.1 ms`, `2.1 ms`, `39.8 µs`, `1.2 s`."""
    if value >= 10_000:
        return f"{_trim(f'{value / 1000:.1f}')} s"
    if value >= 1 or value == 0:
        return f"{_trim(f'{value:.1f}')} ms"
    if value >= 0.001:
        return f"{_trim(f'{value * 1000:.1f}')} µs"
    return f"{_trim(f'{value * 1e6:.0f}')} ns"


def pct(share: float) -> str:
    """A share as a percentage with the digits that matter: `18.9%`, `90%`, `1.2%`, `0.014%`."""
    value = share * 100
    if value == 0:
        return "0%"
    if abs(value) >= 1:
        return f"{_trim(f'{value:.1f}')}%"
    digits = 1 - math.floor(math.log10(abs(value)))  # two significant figures below 1%
    return f"{_trim(f'{value:.{digits}f}')}%"


def times(factor: float) -> str:
    """A speedup factor: `1.233×`, `1.98×`, `10×`, `∞`."""
    if math.isinf(factor):
        return "∞"
    return f"{_trim(f'{factor:.3f}')}×"


def k_text(k: float) -> str:
    """A proposed speedup of the target: `10×`, or `removed` for k = ∞."""
    return "removed entirely" if math.isinf(k) else f"{_trim(f'{k:.2f}')}× faster"


def num(value: float, digits: int = 1) -> str:
    """A plain number with thousands separators: `1,000`, `21.9`."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return _trim(f"{value:,.{digits}f}")


def usd(value: float) -> str:
    """Money, rounded the way a planning meeting rounds it: `$21.9M`, `$15k`, `$820`."""
    if abs(value) >= 1e6:
        return f"${_trim(f'{value / 1e6:.1f}')}M"
    if abs(value) >= 1e4:
        return f"${value / 1e3:.0f}k"
    return f"${value:,.0f}"


def weeks(value: float) -> str:
    w = _trim(f"{value:.1f}")
    return f"{w} engineer-week" + ("" if w == "1" else "s")
